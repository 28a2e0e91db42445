"""Memory of a checkpoint of a large one-vs-rest bank: its peak RSS against the steady RSS,
while it is written and while it is read back, with this tree's code and, in the same
run, with another tree's (``--before``, e.g. a git worktree of the commit before a
change: ``git worktree add /tmp/before <commit>``).

A child process per measure (fresh, with the daemon's allocator setting, as ``serve``
runs) builds the same bank: ``ModelBank(PDM(eps=0.1, delta=1, buffer_size=--window))``
with ``--labels`` labels declared, then learns ``--examples`` a9a rows (a9a.train
repeated) each of one class drawn at random (seed 0), so that the window is full and
its ring has wrapped, as in a long stream. It then reads its own ``VmRSS`` (steady) and,
resetting ``VmHWM`` before each step (``/proc/self/clear_refs``), the peak of:

- ``checkpoint``: ``CheckpointStore.write`` of the daemon's payload around the bank's
  state, taken as the daemon takes it (``state_to_write(bank)``: the buffer's signs and
  slack lent, not copied; ``bank.state_dict()`` in a tree from before it);
- in another child, a state that is a copy, in two steps: ``state``,
  ``bank.state_dict()`` (the new arrays every other user of a state gets), then
  ``write``, the store's write of that state (the codec and the file);
- ``restore`` (another child, the file the first wrote): ``read_checkpoint`` and
  ``ModelBank.from_state``, as ``serve`` does when it starts;
- with ``--serve``, a real ``serve --one-vs-rest`` restarting from that file (standard
  input open, then closed once it is ready): when ``/metrics`` first answers, its
  longest answer until ``/readyz`` says the checkpoint is loaded, the process's peak RSS
  then, and with the final checkpoint it writes at the end of its input.

Each peak is printed in MB and over the steady RSS (the issue's target: a write within
1.5x), with the seconds the step took; the file's size too.

Run: .venv/bin/python benchmarks/bench_checkpoint_memory.py [--labels 1000]
[--window 100000] [--examples 130000] [--before /tmp/before] [--serve]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from _common import data_file

REPOSITORY = Path(__file__).resolve().parents[1]


# -- the child ------------------------------------------------------------------------------


def _status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) * 1024
    return found


def _reset_peak() -> None:
    """Make VmHWM the current RSS (Linux 4.0 and later)."""
    Path("/proc/self/clear_refs").write_text("5")


def _bank(labels: int, window: int, examples: int) -> Any:
    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import load_svmlight_file

    from streamlearn import PDM, ModelBank

    X, _ = load_svmlight_file(str(data_file("adult/a9a.train")), n_features=123)
    X = sp.vstack([X.tocsr()] * -(-examples // X.shape[0])).tocsr()[:examples]
    classes = np.random.default_rng(0).integers(0, labels, size=examples).astype(np.float64)
    bank = ModelBank(PDM(eps=0.1, delta=1.0, buffer_size=window))
    bank.declare_labels(np.arange(labels))
    for start in range(0, examples, 10_000):
        bank.learn(X[start : start + 10_000], classes[start : start + 10_000])
    return bank


def _measured(step: Any) -> tuple[Any, dict[str, float]]:
    """Run ``step``; its result, seconds, RSS before and peak RSS (bytes)."""
    import gc

    gc.collect()
    _reset_peak()
    before = _status()["VmRSS"]
    began = time.perf_counter()
    result = step()
    seconds = time.perf_counter() - began
    return result, {"seconds": seconds, "before": before, "peak": _status()["VmHWM"]}


def _state_to_write(bank: Any) -> dict[str, Any]:
    """The bank's state as the daemon's checkpoint takes it, in this tree."""
    try:
        from streamlearn.learn.bank import state_to_write
    except ImportError:  # a tree from before it: the daemon took state_dict()
        state: dict[str, Any] = bank.state_dict()
        return state
    return state_to_write(bank)


def _payload(state: dict[str, Any], examples: int) -> dict[str, Any]:
    """What the daemon writes around a learner's state."""
    return {"kind": "streamlearn.daemon", "learner": state, "positions": {"0": examples},
            "stream": "stdin", "job": {"stream_examples": examples}}  # fmt: skip


def child_write(
    labels: int, window: int, examples: int, directory: str, split: bool
) -> dict[str, Any]:
    """Build the bank, then measure a checkpoint as the daemon writes it (``split``: the
    state, then the write of it)."""
    import gc

    from streamlearn.checkpoint.store import CheckpointStore
    from streamlearn.jobs.allocator import keep_freed_memory

    keep_freed_memory()
    bank = _bank(labels, window, examples)
    gc.collect()
    steady = _status()["VmRSS"]
    store = CheckpointStore(Path(directory), keep=1)
    if not split:
        path, both = _measured(lambda: store.write(_payload(_state_to_write(bank), examples)))
        return {"steady": steady, "checkpoint": both, "file": str(path),
                "size": Path(path).stat().st_size}  # fmt: skip
    state, state_step = _measured(bank.state_dict)
    _, write_step = _measured(lambda: store.write(_payload(state, examples)))
    return {"steady_split": steady, "state": state_step, "write": write_step}


def child_restore(file: str) -> dict[str, Any]:
    """Read the checkpoint back and make the bank of it, as ``serve`` starts."""
    from streamlearn import ModelBank
    from streamlearn.checkpoint.store import read_checkpoint
    from streamlearn.jobs.allocator import keep_freed_memory

    keep_freed_memory()
    idle = _status()["VmRSS"]

    def restore() -> Any:
        return ModelBank.from_state(read_checkpoint(Path(file)).payload["learner"])

    bank, step = _measured(restore)
    return {"idle": idle, "restore": step, "after": _status()["VmRSS"], "labels": bank.n_labels}


