"""The HTTP API of a real ``streamlearn serve`` process learning from standard input: bad
requests of every kind are answered 4xx and counted while the stream is learned whole;
/learn, /predict and /model agree; an exposed address needs a token."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from services import free_port, wait_for

from streamlearn.jobs.model import load_model
from streamlearn.parse import SvmlightParser

STREAMLEARN = [sys.executable, "-m", "streamlearn"]


def lines(n: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=6)
    out = []
    for _ in range(n):
        x = rng.normal(size=6)
        label = b"+1" if x @ direction > 0 else b"-1"
        out.append(label + b" " + b" ".join(b"%d:%.4f" % (i + 1, v) for i, v in enumerate(x)))
    return out


class Served:
    """``serve`` reading a pipe we write, with its API and metrics on free ports."""

    def __init__(self, directory: Path, *options: str, env: dict[str, str] | None = None):
        self.http_port, self.metrics_port = free_port(), free_port()
        self.log = (directory / "serve.log").open("wb")
        self.process = subprocess.Popen(
            [*STREAMLEARN, "serve", "--algo", "pdm", "--eps", "0.1", "--delta", "1",
             "--checkpoint-dir", str(directory / "ckpt"), "--checkpoint-interval", "1h",
             "--http-addr", f"127.0.0.1:{self.http_port}",
             "--metrics-addr", f"127.0.0.1:{self.metrics_port}", *options],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env={**os.environ, **(env or {})},
        )  # fmt: skip
        self.directory = directory

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "text/plain"
    ) -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=10)
        connection.request(method, path, body=body, headers={"Content-Type": content_type})
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, json.loads(data) if data else None

    def up(self) -> bool:
        try:
            return self.request("GET", "/model")[0] == 200
        except OSError:
            assert self.process.poll() is None, self.log_text()
            return False

    def metric(self, name: str) -> dict[tuple[tuple[str, str], ...], float]:
        from prometheus_client.parser import text_string_to_metric_families

        connection = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
        return {
            tuple(sorted(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == name
        }

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def finish(self) -> tuple[int, bytes]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        out = self.process.stdout.read()
        code = self.process.wait(timeout=120)
        self.log.close()
        return code, out

    def log_text(self) -> str:
        return (self.directory / "serve.log").read_text(errors="replace")[-3000:]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Start ``serve`` with options; whatever is still running at the end is killed."""
    started: list[Served] = []

    def start(*options: str) -> Served:
        started.append(Served(tmp_path, *options))
        return started[-1]

    yield start
    for serve in started:
        if serve.process.poll() is None:
            serve.process.kill()
            serve.process.wait(30)


@pytest.fixture
def served(start: Callable[..., Served]) -> Served:
    return start("--http-learn")


def test_bad_requests_are_answered_4xx_counted_and_disturb_no_learning(served: Served) -> None:
    stream = lines(3000, seed=1)
    served.write(b"\n".join(stream[:1500]) + b"\n")
    wait_for(served.up, timeout=120, what="the HTTP API")
    slow = socket.create_connection(("127.0.0.1", served.http_port))
    slow.sendall(b"POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
                 b"Content-Length: 50\r\n\r\n1:1")  # fmt: skip
    bad = [
        ("POST", "/predict", b"1:1", "application/x-www-form-urlencoded", 415),
        ("POST", "/predict", b'{"indices": [0], "values": [NaN]}', "application/json", 400),
        ("POST", "/predict", b'{"indices": [0], "values": [', "application/json", 400),
        ("POST", "/predict", b"1:nan\n", "text/plain", 400),
        ("POST", "/predict", b"+1 1:1\n" * 700_000, "text/plain", 413),
        ("GET", "/nowhere", None, "text/plain", 404),
        ("GET", "/predict", None, "text/plain", 405),
        ("POST", "/learn", b"1:1\n", "text/plain", 400),  # no label
        ("POST", "/learn", b"+1 1:inf\n", "text/plain", 400),
    ]
    for method, path, body, content_type, status in bad:
        got, answer = served.request(method, path, body, content_type)
        assert got == status and answer["error"], (path, body, answer)
    served.write(b"\n".join(stream[1500:]) + b"\n")
    slow.settimeout(60)
    assert slow.recv(4096).startswith(b"HTTP/1.1 408")
    slow.close()
    counted = served.metric("streamlearn_http_requests_total")
    for code, endpoint, n in [("400", "/predict", 3), ("400", "/learn", 2), ("404", "other", 1),
                              ("405", "/predict", 1), ("408", "/predict", 1),
                              ("413", "/predict", 1), ("415", "/predict", 1)]:  # fmt: skip
        assert counted[(("code", code), ("endpoint", endpoint))] == n
    code, _ = served.finish()
    assert code == 0, served.log_text()
    _, job = load_model(str(max((served.directory / "ckpt").iterdir())))
    assert job["stream_examples"] == 3000  # every line learned, none twice, nothing else
    assert "Traceback" not in served.log_text()


def test_learn_predict_and_model_agree(start: Callable[..., Served]) -> None:
    """Without replay the model stops moving with its last example: the answer of
    /predict, the answer on the stream and the final model's are then one number."""
    served = start("--http-learn", "--idle-replay", "off", "--replay-every", "0")
    served.write(b"\n".join(lines(2000, seed=2)) + b"\n")
    wait_for(served.up, timeout=120, what="the HTTP API")
    wait_for(lambda: served.request("GET", "/model")[1]["examples"] == 2000, timeout=60,
             what="the stream learned")  # fmt: skip
    posted = b"\n".join(lines(50, seed=3)) + b"\n"
    status, learned = served.request("POST", "/learn", posted)
    assert status == 200 and learned["learned"] == 50
    question = b"1:0.3 2:-1.2 4:2 6:0.1"
    status, predicted = served.request("POST", "/predict", question)
    assert status == 200 and predicted["version"] >= learned["version"]
    status, model = served.request("GET", "/model")
    assert model["algorithm"] == "pdm" and model["kind"] == "binary"
    assert model["params"]["eps"] == 0.1
    assert model["version"] >= learned["version"]
    wait_for(lambda: served.request("GET", "/model")[1]["examples"] == 2050, timeout=30,
             what="the posted examples counted")  # fmt: skip
    certificate = served.request("GET", "/model")[1]["certificate"]
    assert {"margin_achieved", "margin_upper_bound", "certified_gap"} <= set(certificate)
    served.write(question + b"\n")  # the same question on the stream, after everything
    code, out = served.finish()
    assert code == 0, served.log_text()
    model_file, job = load_model(str(max((served.directory / "ckpt").iterdir())))
    assert job["stream_examples"] == 2050
    rows = SvmlightParser().feed(question + b"\n")
    final = model_file.decision_function((rows.indptr, rows.indices, rows.values))[0]
    assert float(out.split()[0]) == pytest.approx(final, rel=1e-12)
    assert predicted["predictions"][0]["score"] == pytest.approx(final, rel=1e-12)


def test_an_exposed_address_needs_a_token(start: Callable[..., Served]) -> None:
    serve = start("--http-addr", "0.0.0.0:0")
    code, _ = serve.finish()
    assert code != 0
    assert "STREAMLEARN_HTTP_TOKEN" in serve.log_text()
