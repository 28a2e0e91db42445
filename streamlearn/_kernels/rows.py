"""Row-wise checks and products on CSR arrays."""

from __future__ import annotations

import math

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn.types import RowStatus

# the codes as plain ints, which numba compiles in as constants
_OK, _NOT_FINITE = int(RowStatus.OK), int(RowStatus.NOT_FINITE)
_BAD_INDEX, _NOT_CANONICAL = int(RowStatus.BAD_INDEX), int(RowStatus.NOT_CANONICAL)

#: The largest squared norm ||x||^2 of an example that a learner is given: every parser
#: and one-example kernel refuses a larger one (``values too large``). 1e50, so a single
#: value may reach 1e25.
#:
#: A finite ||x||^2 is not enough, because the learners multiply such quantities. With
#: S = ||x||^2 + rho^2 + Delta^2 (an augmented, extended example; Delta ``'auto'`` is
#: R/10) and t the update count, |a . y| <= t S and ||a||^2 <= t^2 S, and the highest
#: degrees computed are:
#:
#: - PFM's multiple updates (``rules.multiplicity``) square a1 = 2 p (q - beta^2) and
#:   multiply a2 = q (q - beta^2) by a0 = p^2 - beta^2 ||a||^2: up to 4 t^2 S^4 each;
#: - PDM's multiple updates (b^2 and 4 a c of their quadratic) and the certificate's
#:   squared scores: of order t^2 S^2;
#: - Kozinec keeps w = a / scale with a scale down to 1e-100 (``engine._MIN_SCALE``), so
#:   ||w||^2 <= 1e200 S, and the certificate adds up squared scores (w . x)^2 <=
#:   1e200 S^2 over the buffer.
#:
#: With S near 1e50 all of these stay below float64's 1.8e308 for t up to 1e53 (PFM;
#: PDM up to 1e100) and for Kozinec's sums over buffers of up to 1e7 examples, while
#: scale-free rules bring t back below 2^40 before every replay pass and the others add
#: 1 to t per update. At 1e100, PFM's a1^2 (4 beta^2 S^3 t^2 when p is near
#: -beta ||a||) would overflow from t = 1e6 on for beta = 0.01; a finite ||x||^2, the
#: bound before, let three lines with values of 7 and 1e120 overflow PDM's weights in
#: replay.
MAX_ROW_SQNORM = 1e50


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


@kernel(inline=True)
def within_norm_bound(sqnorm: float) -> bool:
    """Whether an example of squared norm ``sqnorm`` may be learned: at most
    :data:`MAX_ROW_SQNORM` (NaN is not)."""
    return sqnorm <= MAX_ROW_SQNORM


@kernel(allocates=True, releases_gil=True)
def sqnorms_of_rows(indptr: np.ndarray, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """||x_i||^2 of the rows ``rows`` (each added in order, as :func:`row_sqnorms` adds)."""
    out = np.empty(rows.shape[0])
    for k in range(rows.shape[0]):
        i = rows[k]
        out[k] = sum_of_squares(values, indptr[i], indptr[i + 1])
    return out


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
