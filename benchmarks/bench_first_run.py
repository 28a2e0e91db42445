"""What a user's first runs cost after a fresh install: no warm-up, an empty numba cache.

A clone of the repository (its last commit) is installed with ``pip install`` into a
new virtual environment, as a user would (pip's wheel cache as it is on this machine);
then, with ``NUMBA_CACHE_DIR`` pointing at an empty directory:

- ``learn`` of 100 lines (the first of a9a), first run and a second one, against
  ``python -c "import numpy"`` in the same environment;
- a fresh ``serve`` (standard input held open, the HTTP API on): seconds from its start
  until ``/readyz`` answers 200, then the first ``POST /predict`` and a second one.

The install compiles the kernels ahead of time (setup.py), so the first runs should
cost what later ones do. ``--jit`` repeats the runs with ``STREAMLEARN_JIT=1`` (numba's
JIT, what an install without a C compiler gets), first with an empty cache, then a
filled one. Targets (issue 37): learn within 1 s, ready within 3 s, the first predict
within 50 ms of ready.

Run: .venv/bin/python benchmarks/bench_first_run.py [--source DIR] [--venv DIR] [--jit]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import median

REPOSITORY = Path(__file__).resolve().parents[1]
A9A = Path("/work/shared/data/adult/a9a.train")
COMPILING = "compiling streamlearn's kernels"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def install(source: Path | None, work: Path, venv: Path | None) -> tuple[Path, float]:
    """A virtual environment with streamlearn installed, and the install's wall seconds
    (0 when ``venv`` was given, installed already)."""
    if venv is not None:
        return venv, 0.0
    if source is None:
        source = work / "clone"
        subprocess.run(["git", "clone", "-q", str(REPOSITORY), str(source)], check=True)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    started = time.perf_counter()
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(source)], check=True)
    return venv, time.perf_counter() - started


def hundred_lines(work: Path) -> Path:
    path = work / "first100.svm"
    if A9A.exists():
        with A9A.open() as lines:
            path.write_text("".join(next(lines) for _ in range(100)))
    else:  # an a9a-like stream: 14 binary features of 123
        rows = (f"{1 if i % 3 else -1} " + " ".join(f"{1 + (i * 7 + k * 11) % 123}:1"
                for k in sorted(range(14))) + "\n" for i in range(100))  # fmt: skip
        path.write_text("".join(rows))
    return path


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stderr


def serve(venv: Path, data: Path, env: dict[str, str]) -> tuple[float, float, float, str]:
    """Seconds until ready, the first predict's and the second's; what the daemon logged."""
    metrics, http = free_port(), free_port()
    command = [str(venv / "bin" / "streamlearn"), "serve", "--algo", "pdm", "--eps", "0.05",
               "--metrics-addr", f"127.0.0.1:{metrics}",
               "--http-addr", f"127.0.0.1:{http}"]  # fmt: skip
    started = time.perf_counter()
    daemon = subprocess.Popen(
        command, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert daemon.stdin is not None
    daemon.stdin.write(data.read_text())
    daemon.stdin.flush()
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/readyz", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.perf_counter() - started > 300 or daemon.poll() is not None:
            raise RuntimeError("the daemon did not become ready")
        time.sleep(0.005)
    ready = time.perf_counter() - started
    latencies = []
    for _ in range(2):
        request = urllib.request.Request(
            f"http://127.0.0.1:{http}/predict", data=b"1:1 7:1 40:1\n",
            headers={"Content-Type": "text/plain"}, method="POST",
        )  # fmt: skip
        asked = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as r:
            r.read()
        latencies.append(time.perf_counter() - asked)
    daemon.terminate()
    log = daemon.communicate(timeout=60)[1]
    return ready, latencies[0], latencies[1], log


def scenario(name: str, venv: Path, data: Path, work: Path, env: dict[str, str]) -> None:
    cache = Path(tempfile.mkdtemp(dir=work, prefix="numba-cache-"))
    env = {**env, "NUMBA_CACHE_DIR": str(cache)}
    learn = [str(venv / "bin" / "streamlearn"), "learn", str(data), "--algo", "pdm",
             "--eps", "0.01", "--model", str(work / "m.ckpt")]  # fmt: skip
    for run in ("first", "second"):
        seconds, said = timed(learn, env)
        compiled = "compiled" if COMPILING in said else "nothing compiled"
        print(f"{name:6} learn 100 lines, {run} run    {seconds:7.3f} s  ({compiled})")
    for run in ("first", "second"):
        ready, first, second, log = serve(venv, data, env)
        compiled = "compiled" if COMPILING in log else "nothing compiled"
        print(
            f"{name:6} serve, {run} start: ready {ready:6.3f} s, first POST /predict "
            f"{first * 1000:7.1f} ms, next {second * 1000:5.1f} ms  ({compiled})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", type=Path, help="install this tree, not a clone of HEAD")
    parser.add_argument("--venv", type=Path, help="an environment streamlearn is installed in")
    parser.add_argument("--jit", action="store_true", help="also with STREAMLEARN_JIT=1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="first-run-") as tmp:
        work = Path(tmp)
        venv, seconds = install(args.source, work, args.venv)
        if seconds:
            print(f"pip install of a clone into a new venv: {seconds:.1f} s (wheel cache as is)")
        env = {k: v for k, v in os.environ.items() if k not in ("STREAMLEARN_JIT", "PYTHONPATH")}
        data = hundred_lines(work)
        numpy = [timed([str(venv / "bin" / "python"), "-c", "import numpy"], env)[0]
                 for _ in range(5)]  # fmt: skip
        print(f"anchor python -c 'import numpy'       {median(numpy):7.3f} s")
        scenario("AOT", venv, data, work, env)
        if args.jit:
            scenario("JIT", venv, data, work, {**env, "STREAMLEARN_JIT": "1"})
        print("targets: learn within 1 s, ready within 3 s, first predict within 50 ms")


if __name__ == "__main__":
    main()
