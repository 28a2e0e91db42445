"""Margins of the current solution over the buffered examples."""

from __future__ import annotations

import math

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.engine import BETA, SCALE


@kernel()
def buffer_margins(
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
    out: np.ndarray,
) -> None:
    """Smallest a . y_k over the given slots, per class, into ``out = [min_neg, min_pos]``.

    ``a . y_k = l_k (w . x_k + rho beta) + Delta^2 alpha_k`` (times the scale); a class
    with no buffered example gives +inf.
    """
    out[0] = math.inf
    out[1] = math.inf
    scale = scalars[SCALE]
    beta = scalars[BETA]
    for i in range(slots.shape[0]):
        k = slots[i]
        dot = 0.0
        for j in range(slot_start[k], slot_start[k] + slot_len[k]):
            dot += w[arena_idx[j]] * arena_val[j]
        label = float(slot_label[k])
        p = scale * (label * (dot + rho * beta) + delta_sq * slot_alpha[k])
        c = 1 if label > 0 else 0
        if p < out[c]:
            out[c] = p


@kernel()
def buffer_hull(
    slots: np.ndarray,
    slot_start: np.ndarray,
    slot_len: np.ndarray,
    coef: np.ndarray,
    arena_idx: np.ndarray,
    arena_val: np.ndarray,
    hull_w: np.ndarray,
) -> None:
    """Add ``sum_i coef_i x_(slots_i)`` into ``hull_w`` (one cell per feature), example
    after example: the sums ``numpy.bincount`` gives for the same products, without
    copying the examples out of the arena."""
    for i in range(slots.shape[0]):
        k = slots[i]
        for j in range(slot_start[k], slot_start[k] + slot_len[k]):
            hull_w[arena_idx[j]] += arena_val[j] * coef[i]
