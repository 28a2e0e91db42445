"""Soak: a long stream through ``streamlearn serve``, its memory sampled every second,
nothing lost.

- standard input: ``--examples`` (1e8) a9a lines piped into ``serve --algo pdm --eps
  0.05 --checkpoint-dir D`` with every other setting at its default;
- Kafka: ``--kafka-copies`` (300) copies of a9a.train in a Tansu topic, 100 lines a
  message, learned by a ``serve`` in a fresh group with checkpoints, stopped with SIGTERM
  once all are learned.

The daemon's resident memory (``VmRSS``) and its examples learned (``/metrics``) are
sampled every second. What is printed: the examples counted against the input (the
final checkpoint's count and positions), the RSS after warm-up (the first sample once a
tenth of the input is learned), its peak, its last value and the slope of the second
half of the run (MB a minute: flat means near 0). ``--plot FILE`` (PNG, matplotlib from
the ``bench`` extra) draws RSS and examples learned against time for both runs.

Run: .venv/bin/python benchmarks/bench_soak.py [--examples 1e8] [--kafka-copies 300]
[--plot benchmarks/soak.png]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import data_file

REPOSITORY = Path(__file__).resolve().parents[1]
LEARNED = re.compile(rb'^streamlearn_examples_total\{outcome="learned"\} (\S+)$', re.M)
#: seconds a run may take at most, whatever happens
DEADLINE = 15 * 60


@dataclass
class Samples:
    """Seconds since the start, RSS in MB and examples learned, every second."""

    seconds: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    learned: list[float] = field(default_factory=list)


def rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) / 1024 if found else None


def learned(url: str) -> float | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            found = LEARNED.search(answer.read())
    except OSError:
        return None
    return float(found.group(1)) if found else None


def sample(pid: int, url: str, out: Samples, stop: threading.Event) -> None:
    started = time.monotonic()
    while not stop.wait(1.0):
        memory, count = rss_mb(pid), learned(url)
        if memory is None:
            return
        out.seconds.append(time.monotonic() - started)
        out.rss_mb.append(memory)
        out.learned.append(count if count is not None else (out.learned or [0.0])[-1])


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(options: list[str], checkpoints: Path, stdin: Any) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.05",
               "--checkpoint-dir", str(checkpoints), "--http-addr", "off",
               "--metrics-addr", f"127.0.0.1:{port}", *options]  # fmt: skip
    log = open(checkpoints.with_suffix(".log"), "wb")  # noqa: SIM115 - the process holds it
    process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.DEVNULL, stderr=log)
    return process, f"http://127.0.0.1:{port}/metrics"


def final_state(checkpoints: Path) -> dict[str, Any]:
    sys.path.insert(0, str(REPOSITORY))
    from streamlearn.checkpoint import CheckpointStore

    found = CheckpointStore(checkpoints).latest()
    assert found is not None, f"no checkpoint in {checkpoints}"
    return dict(found[1].payload)


def report(name: str, samples: Samples, total: int, state: dict[str, Any]) -> None:
    counted = int(state["job"]["stream_examples"])
    print(f"\n{name}: {total:,} examples in, {counted:,} learned "
          f"({'nothing lost, nothing twice' if counted == total else 'MISMATCH'}); "
          f"{samples.seconds[-1] if samples.seconds else 0:.0f} s")  # fmt: skip
    if not samples.rss_mb:
        return
    warm = next((i for i, n in enumerate(samples.learned) if n >= total / 10), 0)
    half = len(samples.rss_mb) // 2
    tail_t, tail_m = samples.seconds[half:], samples.rss_mb[half:]
    slope = 0.0
    if len(tail_t) > 1 and tail_t[-1] > tail_t[0]:
        mean_t, mean_m = sum(tail_t) / len(tail_t), sum(tail_m) / len(tail_m)
        covariance = sum((t - mean_t) * (m - mean_m) for t, m in zip(tail_t, tail_m, strict=True))
        slope = 60.0 * covariance / sum((t - mean_t) ** 2 for t in tail_t)
    print(f"  RSS after warm-up {samples.rss_mb[warm]:.0f} MB, peak {max(samples.rss_mb):.0f} MB, "
          f"last {samples.rss_mb[-1]:.0f} MB; second half: {slope:+.1f} MB a minute")  # fmt: skip


def stdin_run(examples: int, tmp: Path) -> tuple[Samples, int, dict[str, Any]]:
    train = data_file("adult/a9a.train").read_bytes()
    lines = train.count(b"\n")
    copies = max(1, examples // lines)
    writer = (f"import sys; data = open({str(data_file('adult/a9a.train'))!r}, 'rb').read()\n"
              f"for _ in range({copies}): sys.stdout.buffer.write(data)\n")  # fmt: skip
    feeder = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE)
    checkpoints = tmp / "stdin"
    process, url = serve([], checkpoints, feeder.stdout)
    assert feeder.stdout is not None
    feeder.stdout.close()  # the daemon holds the pipe's reading end
    samples, stop = Samples(), threading.Event()
    sampler = threading.Thread(target=sample, args=(process.pid, url, samples, stop))
    sampler.start()
    try:
        process.wait(timeout=DEADLINE)
    finally:
        stop.set()
        sampler.join()
        feeder.wait(timeout=60)
    return samples, copies * lines, final_state(checkpoints)


def kafka_run(copies: int, tmp: Path) -> tuple[Samples, int, dict[str, Any]]:
    sys.path.insert(0, str(REPOSITORY / "tests"))
    import services
    from bench_serve_kafka import produce

    lines = data_file("adult/a9a.train").read_bytes().splitlines(keepends=True) * copies
    values = [b"".join(lines[i : i + 100]) for i in range(0, len(lines), 100)]
    tansu = services.Tansu()
    try:
        topic = f"soak-{uuid.uuid4().hex[:8]}"
        tansu.create_topic(topic, 1)
        produce(tansu.bootstrap, topic, values)
        checkpoints = tmp / "kafka"
        options = ["--source", "kafka", "--bootstrap-servers", tansu.bootstrap, "--topic", topic,
                   "--group", f"soak-{uuid.uuid4().hex[:8]}"]  # fmt: skip
        process, url = serve(options, checkpoints, subprocess.DEVNULL)
        samples, stop = Samples(), threading.Event()
        sampler = threading.Thread(target=sample, args=(process.pid, url, samples, stop))
        sampler.start()
        deadline = time.monotonic() + DEADLINE
        while (learned(url) or 0) < len(lines) and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3.0)  # a few idle seconds: idle replay
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=300)
        stop.set()
        sampler.join()
        state = final_state(checkpoints)
        assert state["positions"] == {"0": len(values)}, state["positions"]
        return samples, len(lines), state
    finally:
        tansu.stop()


def plot(runs: dict[str, Samples], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(runs), 1, figsize=(9, 3.6 * len(runs)), squeeze=False)
    for axis, (name, samples) in zip(axes[:, 0], runs.items(), strict=True):
        axis.plot(samples.seconds, samples.rss_mb, color="tab:red", label="RSS (MB)")
        axis.set_ylabel("RSS (MB)")
        axis.set_ylim(bottom=0)
        axis.set_title(name)
        twin = axis.twinx()
        twin.plot(samples.seconds, [n / 1e6 for n in samples.learned], color="tab:blue",
                  label="examples learned (millions)")  # fmt: skip
        twin.set_ylabel("examples learned (millions)")
        axis.set_xlabel("seconds")
        lines = axis.get_lines() + twin.get_lines()
        axis.legend(lines, [line.get_label() for line in lines], loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"\nplot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=float, default=1e8, help="standard input's lines")
    parser.add_argument("--kafka-copies", type=int, default=300, help="0: no Kafka run")
    parser.add_argument("--plot", default="", help="PNG file (needs matplotlib)")
    args = parser.parse_args()
    runs: dict[str, Samples] = {}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        samples, total, state = stdin_run(int(args.examples), tmp)
        report("standard input", samples, total, state)
        runs["serve from standard input"] = samples
        if args.kafka_copies:
            samples, total, state = kafka_run(args.kafka_copies, tmp)
            report("Kafka", samples, total, state)
            runs["serve from Kafka"] = samples
        for log in sorted(tmp.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()
            checkpoints = sum(1 for line in lines if " checkpoint /" in line)
            ending = next((line for line in reversed(lines)
                           if "end of input:" in line or "stopped:" in line), "")  # fmt: skip
            print(f"{log.stem}: {checkpoints} checkpoints written; {ending[24:][:170]}")
    if args.plot:
        plot(runs, args.plot)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
