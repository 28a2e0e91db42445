"""The daemon's HTTP API under load while it learns from Kafka, beside river's Perceptron
served by Flask the way chantilly serves a model, in the same run.

What runs:

- a Tansu broker (the one of tests/services.py) with a topic of ``--copies`` copies of
  a9a.train, 100 lines a message;
- ``streamlearn serve --algo pdm --eps 0.05`` (default replay) learning that topic from
  its beginning, in a fresh consumer group for each measurement, with its HTTP API;
- a Flask application holding a river ``linear_model.Perceptron`` trained on a9a.train,
  answering ``POST /api/predict`` (``{"features": {...}}``, or a list of such) with
  ``predict_one``, on Werkzeug's threaded server, as ``chantilly run`` does (the model
  kept in memory rather than in chantilly's shelve, which only makes Flask faster),
  measured twice: alone on the machine, and beside a ``serve`` learning the same
  backlog (the conditions streamlearn's API is measured in);
- ``wrk`` (Debian's package) as the load client: ``--connections`` connections for
  ``--seconds`` seconds, with one a9a.test example a request and with 100, reporting
  requests/s and the p50 and p99 latency.

The learning rate of the daemon is the growth of ``streamlearn_examples_total{outcome=
"learned"}`` over the same ``--seconds`` window, with and without the HTTP load, each in
its own run of the daemon on the same backlog (alternated, ``--repeats`` times; medians).
Targets: streamlearn's requests/s at least 5x Flask's (both request sizes; the ratio is
printed against Flask beside a learning daemon, the same conditions, and against Flask
alone), and the learning rate under HTTP load at least half the rate without.

Run: .venv/bin/python benchmarks/bench_http.py [--copies 300] [--seconds 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import data_file

REPOSITORY = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
LEARNED = re.compile(rb'^streamlearn_examples_total\{outcome="learned"\} (\S+)$', re.M)


@dataclass(frozen=True)
class Load:
    """What wrk measured."""

    requests_per_second: float
    p50_ms: float
    p99_ms: float
    non_2xx: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, timeout: float = 120.0, method: str = "GET") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            request = urllib.request.Request(url, method=method, data=None)
            with urllib.request.urlopen(request, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def wrk(url: str, body: bytes, content_type: str, args: argparse.Namespace) -> Load:
    """``wrk`` POSTing ``body`` to ``url``."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(
            textwrap.dedent(f"""\
                wrk.method = "POST"
                wrk.body = {json.dumps(body.decode())}
                wrk.headers["Content-Type"] = "{content_type}"
            """)
        )
    try:
        done = subprocess.run(
            ["wrk", "-t1", f"-c{args.connections}", f"-d{args.seconds}s", "--latency",
             "-s", script.name, url],
            capture_output=True, text=True, timeout=args.seconds + 60, check=True,
        )  # fmt: skip
    finally:
        os.unlink(script.name)
    out = done.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return Load(rate, _latency(out, "50%"), _latency(out, "99%"),
                int(non_2xx.group(1)) if non_2xx else 0)  # fmt: skip


