"""Multi-label and multi-class figures, checked against scikit-learn's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    confusion_matrix,
    f1_score,
    precision_recall_fscore_support,
)

from streamlearn.evaluation import multiclass_scores, multilabel_scores


def _sample(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.random((200, 6)) < np.array([0.02, 0.1, 0.3, 0.5, 0.0, 0.05])
    noise = rng.normal(size=truth.shape)
    decisions = np.round(np.where(truth, 1.0, -1.0) * 0.8 + noise, 1)  # many ties
    decisions[:, 5] = -np.inf  # a label the model never learned
    return truth, decisions


@pytest.mark.parametrize("seed", range(5))
def test_per_label_and_averaged_figures_equal_scikit_learns(seed: int) -> None:
    truth, decisions = _sample(seed)
    labels = [3.0, 1.0, 7.0, 2.0, 9.0, 4.0]
    scores = multilabel_scores(truth, decisions, labels)
    predicted = decisions > 0
    finite = np.where(np.isinf(decisions), -1e300, decisions)  # scikit-learn refuses -inf
    precision, recall, f1, _ = precision_recall_fscore_support(
        truth, predicted, average=None, zero_division=np.nan
    )
    has_pos = truth.sum(axis=0) > 0
    for j, figures in enumerate(scores["per_label"]):
        assert figures["label"] == labels[j]
        assert figures["positives"] == int(truth[:, j].sum())
        for ours, theirs in ((figures["precision"], precision[j]), (figures["recall"], recall[j])):
            assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs)
        if has_pos[j]:
            assert figures["f1"] == pytest.approx(f1[j])
            expected_ap = average_precision_score(truth[:, j], finite[:, j])
            assert figures["average_precision"] == pytest.approx(expected_ap)
        else:
            assert math.isnan(figures["average_precision"])
    keep = np.flatnonzero(has_pos)
    assert scores["labels_without_positives"] == int((~has_pos).sum()) == 1
    assert scores["macro_average_precision"] == pytest.approx(
        average_precision_score(truth[:, keep], finite[:, keep], average="macro")
    )
    assert scores["macro_f1"] == pytest.approx(
        f1_score(truth[:, keep], predicted[:, keep], average="macro", zero_division=0)
    )
    assert scores["micro_f1"] == pytest.approx(f1_score(truth, predicted, average="micro"))
    macro_p, macro_r, _, _ = precision_recall_fscore_support(
        truth[:, keep], predicted[:, keep], average="macro", zero_division=0
    )
    assert scores["macro_precision"] == pytest.approx(macro_p)
    assert scores["macro_recall"] == pytest.approx(macro_r)


def test_accuracy_and_confusion_matrix_equal_scikit_learns() -> None:
    rng = np.random.default_rng(4)
    true = rng.integers(0, 5, size=300).astype(float)
    predicted = np.where(rng.random(300) < 0.7, true, rng.integers(0, 5, size=300))
    labels = [4.0, 0.0, 1.0, 2.0, 3.0]
    scores = multiclass_scores(true, predicted.astype(float), labels)
    assert scores["accuracy"] == pytest.approx(accuracy_score(true, predicted))
    assert scores["confusion_matrix"] == confusion_matrix(true, predicted, labels=labels).tolist()
    assert scores["labels"] == labels
