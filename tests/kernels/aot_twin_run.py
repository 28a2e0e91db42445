"""Run every path ``streamlearn warmup`` runs, and a few rarer ones, with each call of a
kernel compiled ahead of time repeated on copies of its arguments by numba's JIT; print
(as JSON on the last line) the exported kernels that were called and every difference.

A difference is a return value or an array argument after the call that is not the same,
bit for bit. Run in a process of its own: it needs the ahead-of-time modules and loads
(or compiles) the JIT of each exported kernel too.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from typing import Any

import numpy as np

from streamlearn._kernels import _jit
from streamlearn._kernels._exports import EXPORTS, export_key

called: Counter[str] = Counter()
differences: list[str] = []
#: calls of an exported kernel with arguments no export takes (the JIT ran them)
fallbacks: list[str] = []


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.tobytes() == b.tobytes()
        )
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float) or isinstance(b, float):
        return bool(np.float64(a).tobytes() == np.float64(b).tobytes())
    return bool(a == b) and type(a) is type(b)


def _copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        copy = value.copy()
        copy.flags.writeable = value.flags.writeable
        return copy
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    return value


#: kernels that reach the arrays they change through views of the process's memory
#: (``_kernels/many.py``): copying the views would copy whatever lies between those
#: arrays, so their twins compare the arrays alone
OVER_MEMORY = {"many.learn_models"}
#: kernels that reach the state's arrays through the address table they take last
#: (``_kernels/addresses.py``): copying the table would copy the addresses only
OVER_TABLE = {"single.answer_at", "single.learn_one_at"}


def _regions(args: tuple[Any, ...]) -> list[Any]:
    """``learn_models``' arrays in its memory views: each model's, as views of them."""
    from streamlearn._kernels.engine import N_STATS
    from streamlearn._kernels.many import ARRAYS

    views = dict(zip("FZIB", args[:4], strict=True))
    at, sizes = args[4], args[5]
    fixed = {"scalars": 4, "stats": N_STATS, "ring": 5}
    out = []
    for m in range(at.shape[0]):
        for column, (name, view) in enumerate(ARRAYS):
            size = sizes[m, 0] if name == "weights" else fixed.get(name)
            if size is None:
                size = sizes[m, 2] if name.startswith("arena") else sizes[m, 1]
            start = int(at[m, column])
            out.append(views[view][start : start + int(size)])
    out.extend(arg for arg in args[14:] if isinstance(arg, np.ndarray))  # the outputs
    return out


def _table_regions(args: tuple[Any, ...]) -> list[Any]:
    """The arrays of a state's address table (``single.state_table``), as views of them,
    and any other array argument."""
    from streamlearn._kernels.single import STATE_DTYPES

    table = args[-1]
    out = []
    for k, dtype in enumerate((*STATE_DTYPES, np.float64)):
        interface = {"data": (int(table[2 * k]), False), "shape": (int(table[2 * k + 1]),),
                     "typestr": np.dtype(dtype).str, "version": 3}  # fmt: skip
        out.append(np.asarray(type("Raw", (), {"__array_interface__": interface})()))
    return out


def _twin_over_memory(key: str, exported: Any, jit: Any, reach: Any = None) -> Any:
    """A twin for a kernel of :data:`OVER_MEMORY` or :data:`OVER_TABLE`: the export runs,
    its arrays' contents after it are kept and those before it put back, the JIT runs,
    and both must leave the same contents."""
    reach = reach or _regions

    def call(*args: Any) -> Any:
        called[key] += 1
        regions = reach(args)
        before = [region.copy() for region in regions]
        result = exported(*args)
        after = [region.copy() for region in regions]
        for region, saved in zip(regions, before, strict=True):
            region[...] = saved
        expected = jit()(*args)
        if not _same(result, expected):
            differences.append(f"{key}: returned {result!r}, the JIT {expected!r}")
        for n, (region, kept) in enumerate(zip(regions, after, strict=True)):
            if not _same(region, kept):
                differences.append(f"{key}: array {n} differs after the call")
        return result

    return call


def _twin(key: str, exported: Any, jit: Any) -> Any:
    if key in OVER_MEMORY:
        return _twin_over_memory(key, exported, jit)
    if key in OVER_TABLE:
        return _twin_over_memory(key, exported, jit, _table_regions)

    def call(*args: Any) -> Any:
        called[key] += 1
        copies = _copy(args)
        result = exported(*args)
        expected = jit()(*copies)
        if not _same(result, expected):
            differences.append(f"{key}: returned {result!r}, the JIT {expected!r}")
        for n, (arg, copy) in enumerate(zip(args, copies, strict=True)):
            if not _same(arg, copy):
                differences.append(f"{key}: argument {n} differs after the call")
        return result

    return call


def _describe(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)} flags {value.flags.num}"
    if isinstance(value, tuple):
        return [_describe(v) for v in value]
    return type(value).__name__


def _counted_fallback(key: str, jit_call: Any) -> Any:
    def fallback() -> Any:
        call = jit_call()

        def described(*args: Any) -> Any:
            fallbacks.append(f"{key}{_describe(args)}")
            return call(*args)

        return described

    return fallback


def install() -> None:
    """Put a twin in place of every exported function the wrappers call."""
    from streamlearn._kernels import engine
    from streamlearn._kernels._exports import EXPORTS

    for module, qualname, freevars, _ in EXPORTS:
        importlib.import_module(f"streamlearn._kernels.{module}")  # its kernels made now
        if qualname.startswith("_replay_for_rule."):
            engine._replay_for_rule(*freevars)  # made now, to be twinned too
    for made, lazy in list(_jit._LAZY.values()):
        exports = getattr(made, "exports", None)
        if exports is None:
            continue
        function = lazy.py_func
        key = export_key(function.__module__, function.__qualname__, _jit.freevars(function))
        names = made.__code__.co_freevars
        for name, cell in zip(names, made.__closure__, strict=True):
            if name.startswith("_export"):
                cell.cell_contents = _twin(key, cell.cell_contents, lazy.dispatcher)
            if name == "_fallback":
                cell.cell_contents = _counted_fallback(key, cell.cell_contents)
        exports[:] = [_twin(key, f, lazy.dispatcher) for f in exports]


def rare_paths() -> None:
    """Paths the warm-up leaves out: a line cut between two chunks, rows in no canonical
    order, examples larger than the buffer can ever hold (alone, in a bank, one at a
    time), answering while learning, and PDM and PFM without multiple updates."""
    from streamlearn import PDM, PFM, ModelBank
    from streamlearn.parse import SvmlightParser

    parser = SvmlightParser()  # a line cut between two chunks, as reading a pipe cuts it
    for chunk in (b"+1 1:1\n-1 2", b":1 3:0.5\n+1 4:2\n"):
        parser.feed(chunk)
    from streamlearn.learn.inputs import as_batch, as_rows
    from streamlearn.learn.labelsets import LabelledRows
    from streamlearn.replay import ReplaySchedule

    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 6)) * (rng.random((60, 6)) < 0.6)
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    for model in (PDM(eps=0.1, multiple_updates=False), PFM(beta=0.1, multiple_updates=False)):
        model.fit(X, y)
    # a row with repeated, unsorted indices
    indptr = np.array([0, 3, 4])
    indices = np.array([2, 0, 2, 1], dtype=np.int32)
    values = np.array([1.0, 2.0, 0.5, -1.0])
    PDM(eps=0.1, delta=1.0).fit((indptr, indices, values), np.array([1, -1]))
    # answering on the way, with a buffer too small for some examples
    questions = (np.array([0, 2, 4]), np.array([0, 1, 0, 3], dtype=np.int32),
                 np.array([1.0, 1.0, -1.0, 2.0]))  # fmt: skip
    small = {"eps": 0.1, "delta": 0.5, "buffer_size": 20, "buffer_nnz": 3}
    indptr, indices, values = as_rows(X)
    single = PDM(**small)
    batch = as_batch(X, y)
    single.learn_and_answer(batch, questions, np.array([0, 30]), ReplaySchedule(every=0), 0)
    single.learn_on_schedule(batch, ReplaySchedule(every=25, passes=1), 60)
    bank = ModelBank(PDM(**small))
    labelled = LabelledRows(indptr, indices, values, np.arange(61, dtype=np.int64),
                            np.where(y > 0, 2.0, 1.0))  # fmt: skip
    bank.learn_and_answer(labelled, questions, np.array([0, 30]), ReplaySchedule(every=0), 0)
    bank.learn_on_schedule(labelled, ReplaySchedule(every=25, passes=1), 60)
    # the per-example kernels over the state's tuple: the one-example path's own, which
    # the river adapters reach through an address table instead
    import struct

    from streamlearn.learn.one_example import OneExamplePath

    path = OneExamplePath(PDM(delta=1.0), on_refresh=lambda new_blocks: None)
    path.bind(min_weights=3)
    kernels, average = path.kernels, np.full(path.state[0].shape[0], 0.5)
    for label in (1.0, -1.0, 1.0):
        struct.pack_into("@4d", path.F, path.raw_offset, 0.0, 2.0, 1.0, label)
        kernels.learn_one(2, label, path.state)
        kernels.decision(2, path.state)
        kernels.learn_last_then_decide(label, 2, path.state)
        kernels.decision_averaged(2, path.state, average, 0.25)
        kernels.learn_last_then_decide_averaged(-label, 2, path.state, average, 0.25)
    try:
        from streamlearn.river import PDMClassifier
    except ImportError:
        return
    one = PDMClassifier(eps=0.1, delta=0.5, buffer_size=20, buffer_nnz=3)
    for i in range(40):
        x = {f"f{j}": float(v) for j, v in enumerate(X[i]) if v}
        one.predict_proba_one(x)
        one.learn_one(x, bool(y[i] > 0))


def main() -> None:
    install()
    from streamlearn.jobs.warmup import run_warmup

    run_warmup(lambda line: None)
    rare_paths()
    keys = sorted({export_key(m, q, f) for m, q, f, _ in EXPORTS})
    print(json.dumps({"called": sorted(called), "all": keys, "differences": differences[:20],
                      "fallbacks": fallbacks[:20]}))  # fmt: skip


if __name__ == "__main__":
    main()
