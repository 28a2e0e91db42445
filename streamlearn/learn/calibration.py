"""Probabilities from decision values: Platt scaling fitted on the window.

A linear classifier's decision value f(x) says which side and how far, not how likely.
Platt scaling maps it through a sigmoid fitted to the labels::

    P(y = +1 | x) = 1 / (1 + exp(-(slope * z + offset)))

where ``z`` is the decision value in margin units (``f(x) / unit``, with ``unit`` the
model's margin scale, see :func:`margin_unit`), so that the fitted pair stays meaningful
while the weights grow. The pair is fitted by Newton's method with a backtracking line
search on the window's examples, with Platt's smoothed targets ((N+ + 1) / (N+ + 2) for
the positives, 1 / (N- + 2) for the negatives): a separable window still gives a finite
slope. [Platt 1999; Lin, Lin and Weng 2007, "A note on Platt's probabilistic outputs
for support vector machines".]

>>> z = np.array([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, -0.2, 0.1])
>>> y = np.array([-1, -1, -1, 1, 1, 1, 1, -1])
>>> platt = fit_platt(z, y)
>>> platt.slope > 0, bool(np.all(np.diff(platt.probability(np.sort(z))) > 0))
(True, True)
>>> fit_platt(np.array([]), np.array([]))  # nothing to fit: the prior
Platt(slope=1.0, offset=0.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Newton iterations at most, and the gradient's size (per example) that ends them
MAX_ITERATIONS = 100
TOLERANCE = 1e-7
#: added to the Hessian's diagonal, as Lin, Lin and Weng do, so it is always invertible
RIDGE = 1e-12


@dataclass(frozen=True)
class Platt:
    """A fitted sigmoid over decision values in margin units."""

    slope: float = 1.0
    offset: float = 0.0

    def probability(self, z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """P(y = +1) for each ``z`` (in margin units)."""
        u = self.slope * np.asarray(z, dtype=np.float64) + self.offset
        return np.asarray(0.5 * (1.0 + np.tanh(0.5 * u)))  # the logistic, without overflow

    def probability_one(self, z: float) -> float:
        """:meth:`probability` of one decision value, in plain floats."""
        return 0.5 * (1.0 + math.tanh(0.5 * (self.slope * z + self.offset)))


def margin_unit(sqnorm: float, updates: float, convex: bool) -> float:
    """The scale of decision values: ||a||^2 / t, the margin the bound ||a|| / t implies
    times ||a|| (a decision value of ``unit`` lies on that margin); ||a||^2 for a convex
    combination (Kozinec, t = 1). 1.0 before any update.

    >>> margin_unit(4.0, 2.0, False), margin_unit(4.0, 2.0, True), margin_unit(0.0, 0.0, False)
    (2.0, 4.0, 1.0)
    """
    if sqnorm <= 0.0 or updates <= 0.0:
        return 1.0
    return sqnorm if convex else sqnorm / updates


def fit_platt(z: npt.NDArray[np.float64], y: npt.NDArray[np.int64]) -> Platt:
    """The sigmoid that best predicts the labels ``y`` (+1/-1) from ``z``, by maximum
    likelihood with Platt's smoothed targets; the prior ``Platt()`` when ``z`` is empty."""
    z = np.asarray(z, dtype=np.float64)
    positive = np.asarray(y) > 0
    n_pos = int(positive.sum())
    n_neg = int(positive.shape[0] - n_pos)
    if n_pos + n_neg == 0:
        return Platt()
    target = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    slope, offset = 0.0, math.log((n_pos + 1.0) / (n_neg + 1.0))
    loss = _loss(z, target, slope, offset)
    for _ in range(MAX_ITERATIONS):
        p = 0.5 * (1.0 + np.tanh(0.5 * (slope * z + offset)))
        residual = p - target
        g_slope, g_offset = float(residual @ z), float(residual.sum())
        if max(abs(g_slope), abs(g_offset)) < TOLERANCE * z.shape[0]:
            break
        weight = p * (1.0 - p)
        h11 = float(weight @ (z * z)) + RIDGE
        h12 = float(weight @ z)
        h22 = float(weight.sum()) + RIDGE
        det = h11 * h22 - h12 * h12
        d_slope = -(h22 * g_slope - h12 * g_offset) / det
        d_offset = -(-h12 * g_slope + h11 * g_offset) / det
        decrease = g_slope * d_slope + g_offset * d_offset
        step = 1.0
        while step >= 1e-10:
            new_slope, new_offset = slope + step * d_slope, offset + step * d_offset
            new_loss = _loss(z, target, new_slope, new_offset)
            if new_loss < loss + 1e-4 * step * decrease:
                break
            step /= 2.0
        else:
            break  # no step decreases the loss: as good as it gets
        slope, offset, loss = new_slope, new_offset, new_loss
    return Platt(slope, offset)


def _loss(z: npt.NDArray[np.float64], target: npt.NDArray[np.float64], a: float, b: float) -> float:
    """The negative log-likelihood of the smoothed targets under sigmoid(a z + b)."""
    u = a * z + b
    # -[t log p + (1 - t) log(1 - p)] = log(1 + exp(-u)) + (1 - t) u
    return float(np.logaddexp(0.0, -u).sum() + ((1.0 - target) * u).sum())
