"""Binary classification figures from labels and decision values (pure numpy).

>>> import numpy as np
>>> scores = binary_scores(np.array([1, -1, 1, -1]), np.array([2.0, -1.0, 0.5, 0.7]))
>>> scores["accuracy"], scores["auc"]
(0.75, 0.75)
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


def binary_scores(
    labels: npt.NDArray[np.integer], decisions: npt.NDArray[np.floating]
) -> dict[str, float]:
    """Accuracy, precision, recall, F1 (positive class, predicting +1 where the decision
    is > 0), average precision and ROC AUC (ranking by decision value), with counts.

    Undefined ratios (no predicted or no actual positives) are NaN.
    """
    positive = labels > 0
    predicted = decisions > 0
    true_pos = int(np.sum(positive & predicted))
    false_pos = int(np.sum(~positive & predicted))
    false_neg = int(np.sum(positive & ~predicted))
    n = int(labels.shape[0])
    precision = _ratio(true_pos, true_pos + false_pos)
    recall = _ratio(true_pos, true_pos + false_neg)
    f1 = _ratio(2 * true_pos, 2 * true_pos + false_pos + false_neg)
    return {
        "examples": n,
        "positives": int(positive.sum()),
        "accuracy": _ratio(int(np.sum(positive == predicted)), n),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "average_precision": average_precision(positive, decisions),
        "auc": roc_auc(positive, decisions),
    }


def average_precision(
    positive: npt.NDArray[np.bool_], decisions: npt.NDArray[np.floating]
) -> float:
    """Sum over distinct thresholds of (recall step) x precision, as scikit-learn computes
    it: examples with equal decision values enter together."""
    n_pos = int(positive.sum())
    if n_pos == 0:
        return math.nan
    order = np.argsort(-decisions, kind="mergesort")
    sorted_scores = decisions[order]
    hits = np.cumsum(positive[order])
    seen = np.arange(1, positive.shape[0] + 1)
    last_of_tie = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]
    hits, seen = hits[last_of_tie], seen[last_of_tie]
    recall_steps = np.diff(np.r_[0, hits]) / n_pos
    return float(np.sum(recall_steps * hits / seen))


def roc_auc(positive: npt.NDArray[np.bool_], decisions: npt.NDArray[np.floating]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    n_pos = int(positive.sum())
    n_neg = int(positive.shape[0] - n_pos)
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = _average_ranks(decisions)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _average_ranks(values: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    starts = np.r_[True, sorted_values[1:] != sorted_values[:-1]]
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], values.shape[0]] - 1
    ranks = np.empty(values.shape[0])
    ranks[order] = (first[group] + last[group]) / 2.0 + 1.0
    return ranks


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else math.nan
