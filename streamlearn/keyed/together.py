"""The keys of a poll learned together: one kernel call for every model that learns a
plain stream (:func:`~streamlearn._kernels.many.learn_models`), not a turn of Python each.

:class:`Layouts` keeps, per key whose model is one binary learner
(:func:`~streamlearn.learn.stream_learner.stream_learner`), where its arrays are and what
its rule is: a row of its tables, made again whenever anything else changes the model
(:meth:`Layouts.forget`). A key's labelled rows of a poll go this way when they are
learned exactly as the model's own ``learn_on_schedule`` would learn them in one piece
with no replay (:meth:`Layout.takes`): no question of the key in the poll, every row
admitted, none read before, none larger than the buffer can ever hold, and Delta not
about to be fixed (``delta='auto'``: not the model's first example, nor the one that
fills its window). Every other key takes its turn as before. The results are the same:
the kernel runs the code ``learn_stream`` runs, inlined, after the model made the same
room for the rows (:func:`needs_room`, :func:`make_room`), and the counts a learner
keeps in Python are kept as its ``learn_batch`` keeps them (:func:`learn_together`).

The kernel reaches the models' arrays through views of the process's memory that span
them all (:func:`memory_views`), each array found by its address: nothing is moved or
copied, and each layout holds its arrays, so none is freed while a call can reach it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import row_sqnorms
from streamlearn._kernels.many import (
    ARRAYS,
    DEFER_UNTIL,
    FORGET,
    TOTAL_EVENTS,
    TOTAL_MISTAKES,
    learn_models,
)
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
_ITEMSIZES = np.array([_DTYPES[view].itemsize for _, view in ARRAYS], dtype=np.int64)
#: columns of ``at``: the scalars and the ring
_SCALARS = [name for name, _ in ARRAYS].index("scalars")
_RING = [name for name, _ in ARRAYS].index("ring")
#: entries of the scalars and of the ring
_UPDATES = 2
_RING_COUNT, _RING_WRITE_POS, _RING_EVICTED = 1, 2, 3
#: columns of :attr:`Layouts.limits`
_N_FEATURES, _MAX_EXAMPLES, _MAX_NNZ, _FORGOTTEN, _SCALE_FREE = range(5)
#: columns of :attr:`Layouts.sizes`
_SLOTS, _CELLS = 1, 2


@dataclass(eq=False, slots=True)
class Layout:
    """One binary learner laid out for the kernel: its row of the tables of
    :class:`Layouts`, and its arrays (held, so that none is freed meanwhile)."""

    learner: LinearLearner
    arrays: tuple[npt.NDArray[Any], ...]
    row: int
    max_nnz: int

    def current(self) -> bool:
        """Whether the learner still holds the very arrays laid out: the addresses the
        kernel writes through are theirs only while it does (a path that replaced one
        without forgetting the layout would otherwise have the kernel write into memory
        the learner no longer reads)."""
        held = self.arrays
        return all(a is b for a, b in zip(_arrays_of(self.learner), held, strict=True))

    def takes(self, n_rows: int, widest: int) -> bool:
        """Whether ``n_rows`` rows, the widest of ``widest`` nonzeros, are learned
        together: each fits in the buffer, and Delta stays as it is (it is fixed, or its
        window has seen an example and still has room after them)."""
        window = self.learner.window
        if widest > self.max_nnz or window.pending:
            return False
        room = window.room
        return room == 0 or (window.seen > 0 and room > n_rows)


_ROW = attrgetter("row")


def _address(array: npt.NDArray[Any]) -> int:
    """Where ``array``'s data starts (a ctypes object over its buffer finds it four
    times as fast as ``array.ctypes``; an empty array has no byte to put one over)."""
    try:
        buffer: Any = array  # numpy's stubs do not say that arrays are buffers
        return ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    except (TypeError, ValueError):
        return int(array.ctypes.data)


def _arrays_of(learner: LinearLearner) -> tuple[npt.NDArray[Any], ...]:
    """The learner's arrays the kernel works on, in the order of ``ARRAYS``."""
    state = learner.state
    buf = state.buffer
    return (state.weights, state.scalars, state.stats, *buf.arrays(), buf.ring)


