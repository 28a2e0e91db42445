"""The keys of a poll learned together: one kernel call for every model that learns a
plain stream (:func:`~streamlearn._kernels.many.learn_models`), not a turn of Python each.

:class:`Layouts` keeps, per key whose model is one binary learner
(:func:`~streamlearn.learn.stream_learner.stream_learner`), where its arrays are and what
its rule is (:class:`Layout`), made again whenever anything else changes the model. A
key's labelled rows of a poll go this way when they are learned exactly as the model's
own ``learn_on_schedule`` would learn them in one piece with no replay: no question of
the key in the poll, every row admitted, none read before, none larger than the buffer,
and Delta not about to be fixed (``delta='auto'``: not the model's first example, nor
the one that fills its window). Every other key takes its turn as before, with the same
results: the kernel runs the same inlined code as ``learn_stream``, the buffer given the
same room first, and the counts the learner keeps in Python are updated as it does.

The kernel reaches the models' arrays through views of the process's memory that span
them all (:func:`memory_views`), each array found by its address: the arrays are not
moved nor copied, and the layouts hold a reference to each, so none is freed while a
call can reach it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import row_sqnorms
from streamlearn._kernels.many import ARRAYS, TOTAL_EVENTS, TOTAL_MISTAKES, learn_models
from streamlearn.learn import LinearLearner, Model, ModelLimits
from streamlearn.learn.state import SCALE_DOWN_ABOVE
from streamlearn.learn.stream_learner import stream_learner
from streamlearn.parse import ParsedRows
from streamlearn.types import Batch

IntArray = npt.NDArray[np.int64]

_DTYPES: dict[str, np.dtype[Any]] = {
    "F": np.dtype(np.float64),
    "Z": np.dtype(np.int64),
    "I": np.dtype(np.int32),
    "B": np.dtype(np.int8),
}
_RING_COUNT, _RING_WRITE_POS = 1, 2


@dataclass(eq=False)
class Layout:
    """One binary learner's arrays and rule, as the kernel takes them."""

    learner: LinearLearner
    #: the arrays in the order of :data:`ARRAYS` (held: none is freed meanwhile)
    arrays: tuple[npt.NDArray[Any], ...]
    #: their addresses
    addresses: tuple[int, ...]
    #: weights, slots, arena cells
    sizes: tuple[int, int, int]
    codes: tuple[int, int, int]
    params: tuple[float, float, float, float]
    n_features: int
    max_examples: int
    max_nnz: int
    evictions_forgotten: int
    scale_free: bool

    @staticmethod
    def of(model: Model) -> Layout | None:
        """The layout of ``model``; None when it is not one binary learner, or an array
        is not where the kernel can take it (contiguous, aligned, writable)."""
        learner = stream_learner(model)
        if learner is None:
            return None
        state = learner.state
        buf = state.buffer
        arrays = tuple(
            getattr(state if name in ("weights", "scalars", "stats") else buf, name)
            for name, _ in ARRAYS
        )
        for array, (_, view) in zip(arrays, ARRAYS, strict=True):
            dtype = _DTYPES[view]
            if (array.ndim != 1 or array.dtype != dtype or not array.flags.c_contiguous
                    or not array.flags.writeable
                    or array.ctypes.data % dtype.itemsize):  # fmt: skip
                return None
        code, params, rho, delta_sq, _, _ = learner.kernel_rule(False, False)
        forget = learner.forget == "window"
        return Layout(
            learner,
            arrays,
            tuple(int(array.ctypes.data) for array in arrays),
            (state.weights.shape[0], buf.capacity, buf.arena_idx.shape[0]),
            (int(code), int(forget), int(state.defer_until)),
            (float(params[0]), float(params[1]), float(rho), float(delta_sq)),
            state.n_features,
            buf.max_examples,
            buf.max_nnz,
            int(state.evictions_forgotten),
            bool(learner.entry.scale_free),
        )

    def window_allows(self, n_rows: int) -> bool:
        """Whether ``n_rows`` more examples leave Delta as it is: it is fixed, or the
        window still has room after them and has seen an example already."""
        window = self.learner.window
        if window.pending:
            return False
        room = window.room
        return room == 0 or (window.seen > 0 and room > n_rows)


