"""Helpers shared by the benchmark scripts: locating data, timing, printing side by side."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def data_file(relative: str) -> Path:
    """A file of ../shared/data, or exit with a stated reason when it is missing."""
    path = SHARED_DATA / relative
    if not path.exists():
        sys.exit(f"{path} is missing: this benchmark needs ../shared/data beside the repository")
    return path


def data_lines(relative: str) -> list[bytes]:
    """The non-empty lines of a file of ../shared/data, each ending with a newline."""
    text = data_file(relative).read_bytes()
    return [line.rstrip(b"\r") + b"\n" for line in text.split(b"\n") if line.strip()]


def flipped(lines: list[bytes]) -> list[bytes]:
    """The same svmlight lines with the opposite labels (Adult's are 1 and -1)."""
    out = []
    for line in lines:
        label, rest = line.split(b" ", 1)
        out.append((b"1 " if label.startswith(b"-") else b"-1 ") + rest)
    return out


def adult() -> tuple[Any, Any]:
    """``adult/a9a.train`` as a scipy CSR matrix and labels +1/-1 (float64)."""
    from sklearn.datasets import load_svmlight_file  # only the scripts that read Adult need it

    X, y = load_svmlight_file(str(data_file("adult/a9a.train")))
    return X.tocsr(), np.where(y > 0, 1.0, -1.0)


def command_env(jit: bool = False) -> dict[str, str]:
    """The environment of a ``streamlearn`` command as a user's install runs it: the
    kernels compiled at install (numba's JIT with ``jit``), and Python's bytecode written
    as it is beside an installed package (a ``PYTHONDONTWRITEBYTECODE`` of the shell
    would compile every edited module from source at each start)."""
    skipped = ("STREAMLEARN_JIT", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in skipped}
    if jit:
        env["STREAMLEARN_JIT"] = "1"
    return env


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def interleaved(
    runs: dict[str, Callable[[], Any]], repeats: int
) -> dict[str, tuple[list[float], Any]]:
    """Run each function ``repeats`` times, alternating between them, so that a noisy
    machine slows all sides alike; returns every time and the last result per name."""
    clocked = interleaved_clocks(runs, repeats)
    return {name: (wall, result) for name, (wall, _, result) in clocked.items()}


def interleaved_clocks(
    runs: dict[str, Callable[[], Any]], repeats: int
) -> dict[str, tuple[list[float], list[float], Any]]:
    """:func:`interleaved` with two clocks: the wall seconds of every run and the CPU
    seconds of the calling thread (which leave out the time another process held the
    core, for single-threaded solvers); and the last result per name."""
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    results: dict[str, Any] = {}
    for _ in range(repeats):
        for name, function in runs.items():
            cpu_start = time.thread_time()
            seconds, results[name] = timed(function)
            cpu[name].append(time.thread_time() - cpu_start)
            wall[name].append(seconds)
    return {name: (wall[name], cpu[name], results[name]) for name in runs}


def median(values: list[float]) -> float:
    """The median of a non-empty list."""
    return float(statistics.median(values))


def print_equal_accuracy(
    periodic: list[tuple[str, float, float]],
    dynamic: list[tuple[str, float, float]],
    tolerance: float,
    measure: str,
) -> None:
    """Bytes of dynamic against periodic averaging at equal accuracy, both ways round.

    Runs are ``(name, accuracy, bytes an example)``; a run is as accurate as another when
    its accuracy is at most ``tolerance`` below. At each periodic run's accuracy: the
    cheapest dynamic run as accurate, and its bytes over the periodic run's (what the
    issue's target, at most 0.1, compares). At each dynamic run's accuracy: the cheapest
    periodic run as accurate, or none (then the most accurate periodic run is shown).

    >>> print_equal_accuracy([("p", 0.80, 1.0)], [("d", 0.81, 0.05)], 0.002, "final")
    equal final accuracy (at most 0.002 below): dynamic's bytes / periodic's (target <= 0.1)
      at periodic's accuracy:
        p                        0.8000, 1.000 B/ex: d 0.8100, 0.050: 0.050
      at dynamic's accuracy:
        d                        0.8100, 0.050 B/ex: none as accurate; best p 0.8000, 1.000: 0.050
    """
    print(f"equal {measure} accuracy (at most {tolerance} below): dynamic's bytes / periodic's "
          "(target <= 0.1)")  # fmt: skip
    for side, ours, theirs in (("periodic", periodic, dynamic), ("dynamic", dynamic, periodic)):
        print(f"  at {side}'s accuracy:")
        for name, accuracy, cost in ours:
            matches = [run for run in theirs if run[1] >= accuracy - tolerance]
            other = min(matches, key=lambda run: run[2]) if matches else None
            shown = other or max(theirs, key=lambda run: run[1])
            ratio = shown[2] / cost if side == "periodic" else cost / shown[2]
            found = "" if other else "none as accurate; best "
            print(f"    {name:<24} {accuracy:.4f}, {cost:.3f} B/ex: {found}{shown[0]} "
                  f"{shown[1]:.4f}, {shown[2]:.3f}: {ratio:.3f}")  # fmt: skip