class Layouts:
    """The layouts of the keys in memory whose models go together, and their tables:
    one row per layout (see the module doc)."""

    def __init__(self, rows: int = 64) -> None:
        self._by_key: dict[bytes, Layout | None] = {}
        self._free: list[int] = []
        self._used = 0
        #: each array's address and where it ends (columns in the order of ``ARRAYS``)
        self.addresses = np.zeros((rows, len(ARRAYS)), dtype=np.int64)
        self.ends = np.zeros((rows, len(ARRAYS)), dtype=np.int64)
        #: the weights, slots and arena cells allocated
        self.sizes = np.zeros((rows, 3), dtype=np.int64)
        #: the rule's code, whether evicted examples leave the model, ``defer_until``
        self.codes = np.zeros((rows, 3), dtype=np.int64)
        #: the rule's two parameters, rho and Delta^2
        self.params = np.zeros((rows, 4), dtype=np.float64)
        #: features counted, ``max_examples``, ``max_nnz``, ``evictions_forgotten`` and
        #: whether the learner scales its state down (``keep_in_range``)
        self.limits = np.zeros((rows, 5), dtype=np.int64)

    def get(self, key: bytes, model: Model) -> Layout | None:
        """The layout of ``key``'s ``model``: made when it has none or it lays out
        another model; None when the model does not go together."""
        layout = self._by_key.get(key)
        if layout is not None and layout.learner is model and layout.current():
            return layout
        if key in self._by_key:
            if layout is None and stream_learner(model) is None:
                return None
            self.forget(key)
        layout = self._by_key[key] = self._laid_out(model)
        return layout

    def known(self, key: bytes) -> Layout | None:
        """The layout of ``key`` if it has one now."""
        return self._by_key.get(key)

    def lookup(self) -> Callable[[bytes], Layout | None]:
        """:meth:`known` as a plain function (for a loop over many keys)."""
        return self._by_key.get

    def settled(self, key: bytes) -> bool:
        """Whether ``key``'s model was looked at already: laid out, or found not to go
        together (a bank)."""
        return key in self._by_key

    def forget(self, key: bytes) -> None:
        """``key``'s model changed another way, or left memory: its row is free."""
        layout = self._by_key.pop(key, None)
        if layout is not None:
            self._free.append(layout.row)

    def rows(self, layouts: Sequence[Layout]) -> IntArray:
        """The rows of ``layouts``."""
        return np.fromiter(map(_ROW, layouts), np.int64, len(layouts))

    def grown(self, key: bytes, layout: Layout) -> Layout | None:
        """``key``'s ``layout`` after its learner made room (:func:`make_room`): the
        arrays it replaced found again, the others where they were; None when it no
        longer goes together."""
        learner = layout.learner
        arrays = _arrays_of(learner)
        held = self.addresses[layout.row].tolist()
        addresses = [
            address if new is old else _address(new)
            for new, old, address in zip(arrays, layout.arrays, held, strict=True)
        ]
        self.forget(key)
        made = self._by_key[key] = self._laid_out(learner, arrays, addresses)
        return made

    def _laid_out(
        self,
        model: Model,
        arrays: tuple[npt.NDArray[Any], ...] | None = None,
        addresses: list[int] | None = None,
    ) -> Layout | None:
        """``model`` laid out in a row of the tables (its arrays and their addresses
        when they are known already); None when it does not go together."""
        learner = stream_learner(model)
        if learner is None:
            return None
        state = learner.state
        buf = state.buffer
        if arrays is None or addresses is None:
            arrays = _arrays_of(learner)
            addresses = [_address(array) for array in arrays]
        for array, address, (_, view) in zip(arrays, addresses, ARRAYS, strict=True):
            dtype = _DTYPES[view]
            flags = array.flags
            if (array.ndim != 1 or array.dtype != dtype or not flags.c_contiguous
                    or not flags.writeable or address % dtype.itemsize):  # fmt: skip
                return None
        row = self._row()
        self.addresses[row] = addresses
        self.ends[row] = [address + array.nbytes for address, array in zip(addresses, arrays,
                                                                         strict=True)]  # fmt: skip
        code, params, rho, delta_sq, _, _ = learner.kernel_rule(False, False)
        self.sizes[row] = (state.weights.shape[0], buf.capacity, buf.arena_idx.shape[0])
        self.codes[row] = (code, learner.forget == "window", state.defer_until)
        self.params[row] = (params[0], params[1], rho, delta_sq)
        self.limits[row] = (state.n_features, buf.max_examples, buf.max_nnz,
                            state.evictions_forgotten, learner.entry.scale_free)  # fmt: skip
        return Layout(learner, arrays, row, buf.max_nnz)

    def _row(self) -> int:
        if self._free:
            return self._free.pop()
        if self._used == self.addresses.shape[0]:
            for name in ("addresses", "ends", "sizes", "codes", "params", "limits"):
                table = getattr(self, name)
                setattr(self, name, np.concatenate([table, np.zeros_like(table)]))
        self._used += 1
        return self._used - 1


