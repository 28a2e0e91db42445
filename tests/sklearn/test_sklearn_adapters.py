"""The scikit-learn estimators against the engine: same weights, same state, same use."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import scipy.sparse as sp
from river import datasets
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from streamlearn import (
    LEARNERS,
    PAUM,
    PDM,
    ActiveSetSchedule,
    InvalidParameterError,
    LinearLearner,
    StateError,
)
from streamlearn.checkpoint import decode, encode
from streamlearn.learn.params import plain_params
from streamlearn.sklearn import (
    ESTIMATORS,
    PAUMClassifier,
    PDMClassifier,
    PDMSuccClassifier,
    PerceptronClassifier,
    PFMClassifier,
)

A9A = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult" / "a9a.train"
#: parameters for the tests: PFM's beta has no default (this one is below the margin of
#: the data sets here); the t-margitron's default zeta makes 16 million updates on Phishing
PARAMS: dict[str, dict[str, Any]] = {"pfm": {"beta": 0.001}, "t-margitron": {"zeta": 0.8}}


def _params(algorithm: str) -> dict[str, Any]:
    return PARAMS.get(algorithm, {})


@cache
def _phishing() -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """river's bundled Phishing (1250 examples, 9 features) as arrays; y is bool."""
    rows = list(datasets.Phishing())
    names = list(rows[0][0])
    X = np.array([[x[name] for name in names] for x, _ in rows], dtype=np.float64)
    y = np.array([label for _, label in rows], dtype=bool)
    return X, y


@cache
def _a9a() -> tuple[sp.csr_matrix, npt.NDArray[np.float64]]:
    if not A9A.exists():
        pytest.skip(f"../shared/data is missing: {A9A} not found")
    X, y = load_svmlight_file(str(A9A), n_features=123)
    return X, y


def _assert_same_model(estimator: Any, learner: LinearLearner, X: Any) -> None:
    n_features = estimator.n_features_in_
    expected = np.zeros(n_features)
    expected[: learner.coef_.shape[0]] = learner.coef_
    np.testing.assert_array_equal(estimator.coef_, expected[None, :])
    assert estimator.intercept_.tolist() == [learner.intercept_]
    np.testing.assert_array_equal(estimator.decision_function(X), learner.decision_function(X))


# -- the classes mirror the engine --------------------------------------------------------


@pytest.mark.parametrize("algorithm", sorted(LEARNERS))
def test_parameters_are_the_engine_parameters(algorithm: str) -> None:
    engine = inspect.signature(LEARNERS[algorithm].__init__).parameters
    adapter = inspect.signature(ESTIMATORS[algorithm].__init__).parameters
    assert [(p.name, p.kind, p.default) for p in adapter.values()] == [
        *((p.name, p.kind, p.default) for p in engine.values()),
        ("partial_fit_replay", inspect.Parameter.KEYWORD_ONLY, 10.0),
    ]


def test_invalid_parameters_are_refused_at_fit_not_at_construction() -> None:
    X, y = _phishing()
    estimator = PDMClassifier(eps=2.0)
    assert estimator.eps == 2.0
    with pytest.raises(ValueError, match="eps must be in"):
        estimator.fit(X, y)


# -- same weights as the engine -----------------------------------------------------------


@pytest.mark.parametrize("algorithm", sorted(LEARNERS))
def test_fit_equals_engine_fit_on_phishing(algorithm: str) -> None:
    X, y = _phishing()
    estimator = ESTIMATORS[algorithm](**_params(algorithm)).fit(X, y)
    learner = LEARNERS[algorithm](**_params(algorithm)).fit(X, y)
    _assert_same_model(estimator, learner, X)
    assert estimator.n_iter_ == learner.summary()["passes"] >= 1
    assert estimator.score(X, y) > 0.85


@pytest.mark.parametrize(
    ("estimator", "learner"),
    [
        (PDMClassifier(eps=0.05, delta=1.0), PDM(eps=0.05, delta=1.0)),
        (PAUMClassifier(tau_neg=-1.0, tau_pos=1.0, delta=1.0), PAUM(delta=1.0)),
    ],
    ids=["pdm", "paum"],
)
def test_fit_equals_engine_fit_on_a9a(estimator: Any, learner: LinearLearner) -> None:
    X, y = _a9a()
    X, y = X[:8000], y[:8000]
    estimator.fit(X, y)
    learner.fit(X, y)
    _assert_same_model(estimator, learner, X)
    assert estimator.coef_.shape == (1, 123)
    assert estimator.classes_.tolist() == [-1.0, 1.0]
    assert estimator.score(X, y) > 0.8


