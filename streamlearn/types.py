"""The batch type every stage passes along: examples as CSR arrays plus their labels.

A :class:`Batch` is the one currency between parsing, learning and replay. Feature
indices are 0-based column numbers, as in scipy's CSR matrices.

>>> import numpy as np
>>> b = Batch.from_csr(np.array([0, 2, 3]), np.array([0, 4, 1]), np.array([1.0, 0.5, 2.0]),
...                    np.array([1, -1]))
>>> b.n_examples, b.nnz, b.max_index
(2, 3, 4)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt

IndexArray = npt.NDArray[np.int32]
OffsetArray = npt.NDArray[np.int64]
ValueArray = npt.NDArray[np.float64]
LabelArray = npt.NDArray[np.int8]
#: the largest (0-based) feature index the learners hold: their indices are int32, and
#: one more than the largest index (the weights' length) must fit too
MAX_FEATURE_INDEX = int(np.iinfo(np.int32).max) - 1


class RowStatus(IntEnum):
    """What a check of one example found: the one code of every per-example check (the
    rows of a batch, the one-example kernels of the river adapters and of banks). A
    kernel that returns a count of nonzeros returns the negated code instead.

    >>> RowStatus(2).name, -RowStatus.TOO_LARGE
    ('BAD_INDEX', -4)
    """

    #: the example can be used as it is
    OK = 0
    #: a value is NaN or infinite
    NOT_FINITE = 1
    #: a feature index is negative or above :data:`MAX_FEATURE_INDEX`
    BAD_INDEX = 2
    #: indices not strictly increasing within a row (sorting and adding up repairs it)
    NOT_CANONICAL = 3
    #: the squares of the values add up to more than ``MAX_ROW_SQNORM`` (1e50: beyond it a
    #: learner's products of squared norms could overflow)
    TOO_LARGE = 4
    #: more entries than the one-example workspace holds (the caller grows it)
    NO_WORKSPACE = 5
    #: the replay buffer's arena must grow before the example is stored
    NEED_ARENA = 6
    #: more nonzeros than the replay buffer can ever hold: learned without being stored
    UNBUFFERED = 7


def features_spanned(indices: npt.NDArray[np.integer[Any]]) -> int:
    """One more than the largest (0-based) feature index among ``indices``: how many
    weights they need; 0 for none.

    >>> features_spanned(np.array([4, 9, 2])), features_spanned(np.array([], np.int32))
    (10, 0)
    """
    return int(indices.max(initial=-1)) + 1


def offsets(lengths: npt.NDArray[np.int64]) -> OffsetArray:
    """CSR offsets of rows with these lengths: 0 then their running sums.

    >>> offsets(np.array([2, 0, 3])).tolist()
    [0, 2, 2, 5]
    """
    out = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def joined_offsets(parts: list[OffsetArray]) -> OffsetArray:
    """The offsets of several CSR parts' rows, one part after the other."""
    return offsets(np.concatenate([np.diff(p) for p in parts]))


def selected_rows(
    indptr: OffsetArray, keep: npt.NDArray[np.bool_]
) -> tuple[OffsetArray, npt.NDArray[np.bool_]]:
    """For the CSR rows where ``keep`` is true: their offsets, and which entries of the
    data arrays they hold.

    >>> ptr, entries = selected_rows(np.array([0, 2, 3, 5]), np.array([True, False, True]))
    >>> ptr.tolist(), entries.tolist()
    ([0, 2, 4], [True, True, False, True, True])
    """
    lengths = np.diff(indptr)
    return offsets(lengths[keep]), np.repeat(keep, lengths)


@dataclass(frozen=True)
class Batch:
    """Examples in compressed sparse row form with labels in {+1, -1}.

    ``indptr`` has ``n_examples + 1`` offsets into ``indices`` (int32 feature numbers)
    and ``values`` (float64). ``labels`` are int8 in {+1, -1}. Arrays are trusted as
    they are: build batches through :meth:`from_csr` or a learner's input checks.
    """

    indptr: OffsetArray
    indices: IndexArray
    values: ValueArray
    labels: LabelArray

    @classmethod
    def from_csr(
        cls,
        indptr: npt.ArrayLike,
        indices: npt.ArrayLike,
        values: npt.ArrayLike,
        labels: npt.ArrayLike,
    ) -> Batch:
        """Build a batch, converting the arrays to the engine's dtypes (contiguous)."""
        return cls(
            indptr=np.ascontiguousarray(indptr, dtype=np.int64),
            indices=np.ascontiguousarray(indices, dtype=np.int32),
            values=np.ascontiguousarray(values, dtype=np.float64),
            labels=np.ascontiguousarray(labels, dtype=np.int8),
        )

    @property
    def n_examples(self) -> int:
        """Number of examples (rows)."""
        return int(self.indptr.shape[0] - 1)

    @property
    def nnz(self) -> int:
        """Number of stored nonzeros."""
        return int(self.indptr[-1] - self.indptr[0]) if self.indptr.shape[0] else 0

    @property
    def max_index(self) -> int:
        """Largest feature index present, or -1 when the batch has no nonzeros."""
        if self.indices.shape[0] == 0:
            return -1
        return int(self.indices.max())

    def slice(self, start: int, stop: int) -> Batch:
        """Rows ``start:stop`` as a new batch whose offsets begin at 0 (views, no copy)."""
        lo, hi = int(self.indptr[start]), int(self.indptr[stop])
        return Batch(
            indptr=self.indptr[start : stop + 1] - lo,
            indices=self.indices[lo:hi],
            values=self.values[lo:hi],
            labels=self.labels[start:stop],
        )

    @staticmethod
    def concatenate(batches: list[Batch]) -> Batch:
        """Rows of several batches, in order, as one batch."""
        if not batches:
            return Batch.from_csr([0], [], [], [])
        offsets = [np.zeros(1, dtype=np.int64)]
        total = 0
        for b in batches:
            offsets.append(b.indptr[1:] - b.indptr[0] + total)
            total += b.nnz
        return Batch(
            indptr=np.concatenate(offsets),
            indices=np.concatenate([b.indices[b.indptr[0] : b.indptr[-1]] for b in batches]),
            values=np.concatenate([b.values[b.indptr[0] : b.indptr[-1]] for b in batches]),
            labels=np.concatenate([b.labels for b in batches]),
        )