def _latency(out: str, percentile: str) -> float:
    found = re.search(rf"^\s+{re.escape(percentile)}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    assert found is not None, out
    value, unit = float(found.group(1)), found.group(2)
    return value * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def learned(metrics_url: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=5) as answer:
        found = LEARNED.search(answer.read())
    return float(found.group(1)) if found else 0.0


@contextmanager
def daemon(tansu: Any, topic: str, tmp: Path) -> Iterator[tuple[str, str]]:
    """A ``serve`` learning ``topic`` from its beginning; (API URL, metrics URL)."""
    http_port, metrics_port = free_port(), free_port()
    command = [
        PYTHON, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.05",
        "--source", "kafka", "--bootstrap-servers", tansu.bootstrap, "--topic", topic,
        "--group", f"http-{uuid.uuid4().hex[:8]}",
        "--consumer-option", "session.timeout.ms=6000",
        "--consumer-option", "heartbeat.interval.ms=1000",
        "--http-addr", f"127.0.0.1:{http_port}", "--metrics-addr", f"127.0.0.1:{metrics_port}",
    ]  # fmt: skip
    log = (tmp / "serve.log").open("ab")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
    try:
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        wait_for(metrics)
        deadline = time.monotonic() + 120
        while learned(metrics) == 0.0:  # the group join: learning starts a few seconds in
            if time.monotonic() > deadline:
                raise TimeoutError("the daemon learned nothing within 120 s")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{http_port}", metrics
    finally:
        process.terminate()
        process.wait(timeout=120)
        log.close()


def learning_rate(metrics: str, seconds: float) -> tuple[float, float]:
    """Examples learned per second over ``seconds``, and the total learned at the end."""
    start, before = time.perf_counter(), learned(metrics)
    time.sleep(seconds)
    after = learned(metrics)
    return (after - before) / (time.perf_counter() - start), after


@contextmanager
def flask_app(tmp: Path) -> Iterator[str]:
    """river's Perceptron, trained on a9a.train, behind Flask's threaded server."""
    port = free_port()
    code = textwrap.dedent(f"""\
        import logging, flask
        from river import linear_model
        from sklearn.datasets import load_svmlight_file
        X, y = load_svmlight_file({str(data_file("adult/a9a.train"))!r}, n_features=123)
        model = linear_model.Perceptron()
        for row, label in zip(X, y):
            model.learn_one(dict(zip(row.indices.tolist(), row.data.tolist())), label > 0)
        app = flask.Flask("chantilly-like")

        @app.post("/api/predict")
        def predict():
            payload = flask.request.json
            many = isinstance(payload, list)
            examples = payload if many else [payload]
            answers = [{{"prediction": model.predict_one(
                {{int(k): v for k, v in e["features"].items()}})}} for e in examples]
            return flask.jsonify(answers if many else answers[0])

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        app.run(host="127.0.0.1", port={port}, threaded=True)
    """)
    log = (tmp / "flask.log").open("ab")
    process = subprocess.Popen([PYTHON, "-c", code], stdout=log, stderr=log)
    try:
        wait_for(f"http://127.0.0.1:{port}/api/predict")
        yield f"http://127.0.0.1:{port}/api/predict"
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()


def bodies() -> dict[str, dict[str, bytes]]:
    """Request bodies of 1 and of 100 a9a.test examples: svmlight for streamlearn, JSON
    feature maps for Flask."""
    test_lines = data_file("adult/a9a.test").read_bytes().splitlines()
    out: dict[str, dict[str, bytes]] = {}
    for size in (1, 100):
        lines = [line.split(b" ", 1)[1] for line in test_lines[:size]]
        features = [
            {
                "features": {
                    token.split(b":")[0].decode(): float(token.split(b":")[1])
                    for token in line.split()
                }
            }
            for line in lines
        ]
        flask_body = json.dumps(features[0] if size == 1 else features).encode()
        out[str(size)] = {"streamlearn": b"\n".join(lines) + b"\n", "flask": flask_body}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=300, help="copies of a9a.train")
    parser.add_argument("--seconds", type=int, default=3, help="each load, and each rate")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: apt-get install wrk (make bench installs it)")
    sys.path.insert(0, str(REPOSITORY / "tests"))
    import services
    from bench_serve_kafka import produce

    train = data_file("adult/a9a.train").read_bytes().splitlines(keepends=True)
    lines = train * args.copies
    values = [b"".join(lines[i : i + 100]) for i in range(0, len(lines), 100)]
    requests = bodies()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        tansu = services.Tansu()
        try:
            topic = f"http-{uuid.uuid4().hex[:8]}"
            tansu.create_topic(topic, 1)
            seconds = produce(tansu.bootstrap, topic, values)
            print(f"topic: {len(lines):,} lines in {len(values):,} messages ({seconds:.0f} s)")
            flask: dict[str, dict[str, list[Load]]] = {"alone": {}, "beside": {}}
            with flask_app(tmp) as url:
                for size, b in requests.items():
                    flask["alone"][size], flask["beside"][size] = [], []
                    for _ in range(args.repeats):
                        flask["alone"][size].append(wrk(url, b["flask"], "application/json", args))
                        with daemon(tansu, topic, tmp):  # learning, as in streamlearn's runs
                            load = wrk(url, b["flask"], "application/json", args)
                            flask["beside"][size].append(load)
            ours: dict[str, list[Load]] = {size: [] for size in requests}
            rates: dict[str, list[float]] = {"no load": [], **{size: [] for size in requests}}
            for _ in range(args.repeats):
                for case in ("no load", *requests):
                    with daemon(tansu, topic, tmp) as (api, metrics):
                        if case == "no load":
                            rate, total = learning_rate(metrics, args.seconds)
                        else:
                            body = requests[case]["streamlearn"]
                            started, before = time.perf_counter(), learned(metrics)
                            ours[case].append(wrk(f"{api}/predict", body, "text/plain", args))
                            total = learned(metrics)
                            rate = (total - before) / (time.perf_counter() - started)
                        if total >= len(lines):
                            print(f"  warning: the backlog ran out ({case}); use more --copies")
                        rates[case].append(rate)
        finally:
            tansu.stop()
    report(ours, flask, rates, args)


def report(
    ours: dict[str, list[Load]],
    flask: dict[str, dict[str, list[Load]]],
    rates: dict[str, list[float]],
    args: argparse.Namespace,
) -> None:
    print(f"\nwrk, {args.connections} connections, {args.seconds:g} s a run, medians of "
          f"{args.repeats}:")  # fmt: skip
    print(f"{'examples a request':>20} {'server':>34} {'requests/s':>11} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'non-2xx':>8}")  # fmt: skip
    for size in ours:
        servers = (("streamlearn serve (learning)", ours[size]),
                   ("Flask, beside a learning serve", flask["beside"][size]),
                   ("Flask, alone", flask["alone"][size]))  # fmt: skip
        for name, loads in servers:
            print(f"{size:>20} {name:>34} "
                  f"{statistics.median(x.requests_per_second for x in loads):>11,.0f} "
                  f"{statistics.median(x.p50_ms for x in loads):>8.2f} "
                  f"{statistics.median(x.p99_ms for x in loads):>8.2f} "
                  f"{max(x.non_2xx for x in loads):>8}")  # fmt: skip
        rate = statistics.median(x.requests_per_second for x in ours[size])
        for name, loads in servers[1:]:
            ratio = rate / statistics.median(x.requests_per_second for x in loads)
            verdict = "met" if ratio >= 5.0 else "MISSED"
            print(f"{'':>20} requests/s against {name}: {ratio:.1f}x (target >= 5x: {verdict})")
    quiet = statistics.median(rates["no load"])
    print(f"\nlearning from Kafka, examples/s (medians): no HTTP load {quiet:,.0f}")
    for size in ours:
        loaded = statistics.median(rates[size])
        verdict = "met" if loaded >= 0.5 * quiet else "MISSED"
        print(f"  under {size}-example requests: {loaded:,.0f} ({loaded / quiet:.2f} of it; "
              f"target >= 0.5: {verdict})")  # fmt: skip


if __name__ == "__main__":
    main()
