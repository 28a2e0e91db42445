"""What a command costs before it learns: start-up of ``streamlearn learn`` with a warm
numba cache, beside what any Python program that uses numpy, or a cached numba function,
pays in the same run.

Every row is a fresh process, run in turn with the others (``--repeats`` rounds), wall
seconds, medians:

- ``python -c "import numpy"``: the anchor the issue measures against;
- ``numba floor``: ``import numba`` and the CPU target's set-up that loading any cached
  function triggers (the implementation registries; numba imports ``scipy.linalg`` there
  when scipy is installed, to look for BLAS); no streamlearn code;
- ``numba floor, no BLAS probe``: the same with ``scipy.linalg`` kept out, as
  streamlearn's commands set the target up (none of its kernels calls BLAS);
- ``streamlearn --version``: the command line's imports, no kernel;
- ``first read``: from the start of ``streamlearn learn --algo pdm`` to the moment it
  first reads its standard input (the pipe is filled first, so a write beyond its
  capacity returns when the process starts reading);
- ``learn, one line``: the whole run of ``streamlearn learn --algo pdm`` on one line
  (imports, the kernels compiled ahead of time loaded, the line learned, replayed and
  reported; numba is not imported);
- ``learn, one line, STREAMLEARN_JIT=1``: the same with numba's JIT, its cache warm (what
  an install without the kernels compiled ahead of time pays at every run).

Run: .venv/bin/python benchmarks/bench_startup.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import command_env, median

NUMBA_FLOOR = (
    "import numba\n"
    "from numba.core.registry import cpu_target\n"
    "cpu_target.target_context.refresh()\n"
)
#: the floor without streamlearn's imports: the finder refuses what the commands' does
NUMBA_FLOOR_NO_PROBE = (
    "import importlib.abc, sys\n"
    "class Refuse(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.startswith('scipy.linalg'):\n"
    "            raise ModuleNotFoundError(name)\n"
    "sys.meta_path.insert(0, Refuse())\n"
    f"{NUMBA_FLOOR}"
)
#: a pipe holds 64 KiB on Linux: this much more makes a write wait for the reader
PIPE_FILL = 64 * 1024
LINE = b"+1 1:0.5 7:1 30:1\n"


def _command() -> str:
    found = shutil.which("streamlearn", path=str(Path(sys.executable).parent))
    if found is None:
        sys.exit("streamlearn is not installed beside this Python: run `make install`")
    return found


def _run(argv: list[str], stdin: Path | None = None, jit: bool = False) -> float:
    env = command_env(jit)
    began = time.perf_counter()
    with open(stdin or os.devnull, "rb") as source:
        subprocess.run(
            argv, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            check=True, env=env,
        )  # fmt: skip
    return time.perf_counter() - began


def _first_read(argv: list[str]) -> float:
    """Seconds from the start of ``argv`` until it first reads its standard input."""
    began = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None
    lines = LINE * (2 * PIPE_FILL // len(LINE) + 1)
    process.stdin.write(lines[:PIPE_FILL])
    process.stdin.flush()
    process.stdin.write(lines[PIPE_FILL:])  # returns once the process reads
    process.stdin.flush()
    read_at = time.perf_counter() - began
    process.stdin.close()
    if process.wait() != 0:
        sys.exit(f"{argv} failed")
    return read_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    command = _command()
    with tempfile.TemporaryDirectory() as tmp:
        one_line = Path(tmp) / "one.svm"
        one_line.write_bytes(LINE)
        learn = [command, "learn", "--algo", "pdm"]
        rows: dict[str, Callable[[], float]] = {
            'python -c "import numpy"': lambda: _run([sys.executable, "-c", "import numpy"]),
            "numba floor (import, target set-up)": lambda: _run(
                [sys.executable, "-c", NUMBA_FLOOR]
            ),
            "numba floor, no BLAS probe": lambda: _run(
                [sys.executable, "-c", NUMBA_FLOOR_NO_PROBE]
            ),
            "streamlearn --version": lambda: _run([command, "--version"]),
            "learn: first read of standard input": lambda: _first_read(learn),
            "learn, one line": lambda: _run([*learn, str(one_line)]),
            "learn, one line, STREAMLEARN_JIT=1": lambda: _run([*learn, str(one_line)], jit=True),
        }
        _run([*learn, str(one_line)])  # the files in the page cache
        _run([*learn, str(one_line)], jit=True)  # the JIT's kernels in numba's cache
        times: dict[str, list[float]] = {name: [] for name in rows}
        for _ in range(args.repeats):
            for name, row in rows.items():
                times[name].append(row())
    anchor = median(times['python -c "import numpy"'])
    scipy = "with" if _has_scipy() else "without"
    print(f"start-up, wall seconds, median of {args.repeats} interleaved rounds ({scipy} scipy)")
    print(f"{'':40s} {'seconds':>8s} {'vs numpy':>9s} {'beyond numpy':>13s}")
    for name, values in times.items():
        seconds = median(values)
        print(f"{name:40s} {seconds:8.3f} {seconds / anchor:8.1f}x {seconds - anchor:13.3f}")
    # the figure issue 37 asks for, from the same rounds: at most 3x
    ratio = median(times["learn, one line"]) / anchor
    print(f'learn on one line / python -c "import numpy": {ratio:.2f}x (target: at most 3x)')


def _has_scipy() -> bool:
    probe = [sys.executable, "-c", "import importlib.util as u; print(bool(u.find_spec('scipy')))"]
    return subprocess.run(probe, capture_output=True, text=True).stdout.strip() == "True"


if __name__ == "__main__":
    main()