# -- the parent -----------------------------------------------------------------------------


def _child(tree: Path, *arguments: str) -> dict[str, Any]:
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, __file__, "--child", *arguments],
        env=environment, cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"the child in {tree} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _ask(port: int, path: str) -> tuple[int | None, float]:
    """The status of ``GET path`` on the metrics address (None: no answer) and its seconds."""
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as answer:
            status: int | None = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = None
    return status, time.perf_counter() - began


def _peak_of(pid: int) -> int:
    """VmHWM of process ``pid`` (bytes; 0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _serve_restart(tree: Path, directory: str, window: int) -> dict[str, Any]:
    """``serve --one-vs-rest`` restarting from the checkpoint in ``directory``: when
    ``/metrics`` first answers, its longest answer until the daemon is ready (restored),
    when that is, the process's peak RSS by then, and at its end (its final checkpoint
    written once standard input ends)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "streamlearn", "serve", "--one-vs-rest", "--algo", "pdm",
               "--eps", "0.1", "--delta", "1", "--buffer-size", str(window),
               "--checkpoint-dir", directory, "--idle-replay", "off",
               "--metrics-addr", f"127.0.0.1:{port}", "--http-addr", "off"]  # fmt: skip
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    began = time.perf_counter()
    serve = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=log, env={**os.environ, "PYTHONPATH": str(tree)},
                             cwd=tree)  # fmt: skip
    answered = ready = None
    slowest = 0.0
    while serve.poll() is None and ready is None and time.perf_counter() - began < 600:
        status, seconds = _ask(port, "/metrics")
        if status == 200 and answered is None:
            answered = time.perf_counter() - began
        if answered is not None:
            slowest = max(slowest, seconds)
        if answered is not None and _ask(port, "/readyz")[0] == 200:
            ready = time.perf_counter() - began
        time.sleep(0.02)
    restored_peak = _peak_of(serve.pid)
    peak = restored_peak
    assert serve.stdin is not None
    serve.stdin.close()  # the end of the input: the final checkpoint, then the exit
    while serve.poll() is None:
        peak = max(peak, _peak_of(serve.pid))
        time.sleep(0.05)
    log.seek(0)
    errors = log.read().decode(errors="replace")
    log.close()
    if serve.wait() != 0:
        sys.exit(f"serve in {tree} failed:\n{errors[-3000:]}")
    return {"answered": answered, "ready": ready, "slowest": slowest, "peak_ready": restored_peak,
            "peak": peak, "ended": time.perf_counter() - began}  # fmt: skip


def _mb(n: float) -> str:
    return f"{n / 1e6:,.0f} MB"


def _side(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as directory:
        sizes = (str(args.labels), str(args.window), str(args.examples), directory)
        wrote = _child(tree, "checkpoint", *sizes)
        read = _child(tree, "restore", wrote["file"])
        served = _serve_restart(tree, directory, args.window) if args.serve else None
        split = _child(tree, "split", *sizes)
    return {**wrote, **read, **split, "serve": served}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--window", type=int, default=100_000)
    parser.add_argument("--examples", type=int, default=130_000)
    parser.add_argument("--before", type=Path, help="another tree, e.g. the commit before")
    parser.add_argument("--serve", action="store_true", help="restart serve on the checkpoint")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "restore":
            print(json.dumps(child_restore(rest[0])))
        else:
            sizes = (int(rest[0]), int(rest[1]), int(rest[2]))
            print(json.dumps(child_write(*sizes, rest[3], split=kind == "split")))
        return
    sides = {"after": REPOSITORY}
    if args.before is not None:
        sides = {"before": args.before.resolve(), **sides}
    print(f"ModelBank(PDM) of {args.labels} labels, a window of {args.window} examples, "
          f"{args.examples} learned; peaks over the steady RSS (target: within 1.5x)")  # fmt: skip
    for name, tree in sides.items():
        began = time.perf_counter()
        result = _side(tree, args)
        steady = result["steady"]
        print(f"{name} ({tree}): steady RSS {_mb(steady)}, checkpoint file {_mb(result['size'])}"
              f" [{time.perf_counter() - began:.0f} s in all]")  # fmt: skip
        for step in ("checkpoint", "state", "write", "restore"):
            measured = result[step]
            peak, start = measured["peak"], measured["before"]
            print(f"  {step:<10} peak {_mb(peak):>9}  {peak / steady:4.2f}x steady  (from "
                  f"{_mb(start)}, +{_mb(peak - start)})  {measured['seconds']:6.2f} s")  # fmt: skip
        print(f"  restored bank: RSS {_mb(result['after'])} ({result['labels']} labels); steady "
              f"RSS of the split run {_mb(result['steady_split'])}")  # fmt: skip
        served = result["serve"]
        if served is not None:
            print(f"  serve restart: /metrics answers at {served['answered']:.2f} s, ready at "
                  f"{served['ready']:.2f} s, longest /metrics answer meanwhile "
                  f"{served['slowest']:.3f} s; peak RSS {_mb(served['peak_ready'])} when ready "
                  f"({served['peak_ready'] / steady:.2f}x steady), {_mb(served['peak'])} with "
                  f"its final checkpoint ({served['peak'] / steady:.2f}x); ended at "
                  f"{served['ended']:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
