"""The certificate's pass over the buffered examples: margins and the hull share."""

from __future__ import annotations

import math

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.engine import BETA, SCALE


@kernel()
def buffer_certificate(
    slots: np.ndarray,
    slot_start: np.ndarray,
    slot_len: np.ndarray,
    slot_label: np.ndarray,
    slot_alpha: np.ndarray,
    arena_idx: np.ndarray,
    arena_val: np.ndarray,
    w: np.ndarray,
    scalars: np.ndarray,
    rho: float,
    delta_sq: float,
    coef: np.ndarray,
    lowest: np.ndarray,
    hull_w: np.ndarray,
) -> None:
    """One pass over the given slots, example after example, for two figures.

    ``lowest = [min_neg, min_pos]``: the smallest a . y_k per class, with
    ``a . y_k = l_k (w . x_k + rho beta) + Delta^2 alpha_k`` (times the scale); a class
    with no buffered example gives +inf. ``hull_w`` (one cell per feature, zeroed by the
    caller) receives ``sum_i coef_i x_(slots_i)``, in the order ``numpy.bincount`` would
    add the same products.
    """
    lowest[0] = math.inf
    lowest[1] = math.inf
    scale = scalars[SCALE]
    beta = scalars[BETA]
    for i in range(slots.shape[0]):
        k = np.uint64(slots[i])
        dot = 0.0
        # unsigned positions and indices skip numba's negative-index checks (engine.py)
        j = np.uint64(slot_start[k])
        end = j + np.uint64(slot_len[k])
        while j < end:
            feature = np.uint64(arena_idx[j])
            dot += w[feature] * arena_val[j]
            hull_w[feature] += arena_val[j] * coef[i]
            j += np.uint64(1)
        label = float(slot_label[k])
        p = scale * (label * (dot + rho * beta) + delta_sq * slot_alpha[k])
        c = 1 if label > 0 else 0
        if p < lowest[c]:
            lowest[c] = p
