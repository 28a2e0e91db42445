"""A restart on piped standard input: seconds until ``streamlearn serve`` learns again
after skipping what its checkpoint holds, with this tree's code and, in the same run,
with another tree's (``--before``, e.g. a git worktree of the commit before a change).

- input: ``--lines`` (1e7) a9a lines (``a9a.train`` repeated), written once to a file
  and piped through ``cat`` (a pipe, as a producer would feed the daemon); with
  ``--classes K``, each line's label is one of K classes drawn at random (for a bank:
  ``-- --one-vs-rest``, whose window then never converges);
- the checkpoint: ``serve --checkpoint-dir D --idle-replay off`` on the first ``--at``
  (7.8e6) lines, which ends with a checkpoint at that line whose window has not been
  replayed to convergence, as a checkpoint taken while the stream flows (made once, with
  this tree, and copied for every restart);
- the restart: ``serve --checkpoint-dir <a copy>`` with every other setting at its
  default, the whole input piped in (after one short run of each tree, so that no
  measured start compiles the kernels). ``/metrics`` is asked every 20 ms from the start
  of the process (a request waits at most 2 s).

Printed per tree: the seconds from the start of the process until ``/metrics`` first
answered and until the first example after the skip was learned (``learned`` examples
counted; the daemon is then stopped with SIGTERM); the bytes skipped over the seconds
between the two; the longest ``/metrics`` answer in between. ``--rate`` paces the
producer (MB/s), as a decompressor or a network reader slower than the daemon would.

Run: .venv/bin/python benchmarks/bench_stdin_restart.py [--lines 1e7] [--at 7.8e6]
[--before /tmp/before] [--repeats 1] [--classes K] [-- serve options...]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
from _common import data_lines

REPOSITORY = Path(__file__).resolve().parents[1]
LEARNED = re.compile(rb'^streamlearn_examples_total\{outcome="learned"\} (\S+)$', re.M)
#: seconds a run may take at most
DEADLINE = 20 * 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _input(path: Path, lines: int, classes: int) -> None:
    """``lines`` a9a lines in ``path``; with ``classes``, each labelled with one of them
    drawn at random (seed 0) instead of its own label."""
    train = data_lines("adult/a9a.train")
    if classes:
        features = [line.split(b" ", 1)[1] for line in train]
        drawn = np.random.default_rng(0).integers(0, classes, size=lines)
        with path.open("wb") as out:
            for start in range(0, lines, len(train)):
                labels = drawn[start : start + len(train)].tolist()
                rows = features[: len(labels)]
                out.write(b"".join(b"%d %s" % (c, f) for c, f in zip(labels, rows, strict=True)))
        return
    block = b"".join(train)
    with path.open("wb") as out:
        for _ in range(lines // len(train)):
            out.write(block)
        out.write(b"".join(train[: lines % len(train)]))


#: options given to every ``serve`` (the algorithm's, set by the command line)
OPTIONS: list[str] = []


def _serve(tree: Path, checkpoints: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "streamlearn", "serve", "--checkpoint-dir", str(checkpoints),
            "--metrics-addr", f"127.0.0.1:{port}", "--http-addr", "127.0.0.1:0",
            *OPTIONS]  # fmt: skip


def _environment(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def _checkpoint(path: Path, at: int, directory: Path) -> None:
    """A checkpoint at line ``at`` of ``path``, as one taken while the stream flows."""
    feed = subprocess.Popen(["head", "-n", str(at), str(path)], stdout=subprocess.PIPE)
    command = [*_serve(REPOSITORY, directory, 0), "--idle-replay", "off"]
    subprocess.run(command, stdin=feed.stdout, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=_environment(REPOSITORY), cwd=REPOSITORY,
                   check=True, timeout=DEADLINE)  # fmt: skip
    assert feed.stdout is not None
    feed.stdout.close()
    feed.wait()


def _warm_up(tree: Path) -> None:
    """One short run, so that no measured start compiles the kernels."""
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as scratch:
        lines = b"".join(data_lines("adult/a9a.train")[:100])
        subprocess.run(_serve(tree, Path(scratch), 0), input=lines, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=_environment(tree), cwd=tree, check=True,
                       timeout=DEADLINE)  # fmt: skip


def _scrape(port: int) -> tuple[float | None, float]:
    """Examples learned as ``/metrics`` says (None: no answer) and the seconds it took."""
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            body = answer.read()
    except OSError:
        return None, time.perf_counter() - began
    found = LEARNED.search(body)
    return (float(found.group(1)) if found else 0.0), time.perf_counter() - began


def _paced(path: Path, pipe: Any, rate: float) -> None:
    """Write ``path`` into ``pipe`` at ``rate`` bytes a second, then close it (a producer
    slower than the daemon: a decompressor, a network reader)."""
    last = time.perf_counter()
    try:
        with path.open("rb") as lines:
            while chunk := lines.read(1 << 16):
                pipe.write(chunk)
                # no catching up after a wait for the reader: never faster than ``rate``
                wait = len(chunk) / rate - (time.perf_counter() - last)
                if wait > 0:
                    time.sleep(wait)
                last = time.perf_counter()
        pipe.close()
    except (BrokenPipeError, ValueError):  # the daemon was stopped
        pass


def _restart(tree: Path, path: Path, checkpoint: Path, rate: float) -> dict[str, Any]:
    """Restart from a copy of ``checkpoint`` with all of ``path`` piped in (at ``rate``
    bytes a second; 0: by ``cat``, as fast as the pipe takes it); stopped (SIGTERM) once
    it learns."""
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as scratch:
        directory = Path(scratch) / "checkpoints"
        shutil.copytree(checkpoint, directory)
        port = _free_port()
        feed = None if rate else subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
        began = time.perf_counter()
        log = Path(scratch) / "serve.log"
        with log.open("wb") as errors:
            daemon = subprocess.Popen(
                _serve(tree, directory, port), stdout=subprocess.DEVNULL, stderr=errors,
                stdin=feed.stdout if feed is not None else subprocess.PIPE,
                env=_environment(tree), cwd=tree,
            )  # fmt: skip
        if feed is not None:
            assert feed.stdout is not None
            feed.stdout.close()  # the daemon holds the pipe now
            writer = None
        else:
            writer = threading.Thread(target=_paced, args=(path, daemon.stdin, rate))
            writer.start()
        answered = resumed = None
        slowest = 0.0
        while daemon.poll() is None and time.perf_counter() - began < DEADLINE:
            count, seconds = _scrape(port)
            now = time.perf_counter() - began
            if count is not None and answered is None:
                answered = now
            if answered is not None and resumed is None:
                slowest = max(slowest, seconds)
            if count and resumed is None:
                resumed = now
                daemon.send_signal(signal.SIGTERM)
            time.sleep(0.02)
        if daemon.poll() is None:
            daemon.kill()
        code = daemon.wait()
        if feed is not None:
            feed.kill()
            feed.wait()
        if writer is not None:
            writer.join()
        if code != 0:
            sys.exit(f"serve in {tree} failed ({code}):\n{log.read_text(errors='replace')[-3000:]}")
    return {"answered": answered, "resumed": resumed, "slowest": slowest}


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:6.2f} s"


def _skipped_bytes(path: Path, lines: int) -> int:
    """The bytes of the first ``lines`` lines of ``path``."""
    size = 0
    with path.open("rb") as text:
        for _ in range(lines):
            size += len(text.readline())
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=float, default=1e7)
    parser.add_argument("--at", type=float, default=7.8e6)
    parser.add_argument("--rate", type=float, default=0.0,
                        help="MB/s the producer writes at (0: cat, as fast as it can)")  # fmt: skip
    parser.add_argument("--before", type=Path, help="another tree, e.g. the commit before")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--classes", type=int, default=0,
                        help="random classes for the labels (with -- --one-vs-rest)")  # fmt: skip
    parser.add_argument("options", nargs="*", help="options of every serve, after --")
    args = parser.parse_args()
    OPTIONS.extend(args.options)
    lines, at = int(args.lines), int(args.at)
    sides = {"after": REPOSITORY}
    if args.before is not None:
        sides = {"before": args.before.resolve(), **sides}
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as scratch:
        path, checkpoint = Path(scratch) / "input.svm", Path(scratch) / "checkpoint"
        _input(path, lines, args.classes)
        began = time.perf_counter()
        _checkpoint(path, at, checkpoint)
        skipped = _skipped_bytes(path, at)
        producer = f"at {args.rate:g} MB/s" if args.rate else "by cat"
        print(f"{lines} a9a lines ({path.stat().st_size / 1e6:.0f} MB) piped {producer}, serve "
              f"{' '.join(OPTIONS) or '(defaults)'}; checkpoint at line {at} ({skipped / 1e6:.0f} "
              f"MB to skip) made in {time.perf_counter() - began:.1f} s")  # fmt: skip
        print(
            f"{'tree':<8} {'/metrics':>9} {'learns':>9} {'skip rate':>12} {'slowest /metrics':>17}"
        )
        for tree in sides.values():
            _warm_up(tree)
        for _ in range(args.repeats):
            for name, tree in sides.items():
                result = _restart(tree, path, checkpoint, args.rate * 1e6)
                answered, resumed = result["answered"], result["resumed"]
                rate = (
                    ""
                    if None in (answered, resumed)
                    else f"{skipped / 1e6 / (resumed - answered):7.1f} MB/s"
                )
                print(f"{name:<8} {_seconds(answered):>9} {_seconds(resumed):>9} {rate:>12} "
                      f"{result['slowest']:15.3f} s")  # fmt: skip


if __name__ == "__main__":
    main()
