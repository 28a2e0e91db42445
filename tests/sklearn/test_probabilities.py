"""Calibrated probabilities on a real data set: PDM's log loss on a9a.test is close to
logistic regression's, trained on the same data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from streamlearn.river import PDMClassifier as RiverPDM
from streamlearn.sklearn import PDMClassifier

ADULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"


@pytest.fixture(scope="module")
def adult() -> tuple[object, np.ndarray, object, np.ndarray, float]:
    if not (ADULT / "a9a.test").exists():
        pytest.skip(f"shared data set missing: {ADULT} (build it with ../shared/datasets/build.py)")
    X, y = load_svmlight_file(str(ADULT / "a9a.train"), n_features=123)
    X_test, y_test = load_svmlight_file(str(ADULT / "a9a.test"), n_features=123)
    reference = log_loss(y_test, LogisticRegression(max_iter=2000).fit(X, y).predict_proba(X_test))
    return X, y, X_test, y_test, reference


def test_scikit_learn_log_loss_within_10_percent_of_logistic_regression(adult: tuple) -> None:
    X, y, X_test, y_test, reference = adult
    loss = log_loss(y_test, PDMClassifier().fit(X, y).predict_proba(X_test))
    assert loss <= 1.1 * reference, (loss, reference)


@pytest.mark.parametrize("replay_at_end", [False, True], ids=["one-pass", "replayed"])
def test_river_log_loss_within_10_percent(adult: tuple, replay_at_end: bool) -> None:
    """One pass of ``learn_one`` with the defaults (the averaged weights, no replay), and
    the same followed by a replay to convergence."""
    X, y, X_test, y_test, reference = adult

    def dicts(matrix: object) -> list[dict[int, float]]:
        csr = matrix.tocsr()  # type: ignore[attr-defined]
        return [
            dict(zip(csr.indices[a:b].tolist(), csr.data[a:b].tolist(), strict=True))
            for a, b in zip(csr.indptr[:-1], csr.indptr[1:], strict=True)
        ]

    model = RiverPDM()
    for x, label in zip(dicts(X), y, strict=True):
        model.learn_one(x, bool(label > 0))
    if replay_at_end:
        model.replay()
    p = np.array([model.predict_proba_one(x)[True] for x in dicts(X_test)])
    loss = log_loss(y_test > 0, p)
    assert loss <= 1.1 * reference, (loss, reference)


def test_multiclass_probabilities_follow_predict_and_are_calibrated() -> None:
    """Temperature scaling of the one-vs-rest decision values: each row a distribution
    whose argmax is ``predict``'s, and a log loss far below a uniform guess's."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        StandardScaler().fit_transform(X), y, random_state=0
    )
    model = PDMClassifier(eps=0.05, delta=3.0).fit(X_train, y_train)
    proba = model.predict_proba(X_test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(model.classes_[np.argmax(proba, axis=1)], model.predict(X_test))
    loss = log_loss(y_test, proba)
    reference = log_loss(y_test, LogisticRegression(max_iter=5000).fit(X_train, y_train)
                         .predict_proba(X_test))  # fmt: skip
    assert loss < 0.5 < np.log(10), (loss, reference)  # uniform: log(10) = 2.30
