"""Turning what users pass (CSR matrices, array triples, dense arrays, labels) into batches.

Every check names the problem and where it is:

>>> import numpy as np
>>> as_batch(np.array([[1.0, 0.0], [0.0, 2.0]]), [1, 0]).labels.tolist()
[1, -1]
>>> as_batch(np.array([[np.nan]]), [1])
Traceback (most recent call last):
...
streamlearn.errors.InvalidInputError: X row 0 holds a NaN or infinite value
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import canonicalize_rows, check_rows, row_sqnorms
from streamlearn._kernels.rows import MAX_ROW_SQNORM
from streamlearn.errors import InvalidInputError
from streamlearn.types import MAX_FEATURE_INDEX, Batch, RowStatus


def as_rows(X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR arrays ``(indptr int64, indices int32, values float64)`` of X, checked.

    X is a scipy sparse matrix (any format with ``tocsr``), a triple
    ``(indptr, indices, values)`` or a dense 2-D array. Rows whose indices are unsorted
    or repeated are put in canonical form (sorted, duplicates added up).
    """
    if hasattr(X, "tocsr"):
        csr = X.tocsr()
        indptr, indices, values = csr.indptr, csr.indices, csr.data
    elif isinstance(X, tuple) and len(X) == 3:
        indptr, indices, values = X
    else:
        indptr, indices, values = _dense_to_csr(X)
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    values = np.asarray(values)
    _check_shapes(indptr, indices, values)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = indices[indptr[0] : indptr[-1]]
    values = values[indptr[0] : indptr[-1]]
    indptr = indptr - indptr[0]
    if indices.shape[0]:
        # checked before the cast to int32, which would wrap an index beyond its range
        if int(indices.max()) > MAX_FEATURE_INDEX:
            raise InvalidInputError(
                f"X holds feature index {int(indices.max())}, above {MAX_FEATURE_INDEX}"
            )
        if int(indices.min()) < 0:
            row = _row_of(indptr, int(np.argmax(indices < 0)))
            raise InvalidInputError(f"X row {row} holds a negative feature index")
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    values = np.ascontiguousarray(values, dtype=np.float64)
    code, row = check_rows(indptr, indices, values)
    if code == RowStatus.NOT_FINITE:
        raise InvalidInputError(f"X row {row} holds a NaN or infinite value")
    if code == RowStatus.BAD_INDEX:
        raise InvalidInputError(f"X row {row} holds a negative feature index")
    if code == RowStatus.NOT_CANONICAL:
        indptr, indices, values = canonicalize_rows(indptr, indices, values)
        overflowed = ~np.isfinite(values)
        if overflowed.any():
            row = _row_of(indptr, int(np.argmax(overflowed)))
            raise InvalidInputError(
                f"X row {row} repeats a feature index whose values add up to an infinite value"
            )
    too_large = ~(row_sqnorms(indptr, values) <= MAX_ROW_SQNORM)
    if too_large.any():
        raise InvalidInputError(
            f"X row {int(np.argmax(too_large))} holds values too large: the sum of their "
            f"squares is above {MAX_ROW_SQNORM:g}"
        )
    return indptr, indices, values


def _row_of(indptr: np.ndarray, position: int) -> int:
    """The row that holds entry ``position`` of the indices and values."""
    return int(np.searchsorted(indptr, position, side="right")) - 1


def as_labels(y: Any, n_examples: int) -> npt.NDArray[np.int8]:
    """Labels as int8 in {+1, -1}; {0, 1} and booleans are mapped (0 and False to -1)."""
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != n_examples:
        raise InvalidInputError(
            f"y must be one label per example: {n_examples} examples, y has shape {labels.shape}"
        )
    if labels.dtype == np.bool_:
        return np.where(labels, 1, -1).astype(np.int8)
    if not np.issubdtype(labels.dtype, np.number):
        raise InvalidInputError(f"labels must be numbers or booleans, got dtype {labels.dtype}")
    values = set(np.unique(labels).tolist())
    if values <= {-1, 1}:
        return labels.astype(np.int8)
    if values <= {0, 1}:
        return np.where(labels == 1, 1, -1).astype(np.int8)
    bad = sorted(values - {-1, 1}, key=str)[0]
    raise InvalidInputError(
        f"labels must be +1/-1 (or 0/1), found {bad!r}; labels seen: {sorted(values, key=str)[:5]}"
    )


def as_batch(X: Any, y: Any) -> Batch:
    """Examples and labels as a checked :class:`~streamlearn.types.Batch`."""
    indptr, indices, values = as_rows(X)
    labels = as_labels(y, indptr.shape[0] - 1)
    return Batch(indptr=indptr, indices=indices, values=values, labels=labels)


def _check_shapes(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> None:
    if indptr.ndim != 1 or indptr.shape[0] < 1:
        raise InvalidInputError("indptr must be a 1-D array of n_examples + 1 offsets")
    if indices.ndim != 1 or values.ndim != 1 or indices.shape[0] != values.shape[0]:
        raise InvalidInputError("indices and values must be 1-D arrays of the same length")
    if not np.issubdtype(indices.dtype, np.integer) and indices.shape[0]:
        raise InvalidInputError(f"feature indices must be integers, got dtype {indices.dtype}")
    if np.any(np.diff(indptr) < 0) or indptr[-1] > indices.shape[0] or indptr[0] < 0:
        raise InvalidInputError("indptr must be non-decreasing offsets within indices")


def _dense_to_csr(X: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    try:
        dense = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"X must hold numbers: {error}") from None
    if dense.ndim != 2:
        raise InvalidInputError(
            "X must be a scipy sparse matrix, a (indptr, indices, values) triple "
            f"or a 2-D array; got an array of shape {dense.shape}"
        )
    rows, cols = np.nonzero(dense != 0.0)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return indptr, cols, dense[rows, cols]
