"""The margin certificate of a learner's solution on its buffered examples.

For any run of perceptron-family updates gamma_d <= ||a|| / t (ALGORITHMS.md): the
achieved margin over that bound says how far the solution is from the maximum margin,
at no cost. The bound is taken over the buffered examples' own share of ``a`` (see
:class:`Certificate`), which is all of ``a`` under window semantics. The achieved margin
is that of the learner's direction (w, beta) with the buffered examples' slack
coordinates chosen at their best (:func:`~streamlearn._kernels.margins.optimal_slack_margin`):
never below the margin of a itself, whose slack coordinates are the update counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from streamlearn._kernels import buffer_certificate
from streamlearn._kernels.margins import optimal_slack_margin
from streamlearn.learn.state import LearnerState


@dataclass(frozen=True)
class Certificate:
    """The figures behind the certificate, in the engine's units.

    ``norm`` is ||a|| restricted to the coordinates the buffered examples live in (w,
    beta and their own slack coordinates); ``hull_norm`` is ||h|| for the sum
    ``h = sum_k alpha_k y_k`` over the buffered examples, ``total`` = sum_k alpha_k;
    ``lowest_negative`` and ``lowest_positive`` are the smallest a . y_k over the
    buffered negatives and positives (+inf for a class with none). ``h / total`` lies
    in the convex hull of the buffer, so ``hull_norm / total`` bounds the buffer's
    maximum margin from above even after older examples were evicted (their
    contributions stay in the weights). Without eviction ``h = a`` and ``total = t``.
    """

    norm: float
    hull_norm: float
    total: float
    lowest_negative: float
    lowest_positive: float
    #: the margin of (w, beta) with the best slack coordinates (NaN without examples)
    achieved: float

    @property
    def gap(self) -> float:
        """1 - achieved / upper bound: how far the solution may be from the maximum margin,
        relatively (NaN when either is not defined)."""
        bound = self.upper_bound
        return 1.0 - self.achieved / bound if math.isfinite(bound) and bound > 0 else math.nan

    @property
    def upper_bound(self) -> float:
        """||h|| / s: an upper bound on the buffer's maximum directional margin."""
        return self.hull_norm / self.total if self.total > 0 else math.inf

    def class_margins(self) -> tuple[float, float]:
        """Smallest a . y_k / ||a|| over the negatives and the positives (NaN when a = 0)."""
        if self.norm == 0.0:
            return (math.nan, math.nan)
        return (self.lowest_negative / self.norm, self.lowest_positive / self.norm)


def certificate(state: LearnerState, rho: float) -> Certificate:
    """The :class:`Certificate` of ``state``, from one pass over its buffered examples."""
    buf = state.buffer
    slots = buf.live_slots()
    alpha = buf.slot_alpha[slots]
    delta_sq = state.delta_sq
    slack_sq = delta_sq * float(alpha @ alpha)
    weights = state.weights[: state.n_features]
    beta = state.beta
    own = state.scale * math.sqrt(float(weights @ weights) + beta * beta + slack_sq)
    coef = alpha * buf.slot_label[slots]
    lowest = np.empty(2)
    hull_w = np.zeros(state.n_features)
    scores = np.empty(slots.shape[0])
    buffer_certificate(
        slots, buf.slot_start, buf.slot_len, buf.slot_label, buf.slot_alpha, buf.arena_idx,
        buf.arena_val, state.weights, state.scalars, rho, delta_sq, coef, lowest, hull_w,
        scores,
    )  # fmt: skip
    hull_beta = rho * float(coef.sum())
    hull = math.sqrt(float(hull_w @ hull_w) + hull_beta * hull_beta + slack_sq)
    found = Certificate(own, hull, float(alpha.sum()), float(lowest[0]), float(lowest[1]), 0.0)
    optimal = optimal_slack_margin(scores, float(weights @ weights) + beta * beta, delta_sq)
    with_counts = min(found.class_margins())  # a itself: never above the optimal one
    achieved = max(optimal, with_counts) if math.isfinite(with_counts) else optimal
    return replace(found, achieved=achieved)
