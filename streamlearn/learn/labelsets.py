"""Examples with label sets: what a one-vs-rest bank learns from.

A :class:`LabelledRows` holds CSR features and, per row, a set of label values (numbers)
as CSR offsets ``label_ptr`` into ``labels``, as the svmlight parser produces them
(``1,3,7 idx:val ...``). A multi-class example has one label; a multi-label example
any number, none included (then it is a negative for every label).

>>> import numpy as np
>>> rows = as_labelled_rows(np.array([[1.0, 0.0], [0.0, 2.0]]), [[3, 1], []])
>>> rows.label_ptr.tolist(), rows.labels.tolist()
([0, 2, 2], [3.0, 1.0])
>>> as_labelled_rows(np.eye(2), np.array([7, 2])).labels.tolist()
[7.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidInputError
from streamlearn.learn.inputs import as_rows
from streamlearn.parse import Rejected
from streamlearn.parse.svmlight import TEXT_CHARS
from streamlearn.types import (
    Batch,
    OffsetArray,
    ValueArray,
    features_spanned,
    joined_offsets,
    selected_rows,
)

#: why a bank refused a line (see :func:`within_bank_budget`)
TOO_MANY_LABELS = "too many labels"
TOO_MANY_WEIGHTS = "too many weights"


class HasLabelSets(Protocol):
    """Anything with CSR features and CSR label sets (e.g. the parser's ``ParsedRows``)."""

    @property
    def indptr(self) -> OffsetArray: ...
    @property
    def indices(self) -> npt.NDArray[np.int32]: ...
    @property
    def values(self) -> ValueArray: ...
    @property
    def label_ptr(self) -> OffsetArray: ...
    @property
    def labels(self) -> ValueArray: ...


@dataclass(frozen=True)
class LabelledRows:
    """Rows of features (CSR) with label sets (CSR offsets ``label_ptr`` into ``labels``)."""

    indptr: OffsetArray
    indices: npt.NDArray[np.int32]
    values: ValueArray
    label_ptr: OffsetArray
    labels: ValueArray

    @classmethod
    def from_arrays(cls, rows: HasLabelSets) -> LabelledRows:
        """Contiguous copies in the engine's dtypes, label values checked to be finite."""
        labels = np.array(rows.labels, dtype=np.float64)
        if labels.shape[0] and not np.all(np.isfinite(labels)):
            raise InvalidInputError("label values must be finite numbers")
        label_ptr = np.array(rows.label_ptr, dtype=np.int64)
        indptr = np.array(rows.indptr, dtype=np.int64)
        if (
            label_ptr.shape != indptr.shape
            or label_ptr[-1] != labels.shape[0]
            or label_ptr[0] < 0
            or np.any(np.diff(label_ptr) < 0)
        ):
            raise InvalidInputError(
                "label_ptr must hold n_rows + 1 non-decreasing offsets into labels"
            )
        return cls(
            indptr - indptr[0],
            np.array(rows.indices[indptr[0] : indptr[-1]], dtype=np.int32),
            np.array(rows.values[indptr[0] : indptr[-1]], dtype=np.float64),
            label_ptr - label_ptr[0],
            labels[label_ptr[0] :],
        )

    @property
    def n_examples(self) -> int:
        """Number of rows."""
        return int(self.indptr.shape[0] - 1)

    def features(self) -> Batch:
        """The features as a :class:`Batch` (its labels, all +1, are placeholders)."""
        return Batch(self.indptr, self.indices, self.values, np.ones(self.n_examples, np.int8))

    def label_set(self, row: int) -> ValueArray:
        """The label values of one row, in the order given."""
        return self.labels[self.label_ptr[row] : self.label_ptr[row + 1]]

    def slice(self, start: int, stop: int) -> LabelledRows:
        """Rows ``start:stop`` with offsets starting at 0."""
        lo, hi = int(self.indptr[start]), int(self.indptr[stop])
        llo, lhi = int(self.label_ptr[start]), int(self.label_ptr[stop])
        return LabelledRows(
            self.indptr[start : stop + 1] - lo,
            self.indices[lo:hi],
            self.values[lo:hi],
            self.label_ptr[start : stop + 1] - llo,
            self.labels[llo:lhi],
        )

    def select(self, keep: npt.NDArray[np.bool_]) -> LabelledRows:
        """The rows where ``keep`` is true, in order (a copy).

        >>> rows = as_labelled_rows(np.eye(3), [[1], [2, 3], []])
        >>> rows.select(np.array([False, True, True])).label_ptr.tolist()
        [0, 2, 2]
        """
        indptr, values = selected_rows(self.indptr, keep)
        label_ptr, labels = selected_rows(self.label_ptr, keep)
        return LabelledRows(
            indptr, self.indices[values], self.values[values], label_ptr, self.labels[labels]
        )

    @staticmethod
    def concatenate(parts: list[LabelledRows]) -> LabelledRows:
        """Rows of several parts, in order, as one (a copy)."""
        if not parts:
            zero = np.zeros(1, dtype=np.int64)
            return LabelledRows(zero, np.zeros(0, np.int32), np.zeros(0), zero.copy(), np.zeros(0))
        return LabelledRows(
            joined_offsets([p.indptr for p in parts]),
            np.concatenate([p.indices for p in parts]),
            np.concatenate([p.values for p in parts]),
            joined_offsets([p.label_ptr for p in parts]),
            np.concatenate([p.labels for p in parts]),
        )


def as_labelled_rows(X: Any, Y: Any) -> LabelledRows:
    """Features X (as :func:`~streamlearn.learn.inputs.as_rows` takes them) with labels Y:
    a 1-D array of class labels (one per row, multi-class), a sequence of label sets
    (iterables of numbers, multi-label), a ``(label_ptr, labels)`` pair of 1-D numpy
    arrays (any other tuple is a sequence of label sets), or an indicator matrix as
    scikit-learn writes multi-label targets: a 2-D numpy array or a scipy sparse matrix of
    0 and 1, the labels of a row the numbers of its columns that hold 1.

    >>> as_labelled_rows(np.eye(3), np.array([[0, 1, 1], [0, 0, 0], [1, 0, 0]])).labels
    array([1., 2., 0.])
    """
    indptr, indices, values = as_rows(X)
    n = indptr.shape[0] - 1
    label_ptr, labels = _label_sets(Y, n)
    return LabelledRows.from_arrays(LabelledRows(indptr, indices, values, label_ptr, labels))


def within_bank_budget(
    rows: LabelledRows,
    known: ValueArray,
    max_labels: int,
    *,
    n_features: int = 0,
    max_weights: int | None = None,
) -> dict[int, str]:
    """The rows a bank that holds the labels ``known`` and ``n_features`` features must
    leave out, in order, to hold at most ``max_labels`` labels and, with ``max_weights``,
    at most that many weights (labels times features: its dense weight matrix): each
    left-out row with the reason (``too many labels`` or ``too many weights``).

    A left-out row's labels and features are not counted; later rows may still fit. A
    row that brings no new label and no feature beyond those held is always kept: a bank
    resumed with lower bounds learns its own labels and features on.

    >>> rows = as_labelled_rows(np.eye(4), [[1], [2, 3], [4, 1], [3]])
    >>> within_bank_budget(rows, np.array([1.0]), 3)
    {2: 'too many labels'}
    >>> within_bank_budget(rows, np.array([1.0, 2.0, 3.0]), 2)
    {2: 'too many labels'}
    >>> within_bank_budget(rows, np.array([1.0]), 10, n_features=2, max_weights=8)
    {2: 'too many weights', 3: 'too many weights'}
    """
    new = np.setdiff1d(rows.labels, known)
    labels_after = known.shape[0] + new.shape[0]
    features_after = max(n_features, features_spanned(rows.indices))
    if (new.shape[0] == 0 or labels_after <= max_labels) and _weights_fit(
        labels_after, features_after, max_weights
    ):
        return {}
    held = set(known.tolist())
    features = n_features
    refused = {}
    for row in range(rows.n_examples):
        brought = set(rows.label_set(row).tolist()) - held
        lo, hi = rows.indptr[row], rows.indptr[row + 1]
        needs = max(features, features_spanned(rows.indices[lo:hi]))
        if not brought and needs == features:
            continue
        if brought and len(held) + len(brought) > max_labels:
            refused[row] = TOO_MANY_LABELS
        elif not _weights_fit(len(held) + len(brought), needs, max_weights):
            refused[row] = TOO_MANY_WEIGHTS
        else:
            held |= brought
            features = needs
    return refused


def _weights_fit(labels: int, features: int, max_weights: int | None) -> bool:
    """Whether a bank of ``labels`` labels over ``features`` features stays within
    ``max_weights`` (None: no bound); a bank without labels still holds one row."""
    return max_weights is None or max(labels, 1) * features <= max_weights


def apply_bank_budget(
    rows: LabelledRows,
    lines: npt.NDArray[np.int64],
    rejected: list[Rejected],
    known: ValueArray,
    max_labels: int,
    *,
    n_features: int = 0,
    max_weights: int | None = None,
) -> tuple[LabelledRows, list[Rejected]]:
    """``rows`` without those :func:`within_bank_budget` leaves out, and ``rejected``
    with those rows added as rejected lines, in line order (``lines`` gives each row's
    line number; the text is the row's labels).

    >>> rows = as_labelled_rows(np.eye(2), [[1], [2, 3]])
    >>> kept, refused = apply_bank_budget(rows, np.array([7, 8]), [], np.array([]), 2)
    >>> kept.n_examples, refused
    (1, [Rejected(line=8, reason='too many labels', text='2,3')])
    """
    refusals = within_bank_budget(
        rows, known, max_labels, n_features=n_features, max_weights=max_weights
    )
    if not refusals:
        return rows, rejected
    keep = np.ones(rows.n_examples, dtype=np.bool_)
    keep[list(refusals)] = False
    refused = [
        Rejected(int(lines[row]), reason, _refused_text(rows, row, reason))
        for row, reason in refusals.items()
    ]
    return rows.select(keep), sorted([*rejected, *refused], key=lambda item: item.line)


def _refused_text(rows: LabelledRows, row: int, reason: str) -> str:
    """What a refused row's message shows: its label set as the svmlight line wrote it
    and, when the weights refused it, how many features it needs; cut as a rejected
    line's text is.

    >>> rows = as_labelled_rows(np.eye(3), [[1, 2.5], [], [7]])
    >>> _refused_text(rows, 0, TOO_MANY_LABELS), _refused_text(rows, 2, TOO_MANY_WEIGHTS)
    ('1,2.5', '7; needs 3 features')
    """
    labels = rows.label_set(row).tolist()
    text = ",".join(str(int(v)) if v.is_integer() else repr(v) for v in labels)
    if reason == TOO_MANY_WEIGHTS:
        lo, hi = rows.indptr[row], rows.indptr[row + 1]
        text += f"; needs {features_spanned(rows.indices[lo:hi])} features"
    return text[:TEXT_CHARS]


def indicator_columns(Y: Any) -> int | None:
    """The number of columns of Y if it is an indicator matrix (a 2-D numpy array or a
    scipy sparse matrix), else None: each column is a label, whether any row holds it.

    >>> indicator_columns(np.zeros((4, 3))), indicator_columns([[1, 2], [0, 1]])
    (3, None)
    """
    if isinstance(Y, np.ndarray) and Y.ndim == 2:  # np.matrix too
        return int(Y.shape[1])
    if hasattr(Y, "tocsr") and len(getattr(Y, "shape", ())) == 2:  # scipy sparse
        return int(Y.shape[1])
    return None


def _indicator_label_sets(Y: Any, n: int) -> tuple[OffsetArray, ValueArray]:
    """Label sets from an indicator matrix: each row's columns that hold 1."""
    if Y.shape[0] != n:
        raise InvalidInputError(f"{n} examples but {Y.shape[0]} rows of labels")
    if isinstance(Y, np.ndarray):
        entries = np.asarray(Y)  # a plain array: np.matrix's methods take other arguments
        if entries.dtype == object:
            try:
                entries = entries.astype(np.float64)
            except (TypeError, ValueError):
                raise InvalidInputError("an indicator matrix must hold numbers") from None
        label_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.count_nonzero(entries, axis=1), out=label_ptr[1:])
        labels = np.nonzero(entries)[1].astype(np.float64)
    else:
        csr = Y.tocsr(copy=True)
        csr.sum_duplicates()
        csr.eliminate_zeros()
        entries = csr.data
        label_ptr, labels = csr.indptr.astype(np.int64), csr.indices.astype(np.float64)
    if not np.issubdtype(entries.dtype, np.number) and entries.dtype != np.bool_:
        raise InvalidInputError(f"an indicator matrix must hold numbers, got dtype {Y.dtype}")
    if not np.all((entries == 0) | (entries == 1)):
        raise InvalidInputError(
            "a 2-D label array is an indicator matrix and must hold only 0 and 1 (pass "
            "label sets as a list of lists, or a (label_ptr, labels) pair)"
        )
    return label_ptr, labels


