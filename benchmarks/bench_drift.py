"""The drift test of ``streamlearn serve`` (Page-Hinkley over the progressive error,
:mod:`streamlearn.drift`): its false alarms on a stream whose concept never changes, and
how many examples after a change it alarms.

Two streams, each piped into ``streamlearn serve --algo pdm --eps 0.05 --delta 1`` (the
daemon of standard input, as users run it; its alarms are read from its log):

- stationary: ``--copies`` copies of a9a.train (30 by default: 976,830 examples), the
  same concept throughout; every alarm is a false one (reported per million examples);
- drift: two copies of a9a.train, then three with every label flipped (as
  ``bench_endless.py``): the concept changes at example 65,122; the delay is the
  examples learned from there to the first alarm after it (alarms before it are false).

The anchor, in the same run: river's ``drift.PageHinkley`` with its defaults fed the
same daemon's per-batch error rates would need each example's error, which the daemon
does not expose; instead the detector's own test (tests/drift) checks it alarm for alarm
against river's, one example at a time. Each stream is run with the daemon's default
test (tolerance 0.01, threshold 50) and with river's defaults (``--drift-delta 0.005``),
side by side, and the stationary stream once more without the test (its cost).

Run: .venv/bin/python benchmarks/bench_drift.py [--copies 30]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import command_env, data_lines, flipped

ADULT_ROWS = 32_561
ALARM = re.compile(rb"drift at example (\d+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alarms(stream: Path, delta: str, threshold: str = "50") -> tuple[list[int], float]:
    """The examples at which ``serve`` reading ``stream`` alarmed, and its seconds."""
    command = [sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.05",
               "--delta", "1", "--metrics-addr", f"127.0.0.1:{free_port()}",
               "--http-addr", "off", "--drift-delta", delta,
               "--drift-threshold", threshold]  # fmt: skip
    started = time.perf_counter()
    with stream.open("rb") as source:
        done = subprocess.run(command, stdin=source, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, env=command_env(), check=False)  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"serve failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    return [int(m) for m in ALARM.findall(done.stderr)], seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=30)
    args = parser.parse_args()
    lines = data_lines("adult/a9a.train")
    change = 2 * len(lines)
    with tempfile.TemporaryDirectory() as tmp:
        stationary, drift = Path(tmp) / "stationary.svm", Path(tmp) / "drift.svm"
        stationary.write_bytes(b"".join(lines * args.copies))
        drift.write_bytes(b"".join(lines * 2 + flipped(lines) * 3))
        total = len(lines) * args.copies
        print(f"{'test':<34}{'false alarms':>14}{'per million':>13}{'delay (examples)':>18}"
              f"{'seconds':>9}")  # fmt: skip
        for name, delta in (("streamlearn (delta 0.01, h 50)", "0.01"),
                            ("river's defaults (delta 0.005)", "0.005")):  # fmt: skip
            found, seconds = alarms(stationary, delta)
            flipped_at, drift_seconds = alarms(drift, delta)
            before = [a for a in flipped_at if a <= change]
            after = [a for a in flipped_at if a > change]
            delay = f"{after[0] - change:,}" if after else "none"
            print(
                f"{name:<34}{len(found):>14}{len(found) * 1e6 / total:>13.2f}{'':>18}"
                f"{seconds:>9.1f}  (stationary: {args.copies} copies, {total:,} examples)"
            )
            print(f"{'':<34}{len(before):>14}{'':>13}{delay:>18}{drift_seconds:>9.1f}"
                  f"  (drift: labels flipped at example {change:,})")  # fmt: skip
        _, seconds_off = alarms(stationary, "0.01", threshold="0")
        print(f"{'no test (--drift-threshold 0)':<34}{'':>14}{'':>13}{'':>18}{seconds_off:>9.1f}"
              "  (stationary: the cost of the test is the difference)")  # fmt: skip
    print(f"cpu count {os.cpu_count()}")


if __name__ == "__main__":
    main()
