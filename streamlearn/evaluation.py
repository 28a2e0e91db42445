"""Classification figures from labels and decision values (pure numpy): binary, one-vs-rest
multi-label (per label, macro and micro averages) and multi-class.

>>> import numpy as np
>>> scores = binary_scores(np.array([1, -1, 1, -1]), np.array([2.0, -1.0, 0.5, 0.7]))
>>> scores["accuracy"], scores["auc"]
(0.75, 0.75)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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


def multilabel_scores(
    truth: npt.NDArray[np.bool_],
    decisions: npt.NDArray[np.floating],
    labels: Sequence[float],
) -> dict[str, Any]:
    """One-vs-rest figures: per label and averaged.

    ``truth[i, j]`` says whether example i carries ``labels[j]``; ``decisions[i, j]`` is
    its decision value for that label (a label is predicted where it is > 0; a label
    the model never learned can be given -inf). Per label: positives, predicted,
    precision, recall, F1 and average precision (ranking the examples by decision value).
    ``macro_average_precision`` (the PAUM paper's MAP), ``macro_f1``, ``macro_precision``
    and ``macro_recall`` average over the labels with at least one positive example (the
    others, counted in ``labels_without_positives``, have no recall or average
    precision); ``micro_*`` pool the counts of every label.

    >>> truth = np.array([[True, False], [False, True], [True, True]])
    >>> scores = multilabel_scores(truth, np.array([[1.0, -1], [-1, 2], [0.5, -0.5]]), [3, 7])
    >>> scores["macro_average_precision"], scores["micro_f1"], scores["macro_f1"]
    (1.0, 0.8571428571428571, 0.8333333333333333)
    """
    predicted = decisions > 0
    per_label = []
    for j, value in enumerate(labels):
        per_label.append(
            _label_figures(float(value), truth[:, j], predicted[:, j], decisions[:, j])
        )
    counted = [p for p in per_label if p["positives"] > 0]
    true_pos = int(np.sum(truth & predicted))
    false_pos = int(np.sum(~truth & predicted))
    false_neg = int(np.sum(truth & ~predicted))
    return {
        "examples": int(truth.shape[0]),
        "labels": len(per_label),
        "labels_without_positives": len(per_label) - len(counted),
        "macro_average_precision": _mean([p["average_precision"] for p in counted]),
        "macro_precision": _mean([p["precision"] for p in counted]),
        "macro_recall": _mean([p["recall"] for p in counted]),
        "macro_f1": _mean([p["f1"] for p in counted]),
        "micro_precision": _ratio(true_pos, true_pos + false_pos),
        "micro_recall": _ratio(true_pos, true_pos + false_neg),
        "micro_f1": _ratio(2 * true_pos, 2 * true_pos + false_pos + false_neg),
        "per_label": per_label,
    }


def multiclass_scores(
    true: npt.NDArray[np.floating], predicted: npt.NDArray[np.floating], labels: Sequence[float]
) -> dict[str, Any]:
    """Accuracy and the confusion matrix (rows: true label, columns: predicted label, in
    the order of ``labels``; a value outside ``labels`` is not counted in the matrix).

    >>> scores = multiclass_scores(np.array([1.0, 2, 2]), np.array([1.0, 2, 1]), [1, 2])
    >>> scores["accuracy"], scores["confusion_matrix"]
    (0.6666666666666666, [[1, 0], [1, 1]])
    """
    position = {float(value): j for j, value in enumerate(labels)}
    matrix = np.zeros((len(position), len(position)), dtype=np.int64)
    for t, p in zip(true.tolist(), predicted.tolist(), strict=True):
        if t in position and p in position:
            matrix[position[t], position[p]] += 1
    n = int(true.shape[0])
    return {
        "examples": n,
        "accuracy": _ratio(int(np.sum(true == predicted)), n),
        "labels": [float(value) for value in labels],
        "confusion_matrix": matrix.tolist(),
    }


def _label_figures(
    value: float,
    truth: npt.NDArray[np.bool_],
    predicted: npt.NDArray[np.bool_],
    decisions: npt.NDArray[np.floating],
) -> dict[str, Any]:
    true_pos = int(np.sum(truth & predicted))
    false_pos = int(np.sum(~truth & predicted))
    false_neg = int(np.sum(truth & ~predicted))
    return {
        "label": value,
        "positives": int(truth.sum()),
        "predicted": int(predicted.sum()),
        "precision": _ratio(true_pos, true_pos + false_pos),
        "recall": _ratio(true_pos, true_pos + false_neg),
        "f1": _ratio(2 * true_pos, 2 * true_pos + false_pos + false_neg),
        "average_precision": average_precision(truth, decisions),
    }


def _mean(values: list[float]) -> float:
    """Mean of the values; NaN ones count as 0 (a label with positives but no predicted
    positive has precision 0/0: it found none of them), NaN when there are none."""
    if not values:
        return math.nan
    return float(np.mean([0.0 if math.isnan(v) else v for v in values]))
