"""What learners accept and refuse: examples, labels and hyperparameters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from streamlearn import (
    PAM,
    PAUM,
    PDM,
    ActiveSetSchedule,
    AMargitron,
    InvalidInputError,
    InvalidParameterError,
    LinearLearner,
    PDMSucc,
    Perceptron,
    StreamlearnError,
    TMargitron,
)

X = np.array([[1.0, 0.0, 2.0], [0.0, -1.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, -1.0]])
Y = np.array([1, -1, 1, -1])


def fitted(X_: Any, y: Any, **kwargs: Any) -> PDM:
    return PDM(eps=0.1, delta=0.5, **kwargs).fit(X_, y)


def assert_same_model(a: LinearLearner, b: LinearLearner) -> None:
    assert np.array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    assert a.updates == b.updates


# -- examples -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_are_refused(bad: float) -> None:
    values = X.copy()
    values[2, 1] = bad
    with pytest.raises(InvalidInputError, match="row 2 holds a NaN or infinite"):
        PDM(delta=0.5).learn(values, Y)
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        PDM(delta=0.5).learn(sp.csr_matrix(values), Y)


def test_negative_index_is_refused() -> None:
    triple = (np.array([0, 1, 3]), np.array([0, 2, -1]), np.array([1.0, 2.0, 3.0]))
    with pytest.raises(InvalidInputError, match="row 1 holds a negative feature index"):
        PDM(delta=0.5).learn(triple, [1, -1])


def test_negative_index_beyond_int32_is_refused_not_wrapped() -> None:
    """-2^32 + 3 would wrap to the valid index 3 in the int32 the engine uses."""
    triple = (np.array([0, 1, 2]), np.array([0, -(2**32) + 3]), np.array([1.0, 2.0]))
    with pytest.raises(InvalidInputError, match="row 1 holds a negative feature index"):
        PDM(delta=0.5).learn(triple, [1, -1])


def test_repeated_index_whose_values_overflow_is_refused() -> None:
    """Each value is finite, their sum is not: the check must see the summed row."""
    triple = (np.array([0, 1, 3]), np.array([0, 1, 1]), np.array([1.0, 1e308, 1e308]))
    with pytest.raises(InvalidInputError, match="row 1 repeats a feature index"):
        PDM(delta=0.5).learn(triple, [1, -1])


def test_rows_whose_squared_norm_overflows_are_refused() -> None:
    """1e200 is finite, its square is not: such a row would make the weights infinite."""
    with pytest.raises(InvalidInputError, match="X row 1 holds values too large"):
        PDM(delta=0.5).learn(np.array([[1.0, 0.0], [1e200, 1.0]]), [1, -1])


def test_dense_rows_that_are_not_numbers_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="X must hold numbers"):
        PDM(delta=0.5).learn(np.array([["a", "b"]]), [1])


def test_non_integer_indices_are_refused() -> None:
    triple = (np.array([0, 1]), np.array([0.5]), np.array([1.0]))
    with pytest.raises(InvalidInputError, match="indices must be integers"):
        PDM(delta=0.5).learn(triple, [1])


@pytest.mark.parametrize(
    "indptr",
    [
        np.array([0, 2, 1, 3]),  # decreasing
        np.array([0, 1, 2, 4]),  # past the end of indices
        np.array([-1, 1, 2, 3]),  # negative start
    ],
)
def test_bad_indptr_is_refused(indptr: np.ndarray) -> None:
    triple = (indptr, np.array([0, 1, 2]), np.array([1.0, 2.0, 3.0]))
    with pytest.raises(InvalidInputError, match="indptr"):
        PDM(delta=0.5).learn(triple, [1, -1, 1])


def test_empty_or_two_dimensional_indptr_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="indptr"):
        PDM(delta=0.5).learn((np.array([], dtype=np.int64), np.array([0]), np.array([1.0])), [])
    with pytest.raises(InvalidInputError, match="indptr"):
        PDM(delta=0.5).learn((np.array([[0, 1]]), np.array([0]), np.array([1.0])), [1])


def test_indices_and_values_of_different_lengths_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="same length"):
        PDM(delta=0.5).learn((np.array([0, 2]), np.array([0, 1]), np.array([1.0])), [1])


def test_x_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="2-D array"):
        PDM(delta=0.5).learn(np.array([1.0, 2.0]), [1, -1])


def test_mismatched_lengths_of_x_and_y_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="4 examples, y has shape"):
        PDM(delta=0.5).learn(X, Y[:3])
    with pytest.raises(InvalidInputError, match="one label per example"):
        PDM(delta=0.5).learn(X, Y.reshape(-1, 1))


def test_unsorted_and_duplicate_indices_are_canonicalised() -> None:
    # row 0: 2.0 at feature 2 given as 1.5 + 0.5 and out of order; row 2 reversed
    indptr = np.array([0, 3, 4, 6, 7])
    indices = np.array([2, 0, 2, 1, 1, 0, 2])
    values = np.array([1.5, 1.0, 0.5, -1.5, 0.5, 0.5, -1.0])
    learner = fitted((indptr, indices, values), Y)
    assert_same_model(learner, fitted(X, Y))
    stored = learner.buffer.examples()
    canonical = sp.csr_matrix(X)
    assert np.array_equal(stored.indptr, canonical.indptr)
    assert np.array_equal(stored.indices, canonical.indices)
    assert np.array_equal(stored.values, canonical.data)


def test_input_forms_give_the_same_model() -> None:
    csr = sp.csr_matrix(X)
    reference = fitted(csr, Y)
    assert reference.updates > 0
    forms: list[Any] = [
        X,
        X.tolist(),
        (csr.indptr, csr.indices, csr.data),
        (csr.indptr.astype(np.int32), csr.indices.astype(np.int64), csr.data.astype(np.float32)),
        sp.csc_matrix(X),
        sp.coo_matrix(X),
        sp.csr_array(X),
    ]
    for form in forms:
        assert_same_model(fitted(form, Y), reference)


def test_triple_with_nonzero_first_offset() -> None:
    csr = sp.csr_matrix(X)
    shifted = (csr.indptr + 2, np.r_[[7, 7], csr.indices], np.r_[[9.0, 9.0], csr.data])
    assert_same_model(fitted(shifted, Y), fitted(csr, Y))


def test_decision_function_on_unseen_features() -> None:
    learner = fitted(X, Y)
    assert learner.n_features_in_ == 3
    wide = np.zeros((2, 10))
    wide[0, :3] = X[0]
    wide[0, 9] = 5.0  # a feature never seen weighs 0
    wide[1, 7] = 1.0
    scores = learner.decision_function(wide)
    expected0 = float(learner.coef_ @ X[0]) + learner.intercept_
    np.testing.assert_allclose(scores, [expected0, learner.intercept_], rtol=1e-12)
    assert learner.predict(wide).tolist() == [1 if expected0 > 0 else -1,
                                             1 if learner.intercept_ > 0 else -1]  # fmt: skip
    untrained = PDM(delta=0.5)
    assert untrained.decision_function(wide).tolist() == [0.0, 0.0]


# -- labels ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        ([1, -1, 2, -1], "found 2"),
        ([1.0, -1.0, 0.5, -1.0], "found 0.5"),
        ([1, 0, -1, 1], "found 0"),
        ([1.0, -1.0, np.nan, 1.0], "labels must be"),
        (["a", "b", "a", "b"], "labels must be numbers or booleans"),
        (["1", "-1", "1", "-1"], "labels must be numbers or booleans"),
        ([None, 1, -1, 1], "labels must be numbers or booleans"),
    ],
)
def test_bad_labels_are_refused(labels: list[Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        PDM(delta=0.5).learn(X, labels)


@pytest.mark.parametrize(
    "labels",
    [
        np.array([1, 0, 1, 0]),
        np.array([True, False, True, False]),
        [True, False, True, False],
        np.array([1.0, -1.0, 1.0, -1.0]),
        np.array([1, -1, 1, -1], dtype=np.int8),
        np.array([1, 0, 1, 0], dtype=np.uint8),
    ],
)
def test_zero_one_and_boolean_labels_map_to_minus_one_plus_one(labels: Any) -> None:
    learner = fitted(X, labels)
    assert learner.buffer.examples().labels.tolist() == [1, -1, 1, -1]
    assert_same_model(learner, fitted(X, Y))


def test_all_zero_labels_are_negative() -> None:
    learner = fitted(X, [0, 0, 0, 0])
    assert learner.buffer.examples().labels.tolist() == [-1, -1, -1, -1]


# -- hyperparameters ------------------------------------------------------------------

BAD_PARAMETERS: list[tuple[Callable[[], Any], str]] = [
    (lambda: PDM(eps=0), r"eps must be in \(0, 1\]"),
    (lambda: PDM(eps=-0.1), r"eps must be in \(0, 1\]"),
    (lambda: PDM(eps=1.5), r"eps must be in \(0, 1\]"),
    (lambda: PDM(eps=float("nan")), "eps must be finite"),
    (lambda: PDM(eps="0.1"), "eps must be a number"),
    (lambda: PAM(tau=-0.5), "tau must be >= 0"),
    (lambda: TMargitron(zeta=0.0), r"zeta must be in \(0, 2\)"),
    (lambda: TMargitron(zeta=2.0), r"zeta must be in \(0, 2\)"),
    (lambda: AMargitron(zeta=-1.0), r"zeta must be in \(0, 2\)"),
    (lambda: AMargitron(zeta=2.5), r"zeta must be in \(0, 2\)"),
    (lambda: PDM(buffer_size=0), "buffer_size must be an integer >= 1"),
    (lambda: PDM(buffer_nnz=0), "buffer_nnz must be an integer >= 1"),
    (lambda: PDM(buffer_size=2.5), "buffer_size"),
    (lambda: PAUM(lr=0.0), "lr must be > 0"),
    (lambda: PAUM(lr=-1.0), "lr must be > 0"),
    (lambda: PAUM(tau_pos=float("inf")), "tau_pos must be finite"),
    (lambda: Perceptron(delta=-1.0), "delta must be >= 0"),
    (lambda: Perceptron(delta="big"), "delta must be a number"),
    (lambda: Perceptron(rho=0.0), "rho must be > 0"),
    (lambda: Perceptron(seed=-1), r"seed must be an integer in \[0, 2\^64\)"),
    (lambda: Perceptron(seed=2**64), r"seed must be an integer in \[0, 2\^64\)"),
    (lambda: PDM(multiple_updates="no"), "multiple_updates must be True or False"),
    (lambda: Perceptron(max_passes=0), "max_passes must be an integer >= 1"),
    (lambda: PDMSucc(succ_eta=1.0), "succ_eta must be > 1"),
    (lambda: PDMSucc(succ_eta=1.0000001), r"takes \d+ successive runs \(at most 1000\)"),
    (lambda: ActiveSetSchedule(c1=0.5), "c1 must be >= 1"),
    (lambda: ActiveSetSchedule(c2="3"), "c2 must be >= 1"),
    (lambda: ActiveSetSchedule(nep2=-1), "nep2 must be a non-negative integer"),
    (lambda: ActiveSetSchedule(enabled="no"), "enabled must be True or False"),
    (lambda: ActiveSetSchedule(shrink=1), "shrink must be True or False"),
]


@pytest.mark.parametrize(("build", "match"), BAD_PARAMETERS)
def test_bad_hyperparameters_are_refused(build: Callable[[], Any], match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        build()


def test_replay_budget_is_checked() -> None:
    learner = fitted(X, Y)
    with pytest.raises(InvalidParameterError, match="max_passes"):
        learner.replay(max_passes=0)


def test_every_refusal_is_a_streamlearn_error() -> None:
    assert issubclass(InvalidInputError, StreamlearnError)
    assert issubclass(InvalidParameterError, StreamlearnError)
    with pytest.raises(StreamlearnError):
        PDM(delta=0.5).learn(X, [1, 2, 1, 2])


def test_refused_input_leaves_the_learner_unchanged() -> None:
    learner = fitted(X, Y)
    state_before = (learner.coef_.copy(), learner.updates, len(learner.buffer))
    bad = X.copy()
    bad[3, 0] = np.nan
    with pytest.raises(InvalidInputError):
        learner.learn(bad, Y)
    assert np.array_equal(learner.coef_, state_before[0])
    assert (learner.updates, len(learner.buffer)) == state_before[1:]


def test_rows_above_the_squared_norm_bound_are_refused_before_they_overflow_a_learner() -> None:
    """The three lines that made PDM's weights overflow in replay (1e120 is finite, and
    so is its square's sum, but not what the learners multiply it by): refused as input,
    as the parsers refuse them, never a DivergenceError."""
    from streamlearn import PDM
    from streamlearn.errors import InvalidInputError

    X = np.zeros((3, 10))
    X[0, [1, 5, 9]] = [1.0, 7.0, 3.0]
    X[1, [1, 9]] = [1.0, 1.0]
    X[2, [1, 5, 9]] = [1.0, 2.0, 1e120]
    with pytest.raises(InvalidInputError, match="X row 2 holds values too large"):
        PDM(delta=1.0).fit(X, [-1, -1, 1])
    with pytest.raises(InvalidInputError, match="above 1e"):
        PDM(delta=1.0).learn(X[2:], [1])
    assert PDM(delta=1.0).fit(X[:2], [-1, -1]).summary()["converged"]


def test_rho_and_delta_are_bounded_as_examples_are() -> None:
    from streamlearn import PDM
    from streamlearn.errors import InvalidParameterError

    for name in ("rho", "delta"):
        with pytest.raises(InvalidParameterError, match=f"{name} must be at most 1e\\+25"):
            PDM(**{name: 1e30})
