"""One example at a time for a model bank: its canonical form and every label's decision.

A caller that holds one example (the river bank adapters) would otherwise pay several
numpy calls per example to drop zeros, sort, add up repeated indices and take the dot
products with every label's weights; :func:`canonical_decisions` does it in one call.
"""

from __future__ import annotations

import math

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.engine import BETA, SCALE
from streamlearn._kernels.rows import (
    insert_sorted,
    merge_repeats,
    sum_of_squares,
    within_norm_bound,
)
from streamlearn.types import MAX_FEATURE_INDEX, RowStatus

#: what :func:`canonical_decisions` returns instead of a count of nonzeros: negated
#: :class:`~streamlearn.types.RowStatus` codes, as plain ints (numba compiles them in)
NOT_FINITE = -int(RowStatus.NOT_FINITE)
BAD_INDEX = -int(RowStatus.BAD_INDEX)
TOO_LARGE = -int(RowStatus.TOO_LARGE)


@kernel()
def canonical_decisions(
    indices: np.ndarray,
    values: np.ndarray,
    out_idx: np.ndarray,
    out_val: np.ndarray,
    weights: np.ndarray,
    scalars: np.ndarray,
    n_labels: int,
    rho: float,
    out_f: np.ndarray,
) -> int:
    """Write the canonical form of the raw example ``indices``, ``values`` (any order,
    zeros and repeated indices allowed) to ``out_idx``, ``out_val``: zeros dropped,
    indices sorted stably, repeated indices added up in their order of appearance (as
    ``canonicalize_rows`` does); then the decision value ``scale (w . x + rho beta)`` of
    each of the first ``n_labels`` rows of ``weights`` and ``scalars`` to ``out_f``
    (indices beyond the weights weigh 0). Returns the nonzeros, or with nothing
    decided :data:`NOT_FINITE` when a value is NaN or infinite, :data:`BAD_INDEX` when
    an index is negative or above ``MAX_FEATURE_INDEX``, :data:`TOO_LARGE` when the squares of
    the values (repeated indices added up) add up to more than ``rows.MAX_ROW_SQNORM``."""
    m = 0
    for j in range(indices.shape[0]):
        v = values[j]
        if not math.isfinite(v):
            return NOT_FINITE
        k = indices[j]
        if k < 0 or k > MAX_FEATURE_INDEX:
            return BAD_INDEX
        if v == 0.0:
            continue
        insert_sorted(out_idx, out_val, m, k, v)
        m += 1
    nnz = merge_repeats(out_idx, out_val, m)
    if not within_norm_bound(sum_of_squares(out_val, 0, nnz)):  # NaN and inf included
        return TOO_LARGE
    columns = weights.shape[1]
    for lab in range(n_labels):
        dot = 0.0
        for j in range(nnz):
            k = out_idx[j]
            if k < columns:
                dot += weights[lab, k] * out_val[j]
        out_f[lab] = scalars[lab, SCALE] * (dot + rho * scalars[lab, BETA])
    return nnz
