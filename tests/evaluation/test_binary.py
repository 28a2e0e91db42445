"""The binary figures agree with scikit-learn's on random and tied scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn import metrics

from streamlearn.evaluation import average_precision, binary_scores, roc_auc


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", [False, True])
def test_figures_match_scikit_learn(seed: int, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    labels = np.where(rng.random(300) < 0.3, 1, -1)
    decisions = rng.normal(size=300) + 0.8 * labels
    if ties:
        decisions = np.round(decisions, 1)
    scores = binary_scores(labels, decisions)
    predicted = np.where(decisions > 0, 1, -1)
    assert scores["accuracy"] == pytest.approx(metrics.accuracy_score(labels, predicted))
    assert scores["precision"] == pytest.approx(metrics.precision_score(labels, predicted))
    assert scores["recall"] == pytest.approx(metrics.recall_score(labels, predicted))
    assert scores["f1"] == pytest.approx(metrics.f1_score(labels, predicted))
    expected_ap = metrics.average_precision_score(labels, decisions)
    assert scores["average_precision"] == pytest.approx(expected_ap)
    assert scores["auc"] == pytest.approx(metrics.roc_auc_score(labels, decisions))


def test_undefined_figures_are_nan() -> None:
    labels = np.array([-1, -1])
    scores = binary_scores(labels, np.array([-1.0, -2.0]))
    assert math.isnan(scores["precision"]) and math.isnan(scores["recall"])
    assert math.isnan(average_precision(labels > 0, np.array([0.0, 1.0])))
    assert math.isnan(roc_auc(np.array([True, True]), np.array([0.0, 1.0])))
