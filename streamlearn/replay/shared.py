"""One replay buffer shared by the learners of a one-vs-rest bank.

Features are stored once (a :class:`ReplayBuffer` whose own label and slack arrays go
unused); each learner ``l`` owns a row of signs ``signs[l]`` (+1 where its label is in
the example's label set, -1 elsewhere) and a row of slack counts ``alphas[l]``, both
aligned with the buffer's slots. :meth:`SharedReplayBuffer.view` gives one learner's
buffer: the shared arrays with its own two rows. The slots start few and double as
examples come (:meth:`SharedReplayBuffer.reserve_slots`), the rows with them, so that a
bank that has seen few examples (one of many keyed models, say) holds little.

>>> shared = SharedReplayBuffer(max_examples=4, max_nnz=100)
>>> shared.add_label(), shared.add_label(), shared.n_labels
(0, 1, 2)
>>> view = shared.view(1)
>>> view.slot_label is shared.signs[1], view.arena_idx is shared.features.arena_idx
(False, True)
>>> bool(np.shares_memory(view.slot_label, shared.signs))
True

Its state holds the signs and slack of the live slots, oldest first (labels x examples).
:meth:`SharedReplayBuffer.state_dict` gathers them into new arrays;
:meth:`SharedReplayBuffer.state_to_write` lends them as :class:`RingColumns`, which the
checkpoint codec writes a few rows at a time (the same bytes), so that a checkpoint of a
large bank needs no copy of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import StateError
from streamlearn.replay.buffer import ReplayBuffer


class SharedReplayBuffer:
    """A bounded FIFO store of examples (features once) with per-learner signs and slack."""

    def __init__(self, max_examples: int, max_nnz: int) -> None:
        self.features = ReplayBuffer(max_examples, max_nnz)
        self.n_labels = 0
        # the rows of signs and slack are aligned with the slots: as many columns
        self.signs = np.zeros((1, self.features.capacity), dtype=np.int8)
        self.alphas = np.zeros((1, self.features.capacity), dtype=np.float64)

    def __len__(self) -> int:
        return len(self.features)

    @property
    def max_examples(self) -> int:
        """Capacity in examples."""
        return self.features.max_examples

    @property
    def max_nnz(self) -> int:
        """Capacity in stored nonzeros."""
        return self.features.max_nnz

    @property
    def evicted(self) -> int:
        """Examples dropped so far to make room (oldest first)."""
        return self.features.evicted

    @property
    def unbuffered(self) -> int:
        """Examples too large for the whole arena, learned from but never stored."""
        return self.features.unbuffered

    def reserve_slots(self, n_examples: int) -> bool:
        """:meth:`ReplayBuffer.reserve_slots` of the features, the rows' columns moved as
        the slots are (the live examples to slots 0, 1, ... in order). Whether the slots
        grew: the learners' views are stale then.

        >>> shared = SharedReplayBuffer(max_examples=1000, max_nnz=100)
        >>> shared.signs.shape, shared.reserve_slots(100), shared.signs.shape
        ((1, 64), True, (1, 128))
        """
        features = self.features
        capacity = features.capacity
        order = features.live_slots()
        features.reserve_slots(n_examples)
        if features.capacity == capacity:
            return False
        count = order.shape[0]
        for name in ("signs", "alphas"):
            old = getattr(self, name)
            new = np.zeros((old.shape[0], features.capacity), dtype=old.dtype)
            new[:, :count] = old[:, order]
            setattr(self, name, new)
        return True

    @property
    def allocated_bytes(self) -> int:
        """Bytes held by the features and the rows of every label room is kept for."""
        return self.features.allocated_bytes + int(self.signs.nbytes + self.alphas.nbytes)

    def add_label(self) -> int:
        """Room for one more learner's rows (zeros); returns its number."""
        label = self.n_labels
        if label >= self.signs.shape[0]:
            rows = 2 * self.signs.shape[0]
            self.signs = _grown_rows(self.signs, rows)
            self.alphas = _grown_rows(self.alphas, rows)
        self.signs[label] = 0
        self.alphas[label] = 0.0
        self.n_labels += 1
        return label

    def view(self, label: int) -> ReplayBuffer:
        """Learner ``label``'s buffer: the shared slots and arena with its own signs and
        slack. Valid until the arena grows or a label is added (take a new one then)."""
        if not 0 <= label < self.n_labels:
            raise IndexError(f"no learner {label} in a bank of {self.n_labels}")
        feats = self.features
        view = ReplayBuffer.__new__(ReplayBuffer)
        view.max_examples = feats.max_examples
        view.max_nnz = feats.max_nnz
        view.slot_start = feats.slot_start
        view.slot_len = feats.slot_len
        view.slot_label = self.signs[label]
        view.slot_alpha = self.alphas[label]
        view.slot_sqnorm = feats.slot_sqnorm
        view.arena_idx = feats.arena_idx
        view.arena_val = feats.arena_val
        view.ring = feats.ring
        return view

    def state_dict(self) -> dict[str, Any]:
        """The features once, and each learner's signs and slack for the live slots
        (new arrays, labels x examples oldest first: the state stays as it is while the
        buffer changes)."""
        state = self.state_to_write()
        state["signs"] = state["signs"].gather()
        state["alphas"] = state["alphas"].gather()
        return state

    def state_to_write(self) -> dict[str, Any]:
        """:meth:`state_dict` with the signs and slack lent, not copied: as
        :class:`RingColumns` of the buffer's own rows, which the checkpoint codec writes
        as the arrays :meth:`state_dict` gives (the same bytes), a few rows at a time.
        For a state written at once: they read the buffer as it is when written.

        >>> shared = SharedReplayBuffer(max_examples=3, max_nnz=100)
        >>> shared.add_label()
        0
        >>> lent = shared.state_to_write()["alphas"]
        >>> lent.shape, np.shares_memory(lent.rows, shared.alphas)
        ((1, 0), True)
        """
        slots = self.features.live_slots()
        features = self.features.state_dict()
        del features["labels"], features["alpha"]  # unused: the rows below hold them
        first = int(slots[0]) if slots.shape[0] else 0
        rows = slice(0, self.n_labels)
        return {
            "features": features,
            "signs": RingColumns(self.signs[rows], first, slots.shape[0]),
            "alphas": RingColumns(self.alphas[rows], first, slots.shape[0]),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SharedReplayBuffer:
        """Inverse of :meth:`state_dict` (and of :meth:`state_to_write`). The label rows
        are allocated once, as many as the state has, and filled a block at a time."""
        features = dict(state["features"])
        count = np.asarray(features["indptr"]).shape[0] - 1
        features["labels"] = np.ones(count, dtype=np.int8)  # placeholders: signs hold them
        features["alpha"] = np.zeros(count, dtype=np.float64)
        signs = np.asarray(state["signs"], dtype=np.int8)
        alphas = np.asarray(state["alphas"], dtype=np.float64)
        if signs.ndim != 2 or signs.shape != alphas.shape or signs.shape[1] != count:
            raise StateError("shared buffer state: signs and slack do not match the examples")
        n_labels = signs.shape[0]
        # a block of rows at a time: the checks' temporaries stay small
        step = max(1, _BLOCK_BYTES // max(1, alphas.itemsize * count))
        blocks = [slice(start, start + step) for start in range(0, n_labels, step)]
        for block in blocks:
            if not np.all(np.abs(signs[block]) == 1) or not np.all(np.isfinite(alphas[block])):
                raise StateError("shared buffer state: signs must be +1 or -1 and slack finite")
        shared = cls(int(features["max_examples"]), int(features["max_nnz"]))
        shared.features = ReplayBuffer.from_state(features)
        # every row at once (no doubling through add_label), as many as the state holds
        columns = shared.features.capacity
        shared.signs = np.zeros((max(n_labels, 1), columns), dtype=np.int8)
        shared.alphas = np.zeros((max(n_labels, 1), columns), dtype=np.float64)
        for block in blocks:
            shared.signs[block, :count] = signs[block]
            shared.alphas[block, :count] = alphas[block]
        shared.n_labels = n_labels
        return shared


#: the size of the blocks :class:`RingColumns` gives and :meth:`SharedReplayBuffer.from_state`
#: checks (bytes)
_BLOCK_BYTES = 1 << 18


class RingColumns:
    """Rows of per-slot values lent with their live slots in order: the array
    ``rows[:, (first + j) % width]`` for j < count (``width`` the number of slots), made
    a block at a time (:meth:`blocks`, for the checkpoint codec) or whole (:meth:`gather`,
    ``np.asarray``).

    It reads ``rows`` when asked: valid while they do not change.

    >>> ring = np.arange(8.0).reshape(2, 4)  # slot 2 oldest, then 3 and 0
    >>> RingColumns(ring, first=2, count=3).gather()
    array([[2., 3., 0.],
           [6., 7., 4.]])
    >>> [block.tolist() for block in RingColumns(ring, 2, 3).blocks(max_bytes=16)]
    [[2.0, 3.0], [0.0], [6.0, 7.0], [4.0]]
    """

    def __init__(self, rows: npt.NDArray[Any], first: int, count: int) -> None:
        if rows.ndim != 2 or not 0 <= count <= rows.shape[1] or not 0 <= first < rows.shape[1]:
            raise ValueError(f"{count} live slots from slot {first} of rows {rows.shape}")
        self.rows = rows
        self.first = first
        self.count = count

    @property
    def dtype(self) -> np.dtype[Any]:
        """The rows' dtype."""
        return self.rows.dtype

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, live slots)."""
        return (self.rows.shape[0], self.count)

    @property
    def nbytes(self) -> int:
        """Bytes of the array it stands for."""
        return self.shape[0] * self.count * self.dtype.itemsize

    def gather(self) -> npt.NDArray[Any]:
        """The whole array: a new C-ordered one."""
        return self._columns(slice(None), 0, self.count)

    def blocks(self, max_bytes: int = _BLOCK_BYTES) -> Iterator[npt.NDArray[Any]]:
        """The array in C order as new arrays of at most ``max_bytes`` (or one element):
        whole rows a few at a time, or pieces of a row when one row is larger."""
        n, count = self.shape
        per_row = count * self.dtype.itemsize
        if per_row <= max_bytes:
            step = max(1, max_bytes // max(per_row, 1))
            for start in range(0, n, step):
                yield self._columns(slice(start, start + step), 0, count)
            return
        step = max(1, max_bytes // self.dtype.itemsize)
        for row in range(n):
            for start in range(0, count, step):
                yield self._columns(row, start, min(start + step, count))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]:
        if copy is False:
            raise ValueError("the live slots of a ring cannot be an array without a copy")
        gathered = self.gather()
        return gathered if dtype is None else gathered.astype(dtype, copy=False)

    def _columns(self, rows: slice | int, start: int, stop: int) -> npt.NDArray[Any]:
        """Live columns ``start`` to ``stop`` of ``rows``: at most two runs of slots."""
        source = self.rows[rows]
        width = self.rows.shape[1]
        out = np.empty((*source.shape[:-1], stop - start), dtype=self.dtype)
        at = (self.first + start) % width
        head = min(stop - start, width - at)
        out[..., :head] = source[..., at : at + head]
        out[..., head:] = source[..., : stop - start - head]
        return out


def _grown_rows(array: npt.NDArray[Any], rows: int) -> npt.NDArray[Any]:
    out = np.zeros((rows, array.shape[1]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out