def _label_sets(Y: Any, n: int) -> tuple[OffsetArray, ValueArray]:
    if indicator_columns(Y) is not None:
        return _indicator_label_sets(Y, n)
    if isinstance(Y, np.ndarray) and Y.ndim > 2:
        raise InvalidInputError(
            f"labels must be 1-D (classes), label sets or a 2-D indicator matrix, got a "
            f"{Y.ndim}-D array"
        )
    if _is_offsets_pair(Y):
        return np.asarray(Y[0], dtype=np.int64), np.asarray(Y[1], dtype=np.float64)
    if isinstance(Y, np.ndarray) and Y.ndim == 1 and Y.dtype != object:
        if not np.issubdtype(Y.dtype, np.number) and Y.dtype != np.bool_:
            raise InvalidInputError(f"labels must be numbers, got dtype {Y.dtype}")
        if Y.shape[0] != n:
            raise InvalidInputError(f"{n} examples but {Y.shape[0]} labels")
        return np.arange(n + 1, dtype=np.int64), Y.astype(np.float64)
    sets = list(Y)
    if len(sets) != n:
        raise InvalidInputError(f"{n} examples but {len(sets)} label sets")
    flat: list[float] = []
    ptr = [0]
    for i, item in enumerate(sets):
        members = [item] if _is_number(item) else _members(item, i)
        flat.extend(members)
        ptr.append(len(flat))
    return np.asarray(ptr, dtype=np.int64), np.asarray(flat, dtype=np.float64)


def _is_offsets_pair(Y: Any) -> bool:
    """Whether Y is a ``(label_ptr, labels)`` pair: two 1-D numpy arrays, the offsets of
    integers. A tuple of anything else is a sequence of label sets, as a list would be.

    >>> _is_offsets_pair((np.array([0, 1, 2]), np.array([4.0, 5.0])))
    True
    >>> _is_offsets_pair(((0, 1, 2), (5, 6)))
    False
    """
    return (
        isinstance(Y, tuple)
        and len(Y) == 2
        and all(isinstance(part, np.ndarray) and part.ndim == 1 for part in Y)
        and np.issubdtype(Y[0].dtype, np.integer)
    )


def _members(item: Any, row: int) -> list[float]:
    if not isinstance(item, Iterable) or isinstance(item, str | bytes):
        raise InvalidInputError(f"label set of row {row} is not a number or an iterable of numbers")
    members = []
    for value in item:
        if not _is_number(value):
            raise InvalidInputError(f"label set of row {row} holds {value!r}, not a number")
        if float(value) not in members:
            members.append(float(value))
    return members


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