@pytest.mark.parametrize("delta", ["auto", 0.5])
def test_partial_fit_in_chunks_equals_engine_learn_over_the_same_chunks(delta: Any) -> None:
    X, y = _a9a()
    X, y = X[:4000], y[:4000]
    estimator = PDMClassifier(eps=0.05, delta=delta, partial_fit_replay=0)
    learner = PDM(eps=0.05, delta=delta)
    for start in range(0, 4000, 700):
        chunk = slice(start, start + 700)
        estimator.partial_fit(X[chunk], y[chunk], classes=[-1.0, 1.0])
        learner.learn(X[chunk], y[chunk])
        _assert_same_model(estimator, learner, X)
    assert estimator.n_iter_ == 0
    assert np.any(estimator.coef_ != 0.0)
    estimator.learner_.replay()
    learner.replay()
    _assert_same_model(estimator, learner, X)
    assert estimator.n_iter_ == learner.summary()["passes"] >= 1


def test_partial_fit_replays_in_proportion_to_what_it_learns() -> None:
    """Each call replays whole passes worth ``partial_fit_replay`` examples per example
    learned, carrying the rest: the engine driven so gives the same model."""
    X, y = _phishing()
    estimator = PDMClassifier(eps=0.01, delta=0.5, partial_fit_replay=2.5)
    learner = PDM(eps=0.01, delta=0.5)
    credit, passes_made = 0.0, []
    for start in range(0, 600, 150):
        chunk = slice(start, start + 150)
        estimator.partial_fit(X[chunk], y[chunk], classes=[False, True])
        learner.learn(X[chunk], np.where(y[chunk], 1, -1))
        credit += 2.5 * 150
        passes = int(credit // learner.summary()["buffer_examples"])
        if passes:
            learner.replay(max_passes=passes)
            credit = 0.0 if learner.converged else credit - passes * (start + 150)
        passes_made.append(passes)
        _assert_same_model(estimator, learner, X)
    assert passes_made[0] == 2  # 2.5 x 150 examples revisited: two passes of 150
    assert estimator.n_iter_ == learner.summary()["passes"] >= 1


@pytest.mark.parametrize("cls", [PDMClassifier, PAUMClassifier], ids=["pdm", "paum"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_partial_fit_on_100_rows_scores_as_fit(cls: Any, seed: int) -> None:
    """With the defaults, partial_fit on a few rows learns from the first one and its
    replays reach fit's model: held-out accuracy within 2 points of fit's."""
    X, y = _phishing()
    order = np.random.default_rng(seed).permutation(X.shape[0])
    train, test = order[:100], order[100:]
    partial = cls().partial_fit(X[train], y[train], classes=[False, True])
    fitted = cls().fit(X[train], y[train])
    assert abs(partial.score(X[test], y[test]) - fitted.score(X[test], y[test])) <= 0.02
    one = cls(partial_fit_replay=0).partial_fit(X[train[:1]], y[train[:1]], [False, True])
    summary = one.learner_.summary()  # the first example is learned, not held back
    assert summary["examples"] == 1 and summary["pending_examples"] == 0


def test_partial_fit_in_chunks_equals_one_partial_fit() -> None:
    X, y = _phishing()
    whole = PerceptronClassifier(delta=0.1, partial_fit_replay=0)
    whole.partial_fit(X, y, classes=[False, True])
    chunked = PerceptronClassifier(delta=0.1, partial_fit_replay=0)
    for chunk in np.array_split(np.arange(X.shape[0]), 7):
        chunked.partial_fit(X[chunk], y[chunk], classes=[True, False])
    np.testing.assert_array_equal(whole.coef_, chunked.coef_)
    np.testing.assert_array_equal(whole.intercept_, chunked.intercept_)


def test_partial_fit_follows_set_params_as_the_engine_would() -> None:
    """set_params between partial_fit calls takes effect (as SGDClassifier's does): the
    same as a learner continued from its state with the new parameters."""
    X, y = _phishing()
    estimator = PDMClassifier(eps=0.5, delta=0.1, partial_fit_replay=0).partial_fit(
        X[:300], y[:300], [False, True]
    )
    estimator.set_params(eps=0.05).partial_fit(X[300:600], y[300:600])
    learner = PDM(eps=0.5, delta=0.1).learn(X[:300], np.where(y[:300], 1, -1))
    state = {**learner.state_dict(), "params": plain_params(PDM(eps=0.05, delta=0.1).get_params())}
    continued = PDM.from_state(state).learn(X[300:600], np.where(y[300:600], 1, -1))
    assert estimator.learner_.eps == 0.05
    np.testing.assert_array_equal(estimator.coef_[0], continued.coef_)
    with pytest.raises(InvalidParameterError, match="cannot follow set_params of delta"):
        estimator.set_params(delta=1.0).partial_fit(X[600:700], y[600:700])


def test_fit_starts_again_after_partial_fit() -> None:
    X, y = _phishing()
    estimator = PDMClassifier(eps=0.1).partial_fit(X[:100], y[:100], classes=[False, True])
    estimator.fit(X, y)
    np.testing.assert_array_equal(estimator.coef_, PDMClassifier(eps=0.1).fit(X, y).coef_)


# -- inputs and labels --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csc", "coo", "lil", "dense-f"])
def test_every_input_format_gives_the_csr_model(fmt: str) -> None:
    X, y = _phishing()
    csr = sp.csr_matrix(X)
    converted = np.asfortranarray(X) if fmt == "dense-f" else csr.asformat(fmt)
    reference = PAUMClassifier().fit(csr, y)
    estimator = PAUMClassifier().fit(converted, y)
    np.testing.assert_array_equal(estimator.coef_, reference.coef_)
    np.testing.assert_array_equal(estimator.predict(converted), reference.predict(csr))


def test_trailing_features_never_nonzero_still_count() -> None:
    X, y = _phishing()
    wide = np.hstack([X, np.zeros((X.shape[0], 3))])
    estimator = PDMClassifier().fit(wide, y)
    assert estimator.n_features_in_ == estimator.coef_.shape[1] == X.shape[1] + 3
    np.testing.assert_array_equal(estimator.coef_[0, -3:], 0.0)
    with pytest.raises(ValueError, match="expecting 12 features"):
        estimator.predict(X)


def test_any_two_labels_sorted_with_the_second_positive() -> None:
    X, y = _phishing()
    words = np.where(y, "phishing", "benign")
    estimator = PDMClassifier().fit(X, words)
    assert estimator.classes_.tolist() == ["benign", "phishing"]
    signs = PDMClassifier().fit(X, np.where(y, 1, -1))
    np.testing.assert_array_equal(estimator.coef_, signs.coef_)
    decision = estimator.decision_function(X)
    np.testing.assert_array_equal(
        estimator.predict(X), np.where(decision > 0, "phishing", "benign")
    )
    # the first class in sorted order is the negative one, whatever its meaning
    flipped = PDMClassifier().fit(X, np.where(y, "a-phishing", "b-benign"))
    np.testing.assert_array_equal(flipped.coef_, -signs.coef_)


def test_multi_output_and_continuous_targets_are_refused() -> None:
    X, _ = _phishing()
    # two outputs of three classes each: not an indicator matrix of labels
    Y = np.stack([np.arange(X.shape[0]) % 3, np.arange(X.shape[0]) % 2], axis=1)
    with pytest.raises(ValueError, match="1d array"):
        PDMClassifier().fit(X, Y)
    with pytest.raises(ValueError, match="Unknown label type"):
        PDMClassifier().fit(X, np.linspace(0.0, 1.0, X.shape[0]))


def test_one_class_is_refused() -> None:
    X, _ = _phishing()
    with pytest.raises(ValueError, match="two classes, but y holds only one class"):
        PDMClassifier().fit(X, np.ones(X.shape[0]))


def test_partial_fit_checks_classes_and_features() -> None:
    X, y = _phishing()
    estimator = PDMClassifier()
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        estimator.partial_fit(X, y)
    estimator.partial_fit(X[:10], y[:10], classes=[False, True])
    with pytest.raises(ValueError, match="not in classes"):
        estimator.partial_fit(X[:10], np.full(10, 7))
    with pytest.raises(ValueError, match="differ from classes_"):
        estimator.partial_fit(X[:10], y[:10], classes=[0, 7])
    with pytest.raises(ValueError, match="expecting 9 features"):
        estimator.partial_fit(X[:10, :5], y[:10])


def test_replay_bound_reached_warns() -> None:
    X, y = _phishing()
    with pytest.warns(ConvergenceWarning, match="max_passes=1"):
        estimator = PDMClassifier(eps=0.001, delta=0.0, max_passes=1).fit(X, y)
    assert estimator.n_iter_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        PDMClassifier(eps=0.1).fit(X, y)


# -- state: clone, pickle, checkpoint -----------------------------------------------------


@pytest.mark.parametrize("algorithm", sorted(LEARNERS))
def test_pickle_round_trip_keeps_predictions_and_learning(algorithm: str) -> None:
    X, y = _phishing()
    estimator = ESTIMATORS[algorithm](delta=0.5, **_params(algorithm)).fit(X[:900], y[:900])
    copy = pickle.loads(pickle.dumps(estimator))
    np.testing.assert_array_equal(copy.decision_function(X), estimator.decision_function(X))
    np.testing.assert_array_equal(copy.predict(X), estimator.predict(X))
    estimator.partial_fit(X[900:], y[900:])
    copy.partial_fit(X[900:], y[900:])
    np.testing.assert_array_equal(copy.coef_, estimator.coef_)


def test_clone_keeps_behaviour() -> None:
    X, y = _phishing()
    estimator = PDMSuccClassifier(eps=0.02, succ_eta=4.0, seed=3)
    fitted = clone(estimator).fit(X, y)
    assert clone(fitted).get_params() == estimator.get_params()
    assert not hasattr(clone(fitted), "coef_")
    np.testing.assert_array_equal(clone(fitted).fit(X, y).coef_, fitted.coef_)


@pytest.mark.parametrize("algorithm", sorted(LEARNERS))
def test_checkpoint_round_trip_keeps_predictions(algorithm: str) -> None:
    X, y = _phishing()
    labels = np.where(y, "phishing", "benign")
    estimator = ESTIMATORS[algorithm](**_params(algorithm)).fit(X[:1000], labels[:1000])
    restored = type(estimator).from_state(
        decode(encode(estimator.state_dict(), created=0.0)).payload
    )
    assert restored.get_params() == estimator.get_params()
    assert restored.classes_.tolist() == ["benign", "phishing"]
    assert restored.n_iter_ == estimator.n_iter_
    np.testing.assert_array_equal(restored.predict(X), estimator.predict(X))
    np.testing.assert_array_equal(restored.decision_function(X), estimator.decision_function(X))
    estimator.partial_fit(X[1000:], labels[1000:])
    restored.partial_fit(X[1000:], labels[1000:])
    np.testing.assert_array_equal(restored.coef_, estimator.coef_)


def test_checkpoint_of_another_estimator_is_refused() -> None:
    X, y = _phishing()
    state = PDMClassifier().fit(X, y).state_dict()
    with pytest.raises(StateError, match="PDMClassifier"):
        PFMClassifier.from_state(state)
    with pytest.raises(StateError, match="not a streamlearn scikit-learn state"):
        PDMClassifier.from_state(state["learner"])


# -- in scikit-learn workflows ------------------------------------------------------------


def test_pipeline_with_grid_search_over_eps() -> None:
    X, y = load_breast_cancer(return_X_y=True)
    pipeline = make_pipeline(StandardScaler(), PDMClassifier())
    grid = {"pdmclassifier__eps": [0.5, 0.1, 0.02]}
    search = GridSearchCV(pipeline, grid, cv=3).fit(X, y)
    assert search.best_params_["pdmclassifier__eps"] in grid["pdmclassifier__eps"]
    assert search.best_score_ > 0.9
    assert search.score(X, y) > 0.95
    assert search.best_estimator_[-1].classes_.tolist() == [0, 1]


def test_streamlearn_imports_without_scikit_learn() -> None:
    code = (
        "import sys; sys.modules['sklearn'] = None\n"
        "import streamlearn, streamlearn.learn, streamlearn.checkpoint\n"
        "assert 'sklearn' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        "try:\n"
        "    import streamlearn.sklearn\n"
        "except ImportError:\n"
        "    print('refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "refused"


def test_checkpoint_keeps_active_sets_and_held_examples() -> None:
    X, y = _phishing()
    schedule = ActiveSetSchedule(shrink=True, nep3=5)
    estimator = PDMClassifier(active_sets=schedule).partial_fit(X[:300], y[:300], classes=[0, 1])
    assert estimator.learner_.window.room == 700  # delta='auto' still watching its window
    restored = PDMClassifier.from_state(decode(encode(estimator.state_dict(), created=0.0)).payload)
    assert restored.active_sets == schedule
    for model in (estimator, restored):
        model.partial_fit(X[300:], y[300:])
        model.learner_.replay()
    np.testing.assert_array_equal(restored.learner_.coef_, estimator.learner_.coef_)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: PDMClassifier(foo=1),
            "PDMClassifier.__init__() got an unexpected keyword argument 'foo'",
        ),
        (
            lambda: PFMClassifier(foo=1),
            "PFMClassifier.__init__() got an unexpected keyword argument 'foo'",
        ),
        (
            lambda: PAUMClassifier(1.0, 2.0, 3.0, 4.0),
            "PAUMClassifier.__init__() takes from 1 to 4 positional arguments but 5 were given",
        ),
    ],
)
def test_a_wrong_call_names_the_estimator(call: Any, message: str) -> None:
    """As the hand-written estimators of 0.1.0 did: Python's own words, with the class."""
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == message


def test_fit_keeps_every_example_or_refuses_a_buffer_too_small() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 3))
    y = np.where(X[:, 0] > 0, "yes", "no")
    fitted = PDMClassifier(delta=0.5).fit(X, y)
    assert fitted.learner_.buffer.max_examples == 50 and fitted.learner_.buffer.evicted == 0
    three = np.where(X[:, 1] > 0.5, "c", y)
    bank = PDMClassifier(delta=0.5).fit(X, three).learner_
    assert bank.buffer.max_examples == 50
    with pytest.raises(ValueError, match=r"buffer_size=10 \(they need 50"):
        PDMClassifier(buffer_size=10).fit(X, y)
