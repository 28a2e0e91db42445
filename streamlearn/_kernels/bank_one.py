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
    (indices beyond the weights weigh 0). Returns the nonzeros, or -1 when a value is
    NaN or infinite (with nothing decided)."""
    m = 0
    for j in range(indices.shape[0]):
        v = values[j]
        if not math.isfinite(v):
            return -1
        if v == 0.0:
            continue
        i = indices[j]
        p = m
        while p > 0 and out_idx[p - 1] > i:
            out_idx[p] = out_idx[p - 1]
            out_val[p] = out_val[p - 1]
            p -= 1
        out_idx[p] = i
        out_val[p] = v
        m += 1
    nnz = 0
    for j in range(m):
        if nnz > 0 and out_idx[nnz - 1] == out_idx[j]:
            out_val[nnz - 1] += out_val[j]
        else:
            out_idx[nnz] = out_idx[j]
            out_val[nnz] = out_val[j]
            nnz += 1
    columns = weights.shape[1]
    for lab in range(n_labels):
        dot = 0.0
        for j in range(nnz):
            k = out_idx[j]
            if k < columns:
                dot += weights[lab, k] * out_val[j]
        out_f[lab] = scalars[lab, SCALE] * (dot + rho * scalars[lab, BETA])
    return nnz