@dataclass(frozen=True)
class PollRows:
    """A poll's labelled rows grouped by key, as a binary learner admits them, and per
    run of a key's rows: its rows and cells, its widest row, largest feature index and
    largest squared norm (figures only for the runs whose rows are all admitted)."""

    batch: Batch
    x_sqnorms: npt.NDArray[np.float64]
    #: whether every row of the run was admitted
    whole: npt.NDArray[np.bool_]
    first: IntArray
    last: IntArray
    cells: IntArray
    widest: IntArray
    max_index: IntArray
    max_sqnorm: npt.NDArray[np.float64]

    @staticmethod
    def admitted(learner: Model, rows: ParsedRows, first: IntArray, last: IntArray) -> PollRows:
        """``rows``, whose runs ``first[r]:last[r]`` are the keys' (in order, none
        empty, every row in one), as ``learner`` admits them."""
        batch, refused = learner.admit(rows, ModelLimits())
        assert isinstance(batch, Batch)
        whole = np.ones(first.shape[0], dtype=bool)
        if refused:
            ok = ~np.isin(rows.line_numbers, [item.line for item in refused])
            kept = np.concatenate([[0], np.cumsum(ok)])
            whole = kept[last] - kept[first] == last - first
            first, last = kept[first], kept[last]
        x_sqnorms = row_sqnorms(batch.indptr, batch.values)
        n = first.shape[0]
        cells = np.zeros(n, dtype=np.int64)
        widest = np.zeros(n, dtype=np.int64)
        max_index = np.full(n, -1, dtype=np.int64)
        max_sqnorm = np.zeros(n, dtype=np.float64)
        indptr = batch.indptr
        runs = np.flatnonzero(whole)
        if runs.shape[0]:
            lo, hi = first[runs], last[runs]
            cells[runs] = indptr[hi] - indptr[lo]
            widest[runs] = run_max(np.diff(indptr), lo, hi)
            max_sqnorm[runs] = run_max(x_sqnorms, lo, hi)
            some = runs[cells[runs] > 0]
            indices = batch.indices.astype(np.int64)
            max_index[some] = run_max(indices, indptr[first[some]], indptr[last[some]])
        return PollRows(batch, x_sqnorms, whole, first, last, cells, widest, max_index,
                        max_sqnorm)  # fmt: skip


def run_max(values: npt.NDArray[Any], first: IntArray, last: IntArray) -> npt.NDArray[Any]:
    """The largest of ``values[first[r]:last[r]]`` for each run ``r`` (none empty)."""
    return _run_reduce(np.maximum, values, first, last)


def run_min(values: npt.NDArray[Any], first: IntArray, last: IntArray) -> npt.NDArray[Any]:
    """The smallest of ``values[first[r]:last[r]]`` for each run ``r`` (none empty).

    >>> run_min(np.array([5, 3, 9, 7]), np.array([0, 2]), np.array([2, 4])).tolist()
    [3, 7]
    """
    return _run_reduce(np.minimum, values, first, last)


def _run_reduce(
    ufunc: np.ufunc, values: npt.NDArray[Any], first: IntArray, last: IntArray
) -> npt.NDArray[Any]:
    if not first.shape[0]:
        return values[:0]
    padded = np.append(values, values[:1])  # a run may end at the end
    out: npt.NDArray[Any] = ufunc.reduceat(padded, np.stack([first, last], axis=1).ravel())
    return out[::2]


