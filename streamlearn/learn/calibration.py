"""Probabilities from decision values: Platt scaling fitted on the window.

A linear classifier's decision value f(x) says which side and how far, not how likely.
Platt scaling maps it through a sigmoid fitted to the labels::

    P(y = +1 | x) = 1 / (1 + exp(-slope * z))

where ``z`` is the decision value in margin units (``f(x) / unit``, with ``unit`` the
model's margin scale ||a||^2 / t, ``LinearLearner.margin_unit``), so that the fitted
slope stays meaningful while the weights grow. The sigmoid passes through 0.5 on the
decision boundary (Platt's offset is held at 0), so the more probable label is always
the predicted one. The slope is fitted by Newton's method with a backtracking line
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
Platt(slope=1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

#: Newton iterations at most, and the gradient's size (per example) that ends them
MAX_ITERATIONS = 100
TOLERANCE = 1e-7
#: added to the second derivative, as Lin, Lin and Weng do, so it is never 0
RIDGE = 1e-12


@dataclass(frozen=True)
class Platt:
    """A fitted sigmoid over decision values in margin units."""

    slope: float = 1.0

    def probability(self, z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """P(y = +1) for each ``z`` (in margin units)."""
        u = self.slope * np.asarray(z, dtype=np.float64)
        return np.asarray(0.5 * (1.0 + np.tanh(0.5 * u)))  # the logistic, without overflow

    def probability_one(self, z: float) -> float:
        """:meth:`probability` of one decision value, in plain floats."""
        return 0.5 * (1.0 + math.tanh(0.5 * self.slope * z))


def fit_platt(z: npt.NDArray[np.float64], y: npt.NDArray[Any]) -> Platt:
    """The sigmoid through 0.5 at z = 0 whose slope best predicts the labels ``y``
    (+1/-1) from ``z``, by maximum likelihood with Platt's smoothed targets; the prior
    ``Platt()`` when ``z`` is empty or says nothing (all zero)."""
    z = np.asarray(z, dtype=np.float64)
    positive = np.asarray(y) > 0
    n_pos = int(positive.sum())
    n_neg = int(positive.shape[0] - n_pos)
    if n_pos + n_neg == 0 or not np.any(z):
        return Platt()
    target = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    slope = 0.0
    loss = _loss(z, target, slope)
    for _ in range(MAX_ITERATIONS):
        p = 0.5 * (1.0 + np.tanh(0.5 * slope * z))
        gradient = float((p - target) @ z)
        if abs(gradient) < TOLERANCE * z.shape[0]:
            break
        step_size = -gradient / (float((p * (1.0 - p)) @ (z * z)) + RIDGE)
        step = 1.0
        while step >= 1e-10:
            new_slope = slope + step * step_size
            new_loss = _loss(z, target, new_slope)
            if new_loss < loss + 1e-4 * step * gradient * step_size:
                break
            step /= 2.0
        else:
            break  # no step decreases the loss: as good as it gets
        slope, loss = new_slope, new_loss
    return Platt(slope)


def _loss(z: npt.NDArray[np.float64], target: npt.NDArray[np.float64], slope: float) -> float:
    """The negative log-likelihood of the smoothed targets under sigmoid(slope z)."""
    u = slope * z
    # -[t log p + (1 - t) log(1 - p)] = log(1 + exp(-u)) + (1 - t) u
    return float(np.logaddexp(0.0, -u).sum() + ((1.0 - target) * u).sum())


@dataclass(frozen=True)
class Softmax:
    """Multi-class probabilities from one-vs-rest decision values: the softmax of the
    decision values times one fitted ``scale`` (temperature scaling), so the most
    probable class is always the one of the largest decision value.

    >>> Softmax(2.0).probabilities(np.array([[1.0, 0.0, -1.0]])).round(3).tolist()
    [[0.867, 0.117, 0.016]]
    """

    scale: float = 1.0

    def probabilities(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """One row per example, one column per class, each row adding up to 1."""
        u = self.scale * np.asarray(scores, dtype=np.float64)
        u = u - u.max(axis=1, keepdims=True)
        e = np.exp(u)
        result: npt.NDArray[np.float64] = e / e.sum(axis=1, keepdims=True)
        return result


def fit_temperature(scores: npt.NDArray[np.float64], truth: npt.NDArray[np.int64]) -> Softmax:
    """The scale s >= 0 whose softmax(s * scores) best predicts the classes ``truth``
    (column indices), by maximum likelihood; Newton's method on a function convex in s
    [Guo, Pleiss, Sun and Weinberger 2017, "On calibration of modern neural networks"].
    A separable sample would drive s to infinity: like Platt's targets, each example's
    true class counts (n + 1) / (n + 2) and the others share the rest. The prior
    ``Softmax()`` when there is nothing to fit.

    >>> scores = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 0.0], [0.0, 0.5], [1.0, 0.0]])
    >>> fit_temperature(scores, np.array([0, 1, 0, 1, 1])).scale > 0
    True
    """
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    if n == 0 or scores.shape[1] < 2 or not np.any(scores):
        return Softmax()
    k = scores.shape[1]
    target = np.full(scores.shape, 1.0 / ((n + 2.0) * (k - 1)))
    target[np.arange(n), truth] = (n + 1.0) / (n + 2.0)
    expected_true = float((target * scores).sum())

    def loss(s: float) -> float:  # sum_i logsumexp(s f_i) - s sum_ij t_ij f_ij
        u = s * scores
        top = u.max(axis=1)
        return float((top + np.log(np.exp(u - top[:, None]).sum(axis=1))).sum()) - s * expected_true

    scale, current = 0.0, loss(0.0)
    for _ in range(MAX_ITERATIONS):
        p = Softmax(scale).probabilities(scores)
        mean = (p * scores).sum(axis=1)
        gradient = float(mean.sum()) - expected_true
        if abs(gradient) < TOLERANCE * n:
            break
        curvature = float(((p * scores * scores).sum(axis=1) - mean * mean).sum()) + RIDGE
        step = 1.0
        while step >= 1e-10:  # backtracking: a full Newton step may overshoot
            candidate = max(0.0, scale - step * gradient / curvature)
            value = loss(candidate)
            if value <= current:
                break
            step /= 2.0
        else:
            break
        if candidate == scale:
            break
        scale, current = candidate, value
    return Softmax(scale)
