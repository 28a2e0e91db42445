"""The certificate's pass over the buffered examples: margins and the hull share."""

from __future__ import annotations

import math

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.engine import BETA, SCALE


@kernel(releases_gil=True)
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
    scores: np.ndarray,
) -> None:
    """One pass over the given slots, example after example, for three figures.

    ``lowest = [min_neg, min_pos]``: the smallest a . y_k per class, with
    ``a . y_k = l_k (w . x_k + rho beta) + Delta^2 alpha_k`` (times the scale); a class
    with no buffered example gives +inf. ``hull_w`` (one cell per feature, zeroed by the
    caller) receives ``sum_i coef_i x_(slots_i)``, in the order ``numpy.bincount`` would
    add the same products. ``scores[i]`` receives ``l_k (w . x_k + rho beta)`` of slot
    ``slots[i]``, in the engine's units (without the scale).
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
        scores[i] = label * (dot + rho * beta)
        p = scale * (scores[i] + delta_sq * slot_alpha[k])
        c = 1 if label > 0 else 0
        if p < lowest[c]:
            lowest[c] = p


@kernel(allocates=True, releases_gil=True)
def optimal_slack_margin(scores: np.ndarray, u_sqnorm: float, delta_sq: float) -> float:
    """The margin of the direction u = (w, beta) over examples with these ``scores``
    ``s_k = l_k u . z_k`` when every example's slack coordinate is chosen at its best: the
    largest min_k (c s_k + Delta zeta_k) / sqrt(c^2 ||u||^2 + ||zeta||^2) over c > 0 and
    zeta >= 0, a margin of a point of the extended space and so a lower bound on the
    maximum margin of the examples.

    For a required functional margin of 1, zeta_k = max(0, 1 - c s_k) / Delta and the
    margin is 1 / sqrt(min_c g(c)) with g(c) = c^2 ||u||^2 + sum_k max(0, 1 - c s_k)^2 /
    Delta^2 (the 2-norm soft margin's primal along u): convex and piecewise quadratic in
    c, minimised exactly by walking its breakpoints 1 / s_k in increasing order. With
    Delta = 0 it is min_k s_k / ||u||. NaN for no example, or u = 0 with Delta = 0.
    """
    n = scores.shape[0]
    if n == 0:
        return math.nan
    if delta_sq == 0.0:
        if u_sqnorm <= 0.0:
            return math.nan
        return np.min(scores) / math.sqrt(u_sqnorm)
    positive = -np.sort(-scores[scores > 0.0])  # breakpoints 1 / s in increasing order
    total = 0.0  # sum and sum of squares of the scores of the examples still active
    squares = 0.0
    for k in range(n):
        total += scores[k]
        squares += scores[k] * scores[k]
    c = 0.0
    curvature = delta_sq * u_sqnorm
    for j in range(positive.shape[0] + 1):
        c = total / (curvature + squares) if total > 0.0 and curvature + squares > 0.0 else 0.0
        if j == positive.shape[0] or c * positive[j] <= 1.0:
            break
        total -= positive[j]
        squares -= positive[j] * positive[j]
    g = c * c * u_sqnorm
    for k in range(n):
        short = 1.0 - c * scores[k]
        if short > 0.0:
            g += short * short / delta_sq
    return 1.0 / math.sqrt(g)