def memory_views(addresses: IntArray, ends: IntArray) -> tuple[dict[str, npt.NDArray[Any]], int]:
    """Views of the memory from the lowest of ``addresses`` (aligned down to 8 bytes) to
    the highest of ``ends``, as float64, int64, int32 and int8 arrays (``F``, ``Z``,
    ``I``, ``B``), and the address they start at."""
    start = int(addresses.min()) & ~7
    length = (int(ends.max()) - start + 7) & ~7
    views = {view: np.asarray(_Raw(start, length // dtype.itemsize, dtype))
             for view, dtype in _DTYPES.items()}  # fmt: skip
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


def _reach(tables: Layouts, rows: IntArray) -> tuple[dict[str, npt.NDArray[Any]], IntArray]:
    """The memory views over the arrays of ``rows``, and where each array starts in them."""
    addresses = tables.addresses[rows]
    views, start = memory_views(addresses, tables.ends[rows])
    return views, (addresses - start) // _ITEMSIZES


def needs_room(tables: Layouts, rows: IntArray, runs: IntArray, poll: PollRows) -> list[bool]:
    """Per row of ``tables``, whether its learner must make room first for its run of
    ``poll`` (more weights, slots or arena cells, as ``_stream_ready`` grows them) or
    count more features: :func:`make_room` then does it as the learner would."""
    if not rows.shape[0]:
        return []
    views, at = _reach(tables, rows)
    ring = at[:, _RING]
    count, write_pos = views["Z"][ring + _RING_COUNT], views["Z"][ring + _RING_WRITE_POS]
    sizes, limits = tables.sizes[rows], tables.limits[rows]
    capacity, arena = sizes[:, _SLOTS], sizes[:, _CELLS]
    n = poll.last[runs] - poll.first[runs]
    slots = (count + n > capacity) & (capacity < limits[:, _MAX_EXAMPLES])
    cells = (arena < limits[:, _MAX_NNZ]) & (write_pos + poll.cells[runs] + n + 1 > arena)
    features = poll.max_index[runs] + 1 > limits[:, _N_FEATURES]
    out: list[bool] = (features | slots | cells).tolist()
    return out


def make_room(learner: LinearLearner, poll: PollRows, run: int) -> None:
    """What ``_stream_ready`` does before a batch: weights, slots and arena for the run."""
    n = int(poll.last[run] - poll.first[run])
    state = learner.state
    state.grow_weights(int(poll.max_index[run]) + 1)
    state.buffer.reserve_slots(n)
    state.buffer.reserve_for(int(poll.cells[run]) + n)


@dataclass
class Learned:
    """What :func:`learn_together` did: counts to add to the keyed models' own, and the
    positions of the layouts that scaled their learners' state down (stale now)."""

    update_events: int = 0
    judged: int = 0
    mistakes: int = 0
    scaled_down: list[int] | None = None


def learn_together(
    tables: Layouts, layouts: Sequence[Layout], runs: IntArray, poll: PollRows
) -> Learned:
    """Learn run ``runs[m]`` of ``poll`` into ``layouts[m]``'s learner, every one in one
    kernel call; what its ``learn_batch`` does after presenting them (no longer
    converged when the window changed, ``keep_in_range``) is done here too. The caller
    counts the examples and their window beforehand (the kernel reads neither)."""
    learned = Learned(scaled_down=[])
    if not layouts:
        return learned
    rows = tables.rows(layouts)
    views, at = _reach(tables, rows)
    bounds = np.ascontiguousarray(np.stack([poll.first[runs], poll.last[runs]], axis=1))
    changed = np.zeros(len(layouts), dtype=np.bool_)
    totals = np.zeros(2, dtype=np.int64)
    batch = poll.batch
    learn_models(views["F"], views["Z"], views["I"], views["B"], at, tables.sizes[rows],
                 tables.codes[rows], tables.params[rows], bounds, batch.indptr,
                 batch.indices, batch.values, batch.labels, poll.x_sqnorms, changed,
                 totals)  # fmt: skip
    codes, limits = tables.codes[rows], tables.limits[rows]
    evicted = views["Z"][at[:, _RING] + _RING_EVICTED]
    pending = np.minimum(evicted, codes[:, DEFER_UNTIL]) - limits[:, _FORGOTTEN] > 0
    stale = changed | (pending & (codes[:, FORGET] != 0))
    large = (limits[:, _SCALE_FREE] != 0) & (views["F"][at[:, _SCALARS] + _UPDATES]
                                             > SCALE_DOWN_ABOVE)  # fmt: skip
    for position in np.flatnonzero(stale).tolist():
        layouts[position].learner.state.converged = False  # the window changed
    learned.scaled_down = np.flatnonzero(large).tolist()
    for position in learned.scaled_down:
        layouts[position].learner.keep_in_range()
    learned.update_events = int(totals[TOTAL_EVENTS])
    learned.mistakes = int(totals[TOTAL_MISTAKES])
    learned.judged = int((bounds[:, 1] - bounds[:, 0]).sum())
    return learned
