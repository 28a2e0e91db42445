"""The replay buffer: a bounded, first-in first-out store of examples and their slack.

Capacity is fixed at construction both in examples and in stored nonzeros, so memory is
bounded whatever the stream does. The nonzero arena follows what the buffer holds (about
twice it) up to its capacity, so a small stream or a small window costs little. The
buffer copies what it stores. Each example keeps its own slack coordinate (the number
of updates made with it, alpha_k).

>>> import numpy as np
>>> from streamlearn.types import MAX_FEATURE_INDEX, Batch
>>> buf = ReplayBuffer(max_examples=2, max_nnz=100)
>>> len(buf), buf.nnz
(0, 0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.ring import add_combination
from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.types import MAX_FEATURE_INDEX, Batch

_FIRST, _COUNT, _WRITE_POS, _EVICTED, _UNBUFFERED = range(5)
_MIN_ARENA = 1024
_MIN_SLOTS = 64


class ReplayBuffer:
    """Arrays of examples in arrival order, with per-example slack counts.

    The arrays are public for the kernels: ``slot_start``, ``slot_len``, ``slot_label``,
    ``slot_alpha``, ``slot_sqnorm`` (one entry per slot), ``arena_idx``, ``arena_val``
    (the nonzeros) and ``ring`` (first slot, count, write position, evicted, unbuffered).
    """

    def __init__(self, max_examples: int, max_nnz: int, *, grow_slots: bool = True) -> None:
        if int(max_examples) < 1:
            raise InvalidParameterError(f"buffer_size must be >= 1, got {max_examples}")
        if int(max_nnz) < 1:
            raise InvalidParameterError(f"buffer_nnz must be >= 1, got {max_nnz}")
        self.max_examples = int(max_examples)
        self.max_nnz = int(max_nnz)
        slots = min(self.max_examples, _MIN_SLOTS) if grow_slots else self.max_examples
        self.slot_start = np.zeros(slots, dtype=np.int64)
        self.slot_len = np.zeros(slots, dtype=np.int64)
        self.slot_label = np.zeros(slots, dtype=np.int8)
        self.slot_alpha = np.zeros(slots, dtype=np.float64)
        self.slot_sqnorm = np.zeros(slots, dtype=np.float64)
        size = min(self.max_nnz, _MIN_ARENA)
        self.arena_idx = np.zeros(size, dtype=np.int32)
        self.arena_val = np.zeros(size, dtype=np.float64)
        self.ring = np.zeros(5, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.ring[_COUNT])

    @property
    def capacity(self) -> int:
        """Slots allocated now: ``max_examples`` at most, fewer while the buffer grows
        towards it (a ring of this many slots)."""
        return int(self.slot_start.shape[0])

    @property
    def evicted(self) -> int:
        """Examples dropped so far to make room (oldest first)."""
        return int(self.ring[_EVICTED])

    @property
    def unbuffered(self) -> int:
        """Examples too large for the whole arena, learned from but never stored."""
        return int(self.ring[_UNBUFFERED])

    @property
    def nnz(self) -> int:
        """Nonzeros stored for the examples currently in the buffer."""
        return int(self.slot_len[self.live_slots()].sum())

    @property
    def allocated_bytes(self) -> int:
        """Bytes held by the buffer's arrays now (its ring's counters included)."""
        return int(sum(a.nbytes for a in self.arrays()) + self.ring.nbytes)

    def arrays(self) -> tuple[npt.NDArray[Any], ...]:
        """The kernels' view: (slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm,
        arena_idx, arena_val)."""
        return (
            self.slot_start,
            self.slot_len,
            self.slot_label,
            self.slot_alpha,
            self.slot_sqnorm,
            self.arena_idx,
            self.arena_val,
        )

    def live_slots(self) -> npt.NDArray[np.int64]:
        """Slot numbers of the buffered examples, oldest first."""
        first, count = int(self.ring[_FIRST]), int(self.ring[_COUNT])
        slots: npt.NDArray[np.int64] = (first + np.arange(count, dtype=np.int64)) % self.capacity
        return slots

    def reserve_slots(self, n_examples: int) -> None:
        """Grow the slot arrays so that ``n_examples`` more examples fit without evicting
        any, up to ``max_examples`` (a buffer evicts by count only once it holds that
        many): they start small and double, so that a model that has seen few examples
        (one of many keyed models, say) holds little. The live examples move to slots
        0, 1, ... in order.

        >>> buf = ReplayBuffer(max_examples=100_000, max_nnz=10**6)
        >>> buf.capacity, buf.allocated_bytes < 20_000
        (64, True)
        >>> buf.reserve_slots(100); buf.capacity
        128
        >>> buf.reserve_slots(1500); buf.capacity
        1500
        >>> buf.reserve_slots(10**6); buf.capacity
        100000
        """
        capacity = self.capacity
        needed = int(self.ring[_COUNT]) + int(n_examples)
        if needed <= capacity or capacity >= self.max_examples:
            return
        size = min(self.max_examples, max(2 * capacity, needed))
        order = self.live_slots()
        count = order.shape[0]
        for name in ("slot_start", "slot_len", "slot_label", "slot_alpha", "slot_sqnorm"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[:count] = old[order]
            setattr(self, name, new)
        self.ring[_FIRST] = 0

    def reserve_for(self, batch_nnz: int) -> None:
        """Make room for ``batch_nnz`` more nonzeros after the newest example.

        Until the arena reaches ``max_nnz`` the examples lie in one run from its start,
        and the kernels never wrap or evict for room: when the run reaches the end, the
        live examples move to the start (one copy of what the buffer holds), into an
        arena grown to twice what they and the batch need if they would fill more than
        two thirds of it. Memory thus follows what the buffer holds, not how much went
        through it, and a nonzero stored is copied at most twice on average. Once the arena is
        ``max_nnz`` long it is a ring that wraps and evicts by nonzeros.

        >>> buf = ReplayBuffer(max_examples=2, max_nnz=10**6)
        >>> buf.ring[:3] = [1, 1, 1000]; buf.slot_start[1] = 990; buf.slot_len[1] = 10
        >>> buf.reserve_for(100)  # the run [990, 1000) moves to the start
        >>> int(buf.slot_start[1]), int(buf.ring[2]), buf.arena_idx.shape[0]
        (0, 10, 1024)
        """
        size = self.arena_idx.shape[0]
        if size >= self.max_nnz:
            return
        write_pos = int(self.ring[_WRITE_POS])
        if write_pos + int(batch_nnz) + 1 <= size:
            return
        slots = self.live_slots()
        oldest = int(self.slot_start[slots[0]]) if slots.shape[0] else write_pos
        held = write_pos - oldest  # cells the live examples reserve, in one run
        needed = held + int(batch_nnz) + 1
        new_size = size if 3 * needed <= 2 * size else min(self.max_nnz, 2 * needed)
        self.arena_idx = _moved(self.arena_idx, oldest, write_pos, new_size)
        self.arena_val = _moved(self.arena_val, oldest, write_pos, new_size)
        self.slot_start[slots] -= oldest
        self.ring[_WRITE_POS] = held

    def alpha(self) -> npt.NDArray[np.float64]:
        """Slack counts alpha_k of the buffered examples, oldest first (a copy)."""
        return self.slot_alpha[self.live_slots()].copy()

    def alpha_sqsum(self) -> float:
        """sum alpha_k^2 over the buffered examples, summed oldest first in one run
        whatever the slots' layout (where the ring wraps, which moves as the slots grow
        or a buffer is restored, would otherwise change how the sum rounds).

        >>> buf = ReplayBuffer(max_examples=3, max_nnz=100, grow_slots=False)
        >>> buf.slot_alpha[:] = [1.0, 2.0, 3.0]; buf.ring[:2] = [2, 2]  # slots 2 then 0
        >>> buf.alpha_sqsum(), float(buf.alpha() @ buf.alpha())
        (10.0, 10.0)
        """
        alpha = self.alpha()  # a new array: the same summation wherever the slots sit
        return float(alpha @ alpha)

    def examples(self, stride: int = 1) -> Batch:
        """The buffered examples, oldest first, as a new batch; with ``stride`` k, only
        every k-th of them (the oldest, the (k+1)-th, ...): an even sample."""
        slots = self.live_slots()[::stride]
        lengths = self.slot_len[slots]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        cells = _cells(self.slot_start[slots], lengths)
        return Batch(
            indptr=indptr,
            indices=self.arena_idx[cells].astype(np.int32),
            values=self.arena_val[cells].copy(),
            labels=self.slot_label[slots].copy(),
        )

    def add_rows(
        self,
        slots: npt.NDArray[np.int64],
        coefficients: npt.NDArray[np.float64],
        weights: npt.NDArray[np.float64],
    ) -> None:
        """weights += sum of coefficients[i] * x of the example in ``slots[i]`` (its
        nonzeros as stored; ``weights`` long enough for their indices)."""
        add_combination(
            slots, coefficients, self.slot_start, self.slot_len, self.arena_idx,
            self.arena_val, weights,
        )  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        """The buffer's contents and layout as plain numbers and arrays.

        While the arena is shorter than ``max_nnz`` where its examples sit depends on
        when it moved them (on the sizes of the batches that came), and nothing learned
        does: the layout is then given as if the oldest example sat at the arena's
        start, so that the same examples give the same state however they came. A full
        arena is a ring whose layout decides evictions: it is given as it is."""
        slots = self.live_slots()
        batch = self.examples()
        positions = self.slot_start[slots].copy()
        write_pos = int(self.ring[_WRITE_POS])
        arena_size = int(self.arena_idx.shape[0])
        if arena_size < self.max_nnz:
            oldest = int(positions[0]) if positions.shape[0] else write_pos
            positions -= oldest
            write_pos -= oldest
            arena_size = max(write_pos, min(self.max_nnz, _MIN_ARENA))
        return {
            "max_examples": self.max_examples,
            "max_nnz": self.max_nnz,
            "indptr": batch.indptr,
            "indices": batch.indices,
            "values": batch.values,
            "labels": batch.labels,
            "alpha": self.slot_alpha[slots].copy(),
            "sqnorm": self.slot_sqnorm[slots].copy(),
            "positions": positions,
            "write_pos": write_pos,
            "arena_size": arena_size,
            "evicted": self.evicted,
            "unbuffered": self.unbuffered,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], *, grow_slots: bool = True) -> ReplayBuffer:
        """Rebuild a buffer from :meth:`state_dict`, each example at its arena position
        (and in slots 0, 1, ... in order)."""
        buf = cls(int(state["max_examples"]), int(state["max_nnz"]), grow_slots=grow_slots)
        indptr = np.asarray(state["indptr"], dtype=np.int64)
        count = indptr.shape[0] - 1
        arena_size = int(state["arena_size"])
        if count > buf.max_examples or arena_size > buf.max_nnz:
            raise StateError("replay buffer state holds more than its capacity")
        buf.reserve_slots(count)
        positions = np.asarray(state["positions"], dtype=np.int64)
        lengths = np.diff(indptr)
        if (
            positions.shape[0] != count
            or np.any(positions < 0)
            or np.any(positions + lengths > arena_size)
        ):
            raise StateError("replay buffer state: example positions do not fit the arena")
        _check_examples(state, indptr, count)
        buf.arena_idx = np.zeros(arena_size, dtype=np.int32)
        buf.arena_val = np.zeros(arena_size, dtype=np.float64)
        cells = _cells(positions, lengths)
        buf.arena_idx[cells] = np.asarray(state["indices"], dtype=np.int32)
        buf.arena_val[cells] = np.asarray(state["values"], dtype=np.float64)
        buf.slot_start[:count] = positions
        buf.slot_len[:count] = lengths
        buf.slot_label[:count] = np.asarray(state["labels"], dtype=np.int8)
        buf.slot_alpha[:count] = np.asarray(state["alpha"], dtype=np.float64)
        buf.slot_sqnorm[:count] = np.asarray(state["sqnorm"], dtype=np.float64)
        buf.ring[:] = [0, count, int(state["write_pos"]), int(state["evicted"]),
                       int(state["unbuffered"])]  # fmt: skip
        return buf


def _check_examples(state: dict[str, Any], indptr: npt.NDArray[np.int64], count: int) -> None:
    """Refuse a buffer state whose examples the kernels could not read safely (they index
    without bounds checks): offsets, indices, values, labels, slack counts and norms."""
    indices = np.asarray(state["indices"])
    values = np.asarray(state["values"])
    if (
        (count and indptr[0] != 0)
        or np.any(np.diff(indptr) < 0)
        or indices.shape != (int(indptr[-1]),)
        or values.shape != indices.shape
    ):
        raise StateError("replay buffer state: indptr must be offsets into its indices and values")
    if indices.shape[0] and (
        not np.issubdtype(indices.dtype, np.integer)
        or int(indices.min()) < 0
        or int(indices.max()) > MAX_FEATURE_INDEX
    ):
        raise StateError(
            f"replay buffer state: feature indices must lie in [0, {MAX_FEATURE_INDEX}]"
        )
    if not np.all(np.isin(np.asarray(state["labels"]), (-1, 1))) or len(state["labels"]) != count:
        raise StateError("replay buffer state: one label of +1 or -1 per example")
    for name in ("values", "alpha", "sqnorm"):
        array = np.asarray(state[name], dtype=np.float64)
        if array.shape != ((count,) if name != "values" else indices.shape) or not np.all(
            np.isfinite(array)
        ):
            raise StateError(f"replay buffer state: {name} must be finite, as many as it holds")
    if not 0 <= int(state["write_pos"]) <= int(state["arena_size"]):
        raise StateError("replay buffer state: write position outside the arena")


def _moved(array: npt.NDArray[Any], start: int, end: int, size: int) -> npt.NDArray[Any]:
    """``array[start:end]`` at the start of an array of ``size`` cells (``array`` itself
    when its size is ``size``); cells past ``end - start`` are written before they are
    ever read."""
    if size == array.shape[0]:
        array[: end - start] = array[start:end]  # numpy copies overlapping runs safely
        return array
    out = np.empty(size, dtype=array.dtype)
    out[: end - start] = array[start:end]
    return out


def _cells(starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Arena positions of every stored nonzero, example after example."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    cells: npt.NDArray[np.int64] = np.arange(total, dtype=np.int64) + offsets
    return cells
