"""The scikit-learn estimators with more than two classes: a one-vs-rest model bank."""

from __future__ import annotations

import pickle
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import Perceptron
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from streamlearn.checkpoint import decode, encode
from streamlearn.learn.bank import ModelBank
from streamlearn.sklearn import ESTIMATORS, PAUMClassifier, PDMClassifier, PerceptronClassifier

#: PFM's beta has no default; the t-margitron's default zeta is slow to converge
PARAMS: dict[str, dict[str, Any]] = {"pfm": {"beta": 0.001}, "t-margitron": {"zeta": 0.8}}


@cache
def _iris() -> tuple[npt.NDArray[np.float64], npt.NDArray[Any]]:
    """Iris, standardised, with the class names as labels (three classes)."""
    data = load_iris()
    X = StandardScaler().fit_transform(data.data)
    return X, data.target_names[data.target]


def _bank_twin(estimator: Any, X: Any, y: npt.NDArray[Any]) -> ModelBank:
    learner = estimator.learner_class(**estimator._learner_params())
    bank = ModelBank(learner).declare_labels(np.arange(len(np.unique(y))))
    return bank.learn(X, np.searchsorted(np.unique(y), y).astype(float))


@pytest.mark.parametrize("algorithm", sorted(ESTIMATORS))
def test_fit_weights_equal_the_bank(algorithm: str) -> None:
    X, y = _iris()
    estimator = ESTIMATORS[algorithm](**PARAMS.get(algorithm, {})).fit(X, y)
    bank = _bank_twin(estimator, X, y).flush().replay()
    assert estimator.classes_.tolist() == ["setosa", "versicolor", "virginica"]
    assert estimator.coef_.shape == (3, 4) and estimator.intercept_.shape == (3,)
    for row in range(3):
        learner = bank.learner(float(row))
        np.testing.assert_array_equal(estimator.coef_[row], learner.coef_)
        assert estimator.intercept_[row] == learner.intercept_
    decision = estimator.decision_function(X)
    np.testing.assert_array_equal(decision, bank.decision_function(X))
    np.testing.assert_array_equal(estimator.predict(X), estimator.classes_[decision.argmax(1)])
    assert estimator.n_iter_ >= 1


def test_each_row_is_the_binary_learner_of_its_class() -> None:
    """Classes declared before the first example: row i is the engine learner of
    "class i against the rest" on the same examples, bit for bit."""
    X, y = _iris()
    estimator = PDMClassifier(eps=0.05).fit(X, y)
    for row, name in enumerate(estimator.classes_):
        binary = PDMClassifier(eps=0.05).fit(X, y == name)
        np.testing.assert_array_equal(estimator.coef_[row], binary.coef_[0])


def test_binary_stays_one_learner() -> None:
    X, y = _iris()
    two = y != "setosa"
    estimator = PDMClassifier().fit(X[two], y[two])
    assert estimator.coef_.shape == (1, 4)
    assert estimator.decision_function(X).shape == (X.shape[0],)
    assert not isinstance(estimator.learner_, ModelBank)


def test_partial_fit_in_chunks_equals_the_bank_and_takes_classes() -> None:
    X, y = _iris()
    order = np.random.default_rng(0).permutation(X.shape[0])
    X, y = X[order], y[order]
    estimator = PAUMClassifier(tau_pos=2.0, delta=1.0, partial_fit_replay=0)
    # the first chunk holds one class only: classes fixes all three
    first = y == y[0]
    estimator.partial_fit(X[first][:5], y[first][:5], classes=np.unique(y))
    rest_X = np.concatenate([X[first][5:], X[~first]])
    rest_y = np.concatenate([y[first][5:], y[~first]])
    for start in range(0, rest_X.shape[0], 40):
        estimator.partial_fit(rest_X[start : start + 40], rest_y[start : start + 40])
    all_X = np.concatenate([X[first][:5], rest_X])
    all_y = np.concatenate([y[first][:5], rest_y])
    bank = _bank_twin(estimator, all_X, all_y)
    for row in range(3):
        np.testing.assert_array_equal(estimator.coef_[row], bank.learner(float(row)).coef_)
    with pytest.raises(ValueError, match="differ from classes_"):
        estimator.partial_fit(X[:3], y[:3], classes=["setosa", "versicolor"])


def test_sparse_input_gives_the_dense_model() -> None:
    X, y = _iris()
    dense = PDMClassifier().fit(X, y)
    sparse = PDMClassifier().fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.coef_, sparse.coef_)


@pytest.mark.parametrize("make", [PDMClassifier, PAUMClassifier, PerceptronClassifier])
def test_digits_accuracy_beside_scikit_learn(make: Any) -> None:
    """Ten classes: above a floor that scikit-learn's Perceptron and LinearSVC reach."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y
    )
    floor = 0.9
    for theirs in (Perceptron(random_state=0), LinearSVC()):
        reference = make_pipeline(StandardScaler(), theirs).fit(X_train, y_train)
        assert reference.score(X_test, y_test) > floor
    ours = make_pipeline(StandardScaler(), make()).fit(X_train, y_train)
    assert ours.score(X_test, y_test) > floor
    assert ours[-1].coef_.shape == (10, 64)


def _checkpointed(estimator: Any) -> Any:
    return type(estimator).from_state(decode(encode(estimator.state_dict(), created=0.0)).payload)


@pytest.mark.parametrize("trip", ["pickle", "checkpoint", "clone"])
def test_round_trips_keep_predictions_and_learning(trip: str) -> None:
    X, y = _iris()
    estimator = PAUMClassifier(tau_pos=2.0, delta=1.0).partial_fit(X[::2], y[::2], np.unique(y))
    if trip == "clone":
        fresh = clone(estimator)
        assert not hasattr(fresh, "classes_")
        assert fresh.get_params() == estimator.get_params()
        return
    restored = (lambda e: pickle.loads(pickle.dumps(e)) if trip == "pickle" else _checkpointed(e))(
        estimator
    )
    np.testing.assert_array_equal(restored.decision_function(X), estimator.decision_function(X))
    np.testing.assert_array_equal(restored.predict(X), estimator.predict(X))
    restored.partial_fit(X[1::2], y[1::2])
    estimator.partial_fit(X[1::2], y[1::2])
    np.testing.assert_array_equal(restored.coef_, estimator.coef_)
    assert restored.classes_.tolist() == estimator.classes_.tolist()
