"""Row-wise checks and products on CSR arrays."""

from __future__ import annotations

import math

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn.types import RowStatus

# the codes as plain ints, which numba compiles in as constants
_OK, _NOT_FINITE = int(RowStatus.OK), int(RowStatus.NOT_FINITE)
_BAD_INDEX, _NOT_CANONICAL = int(RowStatus.BAD_INDEX), int(RowStatus.NOT_CANONICAL)


@kernel(allocates=True, releases_gil=True)
def check_rows(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> tuple[int, int]:
    """First problem found, as (:class:`~streamlearn.types.RowStatus` code, row);
    ``(OK, -1)`` when all rows are clean: ``NOT_FINITE``, ``BAD_INDEX`` (a negative
    index) or ``NOT_CANONICAL``.

    ``NOT_CANONICAL`` (indices not strictly increasing within a row) is reported only
    when no worse problem exists anywhere: such rows can be repaired by
    :func:`canonicalize_rows`.
    """
    unsorted_row = -1
    for i in range(indptr.shape[0] - 1):
        previous = -1
        for j in range(indptr[i], indptr[i + 1]):
            if not math.isfinite(values[j]):
                return _NOT_FINITE, i
            if indices[j] < 0:
                return _BAD_INDEX, i
            if indices[j] <= previous and unsorted_row < 0:
                unsorted_row = i
            previous = indices[j]
    if unsorted_row >= 0:
        return _NOT_CANONICAL, unsorted_row
    return _OK, -1


@kernel(allocates=True)
def canonicalize_rows(
    indptr: np.ndarray, indices: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort each row's indices and add up duplicates (scipy's canonical CSR form)."""
    n = indptr.shape[0] - 1
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    out_idx = np.empty(indices.shape[0], dtype=indices.dtype)
    out_val = np.empty(values.shape[0], dtype=np.float64)
    pos = 0
    for i in range(n):
        lo, hi = indptr[i], indptr[i + 1]
        order = np.argsort(indices[lo:hi], kind="mergesort")
        last = -1
        for o in order:
            j = lo + o
            if indices[j] == last:
                out_val[pos - 1] += values[j]
            else:
                out_idx[pos] = indices[j]
                out_val[pos] = values[j]
                last = indices[j]
                pos += 1
        out_ptr[i + 1] = pos
    return out_ptr, out_idx[:pos], out_val[:pos]


@kernel(inline=True)
def insert_sorted(idx: np.ndarray, val: np.ndarray, m: int, i: int, v: float) -> None:
    """Insert (i, v) into the index-sorted ``idx[:m]``, ``val[:m]`` after every entry with
    an index <= i (one step of a stable insertion sort; room for m + 1 entries)."""
    p = m
    while p > 0 and idx[p - 1] > i:
        idx[p] = idx[p - 1]
        val[p] = val[p - 1]
        p -= 1
    idx[p] = i
    val[p] = v


@kernel(inline=True)
def merge_repeats(idx: np.ndarray, val: np.ndarray, m: int) -> int:
    """Add up repeated indices of the index-sorted ``idx[:m]``, ``val[:m]`` in place, in
    their order; returns how many entries remain."""
    out = 0
    for j in range(m):
        if out > 0 and idx[out - 1] == idx[j]:
            val[out - 1] += val[j]
        else:
            idx[out] = idx[j]
            val[out] = val[j]
            out += 1
    return out


@kernel(inline=True)
def sum_of_squares(values: np.ndarray, start: int, stop: int) -> float:
    """||x||^2 of the entries ``values[start:stop]``, added in their order."""
    acc = 0.0
    for j in range(start, stop):
        acc += values[j] * values[j]
    return acc


@kernel(releases_gil=True)
def all_ones(values: np.ndarray) -> bool:
    """Whether every value is 1.0 (binary features), stopping at the first that is not."""
    for j in range(values.shape[0]):  # noqa: SIM110 - numba compiles loops, not generators
        if values[j] != 1.0:
            return False
    return True


@kernel(allocates=True, releases_gil=True)
def row_sqnorms(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """||x_i||^2 of every row."""
    n = indptr.shape[0] - 1
    out = np.empty(n)
    for i in range(n):
        out[i] = sum_of_squares(values, indptr[i], indptr[i + 1])
    return out


@kernel(allocates=True, releases_gil=True)
def decision_values(
    indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, w: np.ndarray, bias: float
) -> np.ndarray:
    """w . x_i + bias for every row; features beyond ``w`` have weight 0."""
    n = indptr.shape[0] - 1
    out = np.empty(n)
    for i in range(n):
        out[i] = dot_within(indices, values, indptr[i], indptr[i + 1], w, bias)
    return out


@kernel(inline=True)
def dot_within(
    indices: np.ndarray, values: np.ndarray, start: int, stop: int, w: np.ndarray, acc: float
) -> float:
    """``acc`` + w . x over entries ``start:stop``; features beyond ``w`` have weight 0."""
    size = np.uint64(w.shape[0])
    # unsigned positions and indices skip numba's negative-index checks (engine.py)
    j = np.uint64(start)
    end = np.uint64(stop)
    while j < end:
        feature = np.uint64(indices[j])
        if feature < size:
            acc += w[feature] * values[j]
        j += np.uint64(1)
    return acc
