"""What a real ``streamlearn serve`` on standard input reports: each rejected line by its
number in the input (up to the log's rate, then how many were held back), and the same
figures on ``GET /model`` and ``/metrics`` (docs/http.md says how they relate)."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from services import free_port, wait_for

from streamlearn.sources.rejected import LOG_BURST

STREAMLEARN = [sys.executable, "-m", "streamlearn"]
#: 1-based numbers of the bad lines: past the first message of 1000 lines too
BAD = [2, 5, 7, 11, 13, 17, 19, 998, 1000, 1001, 1002, 1500]
LINES = 1600


def stream() -> bytes:
    rng = np.random.default_rng(5)
    direction = rng.normal(size=8)
    out = []
    for number in range(1, LINES + 1):
        if number in BAD:
            out.append(b"+1 3:x")  # a bad value
            continue
        x = rng.normal(size=8)
        label = b"+1" if x @ direction > 0 else b"-1"
        out.append(label + b" " + b" ".join(b"%d:%.4f" % (i + 1, v) for i, v in enumerate(x)))
    return b"\n".join(out) + b"\n"


def get(port: int, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path)
    text = connection.getresponse().read().decode()
    connection.close()
    return text


def metrics(port: int) -> dict[str, float]:
    """The samples of /metrics, by name with their labels as written."""
    found = {}
    for line in get(port, "/metrics").splitlines():
        if line.startswith("streamlearn_"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


def test_rejected_lines_are_numbered_in_the_input_and_the_figures_agree(tmp_path: Path) -> None:
    http_port, metrics_port = free_port(), free_port()
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        [*STREAMLEARN, "serve", "--algo", "pdm", "--eps", "0.1", "--idle-replay", "off",
         "--http-addr", f"127.0.0.1:{http_port}", "--metrics-addr", f"127.0.0.1:{metrics_port}"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    try:
        assert serve.stdin is not None
        serve.stdin.write(stream())
        serve.stdin.flush()  # and kept open: the daemon keeps answering
        good = LINES - len(BAD)

        def model() -> dict[str, Any] | None:
            try:
                described: dict[str, Any] = json.loads(get(http_port, "/model"))
            except (OSError, ValueError):
                assert serve.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
                return None
            return described if described["examples"] == good else None

        described = wait_for(model, timeout=120, what="/model to hold every line")
        figures = metrics(metrics_port)
        # the same snapshot: nothing moves once the input is learned (no idle replay)
        assert json.loads(get(http_port, "/model"))["updates"] == described["updates"]
        assert figures['streamlearn_examples_total{outcome="learned"}'] == good
        assert figures['streamlearn_examples_total{outcome="rejected"}'] == len(BAD)
        assert figures["streamlearn_updates_total"] == described["update_events"] > 0
        # t counts a multiple update of lambda as lambda: at least one per event
        assert described["updates"] >= described["update_events"]
        presented = described["examples"] - described["held_examples"]
        assert figures["streamlearn_certificate_examples"] == presented
        assert figures["streamlearn_buffer_examples"] == described["certificate"]["window_examples"]
        assert figures["streamlearn_replay_passes_total"] == described["passes"]
        serve.stdin.close()
        assert serve.wait(timeout=120) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(30)
        log.close()
    said = (tmp_path / "serve.log").read_text()
    numbers = [int(n) for n in re.findall(r"rejected line (\d+) \(", said)]
    assert numbers == BAD[:LOG_BURST]  # each line, by its number in the input, in order
    assert "message " not in said  # no Kafka terms on standard input
    held = len(BAD) - LOG_BURST
    assert f"{held} more rejected lines not logged" in said