class Layouts:
    """The layouts of the keys in memory whose models go together (see the module doc)."""

    def __init__(self) -> None:
        self._by_key: dict[bytes, Layout | None] = {}

    def get(self, key: bytes, model: Model) -> Layout | None:
        """The layout of ``key``'s ``model`` (made if it has none)."""
        if key in self._by_key:
            return self._by_key[key]
        layout = self._by_key[key] = Layout.of(model)
        return layout

    def known(self, key: bytes) -> Layout | None:
        """The layout of ``key`` if it has one now."""
        return self._by_key.get(key)

    def forget(self, key: bytes) -> None:
        """``key``'s model changed another way, or left memory: its layout is made again."""
        self._by_key.pop(key, None)

    def clear(self) -> None:
        """Forget every layout."""
        self._by_key.clear()


@dataclass(frozen=True)
class PollRows:
    """A poll's admitted labelled rows, grouped by key, and per key's run of them:
    figures the decision to learn a key together needs."""

    batch: Batch
    x_sqnorms: npt.NDArray[np.float64]
    #: per run: first and last row, cells, largest row's cells, largest index, largest
    #: squared norm
    first: IntArray
    last: IntArray
    cells: IntArray
    widest: IntArray
    max_index: IntArray
    max_sqnorm: npt.NDArray[np.float64]

    @staticmethod
    def admitted(learner: LinearLearner, rows: ParsedRows, runs: dict[int, tuple[int, int]]
                 ) -> tuple[PollRows, dict[int, int]]:  # fmt: skip
        """``rows`` (grouped by key, ``runs`` their key numbers' runs) as ``learner``
        admits them, and the position among the runs of the poll of each key number
        whose rows are all admitted."""
        batch, refused = learner.admit(rows, ModelLimits())
        assert isinstance(batch, Batch)
        keys = list(runs)
        bounds = np.array([runs[key] for key in keys], dtype=np.int64).reshape(-1, 2)
        first, last = bounds[:, 0], bounds[:, 1]
        whole = np.ones(len(keys), dtype=bool)
        if refused:
            ok = ~np.isin(rows.line_numbers, [item.line for item in refused])
            kept = np.concatenate([[0], np.cumsum(ok)])
            whole = kept[last] - kept[first] == last - first
            first, last = kept[first], kept[last]
        chosen = [key for key, fits in zip(keys, whole.tolist(), strict=True) if fits]
        poll = PollRows.of(batch, row_sqnorms(batch.indptr, batch.values), first[whole],
                           last[whole])  # fmt: skip
        return poll, {key: run for run, key in enumerate(chosen)}

    @staticmethod
    def of(batch: Batch, x_sqnorms: npt.NDArray[np.float64], first: IntArray,
           last: IntArray) -> PollRows:  # fmt: skip
        """The figures of the runs ``first[r]:last[r]`` of ``batch`` (none empty)."""
        indptr = batch.indptr
        cells = indptr[last] - indptr[first]
        widest = _run_max(np.diff(indptr), first, last)
        max_sqnorm = _run_max(x_sqnorms, first, last)
        max_index = np.full(first.shape[0], -1, dtype=np.int64)
        some = cells > 0
        if some.any():
            indices = batch.indices.astype(np.int64)
            max_index[some] = _run_max(indices, indptr[first[some]], indptr[last[some]])
        return PollRows(batch, x_sqnorms, first, last, cells, widest, max_index, max_sqnorm)


def _run_max(values: npt.NDArray[Any], first: IntArray, last: IntArray) -> npt.NDArray[Any]:
    """The largest of ``values[first[r]:last[r]]`` for each run ``r`` (none empty)."""
    if not first.shape[0]:
        return values[:0]
    padded = np.append(values, values[:1])
    bounds = np.stack([first, last], axis=1).ravel()
    return np.maximum.reduceat(padded, bounds)[::2]


def run_min(values: npt.NDArray[Any], first: IntArray, last: IntArray) -> npt.NDArray[Any]:
    """The smallest of ``values[first[r]:last[r]]`` for each run ``r`` (none empty)."""
    if not first.shape[0]:
        return values[:0]
    padded = np.append(values, values[:1])
    bounds = np.stack([first, last], axis=1).ravel()
    return np.minimum.reduceat(padded, bounds)[::2]


