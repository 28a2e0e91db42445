"""The scikit-learn estimators with multi-label targets (an indicator matrix): a bank."""

from __future__ import annotations

import pickle
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file, make_multilabel_classification
from sklearn.linear_model import Perceptron
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import MultiLabelBinarizer, StandardScaler

from streamlearn.checkpoint import decode, encode
from streamlearn.learn.bank import ModelBank
from streamlearn.sklearn import ESTIMATORS, PAUMClassifier, PDMClassifier

YEAST = Path(__file__).resolve().parents[3] / "shared" / "data" / "yeast" / "yeast.all"
#: PFM's beta has no default; the t-margitron's default zeta is slow to converge
PARAMS: dict[str, dict[str, Any]] = {"pfm": {"beta": 0.001}, "t-margitron": {"zeta": 0.8}}


@cache
def _tagged() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """200 examples, 6 labels of which the last is never set, standardised features."""
    X, Y = make_multilabel_classification(
        n_samples=200, n_features=8, n_classes=5, n_labels=2, allow_unlabeled=True,
        random_state=3,
    )  # fmt: skip
    Y = np.hstack([Y, np.zeros((200, 1), dtype=Y.dtype)])
    return StandardScaler().fit_transform(X), Y


def _bank_twin(estimator: Any, X: Any, Y: npt.NDArray[Any]) -> ModelBank:
    """The bank learning the label sets Y writes, with every column declared first."""
    learner = estimator.learner_class(**estimator._learner_params())
    bank = ModelBank(learner).declare_labels(np.arange(Y.shape[1]))
    return bank.learn(X, [np.flatnonzero(row).tolist() for row in Y])


@pytest.mark.parametrize("algorithm", sorted(ESTIMATORS))
def test_fit_weights_equal_the_bank_of_the_label_sets(algorithm: str) -> None:
    X, Y = _tagged()
    estimator = ESTIMATORS[algorithm](**PARAMS.get(algorithm, {})).fit(X, Y)
    bank = _bank_twin(estimator, X, Y).flush().replay()
    assert estimator.multilabel_ and estimator.classes_.tolist() == list(range(6))
    assert estimator.coef_.shape == (6, 8) and estimator.intercept_.shape == (6,)
    decision = estimator.decision_function(X)
    np.testing.assert_array_equal(decision, bank.decision_function(X))
    np.testing.assert_array_equal(estimator.predict(X), (decision > 0).astype(Y.dtype))
    # the label no row holds has a learner that only ever saw negatives
    assert (estimator.predict(X)[:, 5] == 0).all()


@pytest.mark.parametrize("form", ["sparse", "list of lists", "bool"])
def test_every_form_of_the_targets_gives_the_same_model(form: str) -> None:
    X, Y = _tagged()
    targets: Any = {"sparse": sp.csr_matrix(Y), "list of lists": Y.tolist(), "bool": Y == 1}[form]
    reference = PDMClassifier(eps=0.05).fit(X, Y)
    estimator = PDMClassifier(eps=0.05).fit(X, targets)
    np.testing.assert_array_equal(estimator.coef_, reference.coef_)
    predicted = estimator.predict(X)
    np.testing.assert_array_equal(predicted, reference.predict(X))
    assert predicted.dtype == (np.bool_ if form == "bool" else Y.dtype)


def test_two_label_columns_stay_a_bank() -> None:
    """Two columns are two labels (a row may hold both), not one binary problem."""
    X, Y = _tagged()
    estimator = PDMClassifier().fit(X, Y[:, :2])
    assert isinstance(estimator.learner_, ModelBank)
    assert estimator.decision_function(X).shape == (200, 2)
    assert estimator.predict(X).shape == (200, 2)


def test_partial_fit_in_chunks_equals_the_bank_and_checks_the_targets() -> None:
    X, Y = _tagged()
    estimator = PAUMClassifier(tau_pos=2.0, delta=1.0, partial_fit_replay=0)
    for start in range(0, 200, 60):  # no classes needed: the columns are the labels
        estimator.partial_fit(X[start : start + 60], Y[start : start + 60])
    bank = _bank_twin(estimator, X, Y)
    for row in range(6):
        np.testing.assert_array_equal(estimator.coef_[row], bank.learner(float(row)).coef_)
    with pytest.raises(ValueError, match="has 5 label columns, but the earlier calls"):
        estimator.partial_fit(X[:3], Y[:3, :5])
    with pytest.raises(ValueError, match="learned multi-label targets"):
        estimator.partial_fit(X[:3], np.array([0, 1, 0]))
    with pytest.raises(ValueError, match="learned binary or multi-class targets"):
        PDMClassifier().partial_fit(X[:3], [0, 1, 1], classes=[0, 1]).partial_fit(X[:3], Y[:3])
    with pytest.raises(ValueError, match="are not the label columns"):
        PDMClassifier().partial_fit(X[:3], Y[:3], classes=[0, 1])


@pytest.mark.parametrize("targets", ["-1/1", "0/2"])
def test_refused_targets_leave_the_estimator_unfitted(targets: str) -> None:
    """Targets of two values other than 0 and 1 are refused with what is wrong, before
    anything is learned: a corrected call starts afresh."""
    X, Y = _tagged()
    wrong = 2 * Y - 1 if targets == "-1/1" else 2 * Y
    for method in ("fit", "partial_fit"):
        estimator = PDMClassifier()
        with pytest.raises(ValueError, match="indicator matrix of 0 and 1, one column per label"):
            getattr(estimator, method)(X, wrong)
        assert not hasattr(estimator, "classes_") and not hasattr(estimator, "learner_")
        getattr(estimator, method)(X, Y[:, :2])
        assert estimator.coef_.shape == (2, 8)


@pytest.mark.parametrize("trip", ["pickle", "checkpoint"])
def test_round_trips_keep_multi_label_predictions(trip: str) -> None:
    X, Y = _tagged()
    estimator = PDMClassifier(eps=0.05).fit(X, Y == 1)
    if trip == "pickle":
        restored = pickle.loads(pickle.dumps(estimator))
    else:
        payload = decode(encode(estimator.state_dict(), created=0.0)).payload
        restored = PDMClassifier.from_state(payload)
    assert restored.multilabel_
    np.testing.assert_array_equal(restored.predict(X), estimator.predict(X))
    assert restored.predict(X).dtype == np.bool_


def test_yeast_micro_f1_beside_scikit_learn() -> None:
    """yeast (14 labels): PAUM with uneven margins, the multi-label learner of its paper,
    ranks above scikit-learn's one-vs-rest Perceptron in micro F1 on a held-out part."""
    if not YEAST.exists():
        pytest.skip(f"{YEAST} is missing (../shared/data beside the repository)")
    X, label_sets = load_svmlight_file(str(YEAST), multilabel=True)
    Y = MultiLabelBinarizer().fit_transform(label_sets)
    X = StandardScaler().fit_transform(X.toarray())
    train, test = slice(0, 1500), slice(1500, None)
    theirs = OneVsRestClassifier(Perceptron(random_state=0)).fit(X[train], Y[train])
    ours = PAUMClassifier(tau_neg=-1.0, tau_pos=1.0).fit(X[train], Y[train])
    their_f1 = f1_score(Y[test], theirs.predict(X[test]), average="micro")
    our_f1 = f1_score(Y[test], ours.predict(X[test]), average="micro")
    assert our_f1 > their_f1 > 0.3, (our_f1, their_f1)