def memory_views(addresses: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
                 ) -> tuple[dict[str, npt.NDArray[Any]], int]:  # fmt: skip
    """Views of the memory from the lowest of ``addresses`` (aligned down to 8 bytes) to
    the highest of ``ends``, as float64, int64, int32 and int8 arrays, and their start."""
    start = int(addresses.min()) & ~7
    length = (int(ends.max()) - start + 7) & ~7
    views = {}
    for view, dtype in _DTYPES.items():
        holder = _Raw(start, length // dtype.itemsize, dtype)
        views[view] = np.asarray(holder)
    return views, start


class _Raw:
    """Memory at an address, as numpy's array interface describes it."""

    def __init__(self, address: int, length: int, dtype: np.dtype[Any]) -> None:
        self.__array_interface__ = {
            "data": (address, False),
            "shape": (length,),
            "typestr": dtype.str,
            "version": 3,
        }


@dataclass
class Learned:
    """What :func:`learn_together` did: counts to add to the keyed models' own."""

    update_events: int = 0
    judged: int = 0
    mistakes: int = 0


def needs_room(layouts: Sequence[Layout], runs: Sequence[int], poll: PollRows) -> list[bool]:
    """Per layout, whether its learner must make room first for its run of ``poll``
    (more weights, slots or arena cells: what ``_stream_ready`` would grow), or count
    more features: then the learner does it itself (:func:`make_room`)."""
    if not layouts:
        return []
    table = np.array([(layout.n_features, layout.sizes[1], layout.max_examples,
                       layout.sizes[2], layout.max_nnz, int(layout.arrays[10][_RING_COUNT]),
                       int(layout.arrays[10][_RING_WRITE_POS])) for layout in layouts],
                     dtype=np.int64).reshape(-1, 7)  # fmt: skip
    n_features, capacity, max_examples, arena, max_nnz, count, write_pos = table.T
    run = np.asarray(runs, dtype=np.int64)
    n = poll.last[run] - poll.first[run]
    slots = (count + n > capacity) & (capacity < max_examples)
    cells = (arena < max_nnz) & (write_pos + poll.cells[run] + n + 1 > arena)
    out: list[bool] = ((poll.max_index[run] + 1 > n_features) | slots | cells).tolist()
    return out


def make_room(layout: Layout, poll: PollRows, run: int) -> None:
    """What ``_stream_ready`` does before a batch: weights, slots and arena for the run."""
    n = int(poll.last[run] - poll.first[run])
    state = layout.learner.state
    state.grow_weights(int(poll.max_index[run]) + 1)
    state.buffer.reserve_slots(n)
    state.buffer.reserve_for(int(poll.cells[run]) + n)


def learn_together(layouts: Sequence[Layout], runs: Sequence[int], poll: PollRows) -> Learned:
    """Learn run ``runs[m]`` of ``poll`` into ``layouts[m]``'s learner, every one in one
    kernel call, and keep the learners' own counts as their ``learn_batch`` would."""
    learned = Learned()
    if not layouts:
        return learned
    addresses = np.array([layout.addresses for layout in layouts], dtype=np.int64)
    ends = addresses + np.array([[array.nbytes for array in layout.arrays]
                                 for layout in layouts], dtype=np.int64)  # fmt: skip
    views, start = memory_views(addresses, ends)
    itemsizes = np.array([_DTYPES[view].itemsize for _, view in ARRAYS], dtype=np.int64)
    at = (addresses - start) // itemsizes
    sizes = np.array([layout.sizes for layout in layouts], dtype=np.int64)
    codes = np.array([layout.codes for layout in layouts], dtype=np.int64)
    params = np.array([layout.params for layout in layouts], dtype=np.float64)
    run = np.asarray(runs, dtype=np.int64)
    bounds = np.ascontiguousarray(np.stack([poll.first[run], poll.last[run]], axis=1))
    changed = np.zeros(len(layouts), dtype=np.bool_)
    totals = np.zeros(2, dtype=np.int64)
    batch = poll.batch
    learn_models(views["F"], views["Z"], views["I"], views["B"], at, sizes, codes, params,
                 bounds, batch.indptr, batch.indices, batch.values, batch.labels,
                 poll.x_sqnorms, changed, totals)  # fmt: skip
    learned.update_events = int(totals[TOTAL_EVENTS])
    learned.mistakes = int(totals[TOTAL_MISTAKES])
    counts = (poll.last[run] - poll.first[run]).tolist()
    peaks = poll.max_sqnorm[run].tolist()
    for layout, n, peak, moved in zip(layouts, counts, peaks, changed.tolist(), strict=True):
        learner = layout.learner
        state = learner.state
        state.examples_seen += n
        window = learner.window
        if window.room:
            window.max_sqnorm = max(window.max_sqnorm, peak)
            window.seen += n
        if moved or learner.evictions_to_forget:
            state.converged = False
        learned.judged += n
    del views
    return learned


def scaled_down(layouts: Sequence[Layout]) -> list[int]:
    """The positions of the layouts whose learners' t grew past the bound at which they
    scale their state down (``keep_in_range``): they do it now, their layouts stale."""
    out = []
    for position, layout in enumerate(layouts):
        if layout.scale_free and layout.learner.state.updates > SCALE_DOWN_ABOVE:
            layout.learner.keep_in_range()
            out.append(position)
    return out
