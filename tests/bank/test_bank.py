"""The one-vs-rest model bank: equality with standalone learners, new labels, ties, PAUM
per-label margins, state round trips."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from bank_samples import multilabel_stream, one_label_targets

from streamlearn import PAUM, PDM, Kozinec, ModelBank, PDMSucc, Perceptron, model_from_state
from streamlearn.checkpoint import decode, encode
from streamlearn.errors import InvalidInputError, InvalidParameterError, StateError
from streamlearn.learn import LinearLearner
from streamlearn.replay import ReplaySchedule

BASES = [
    PDM(eps=0.05, delta=0.5),
    PDM(eps=0.05),  # delta='auto'
    PAUM(tau_neg=-0.5, tau_pos=2.0, lr=0.5, delta=0.3),
    # not separable without slack: replay stops at max_passes, for the bank as for the
    # standalone learner (100 passes check that as well as the default 1000)
    Perceptron(delta=0.0, max_passes=100),
    Kozinec(eps=0.01, delta=0.4),
    PDMSucc(eps=0.02, delta=0.5),
]


def standalone(base: LinearLearner) -> LinearLearner:
    return type(base)(**base.get_params())


def assert_same_learner(
    ours: LinearLearner, theirs: LinearLearner, ignore: tuple[str, ...] = ()
) -> None:
    np.testing.assert_array_equal(ours.coef_, theirs.coef_)
    assert ours.intercept_ == theirs.intercept_
    np.testing.assert_array_equal(ours.alpha_, theirs.alpha_)
    np.testing.assert_array_equal(ours.state.scalars, theirs.state.scalars)
    np.testing.assert_array_equal(ours.state.stats, theirs.state.stats)
    assert ours.examples_presented == theirs.examples_presented
    mine, other = ours.summary(), theirs.summary()
    assert {k: v for k, v in mine.items() if k not in ignore} == {
        k: v for k, v in other.items() if k not in ignore
    }


@pytest.mark.parametrize("base", BASES, ids=lambda b: repr(b)[:30])
def test_each_learner_is_the_standalone_learner_bit_for_bit(base: LinearLearner) -> None:
    X, label_sets = multilabel_stream()
    bank = ModelBank(base)
    bank.learn(X[:100], label_sets[:100]).learn(X[100:], label_sets[100:]).flush()
    assert bank.labels_.tolist() == [10.0, 20.0, 30.0, 40.0]  # order of first appearance
    for value in (10, 20, 30, 40):
        alone = standalone(base).learn(X, one_label_targets(label_sets, value))
        alone.flush()
        assert_same_learner(bank.learner(value), alone)
    bank.replay()
    for value in (10, 20, 30, 40):  # learn + replay: fit() would size its buffer to X
        alone = standalone(base).learn(X, one_label_targets(label_sets, value)).flush().replay()
        assert_same_learner(bank.learner(value), alone)


@pytest.mark.parametrize(
    "base",
    [PDM(eps=0.05, delta=0.5, buffer_nnz=7), Kozinec(eps=0.01, delta=0.4, buffer_nnz=7)],
    ids=["pdm", "kozinec"],
)
def test_examples_too_large_for_the_arena_are_learned_as_the_standalone_learner_does(
    base: LinearLearner,
) -> None:
    X, label_sets = multilabel_stream()
    too_large = int(np.sum(np.diff(X.indptr) > 7))
    assert 0 < too_large < X.shape[0]
    bank = ModelBank(base)
    bank.declare_labels([10, 20, 30, 40])  # every learner sees the whole stream
    bank.learn(X[:100], label_sets[:100]).learn(X[100:], label_sets[100:]).flush()
    assert bank.summary()["buffer_examples"] <= 7
    assert bank.buffer.unbuffered == too_large
    assert bank.stream_judged == sum(1 for members in label_sets if members)
    for value in (10, 20, 30, 40):
        alone = standalone(base).learn(X, one_label_targets(label_sets, value))
        alone.flush()
        assert alone.buffer.unbuffered == too_large
        assert_same_learner(bank.learner(value), alone)


def test_learners_known_from_the_start_follow_the_replay_schedule_exactly() -> None:
    X, label_sets = multilabel_stream(n=300)
    schedule = ReplaySchedule(every=25, passes=2)
    bank = ModelBank(PDM(eps=0.05, delta=0.5))
    bank.learn_on_schedule(_rows(X, label_sets), schedule, 0)
    alone = PDM(eps=0.05, delta=0.5)
    alone.learn_on_schedule(_batch(X, one_label_targets(label_sets, 10)), schedule, 0)
    first = label_sets.index(next(s for s in label_sets if 10 in s))
    assert first < 25  # label 10 is there before the first replay
    assert_same_learner(bank.learner(10), alone)


def test_a_new_label_is_presented_the_buffer_as_negatives_before_its_example() -> None:
    X, label_sets = multilabel_stream()
    first = next(i for i, s in enumerate(label_sets) if 40 in s)
    bank = ModelBank(PDM(eps=0.05, delta=0.5, buffer_size=30))
    bank.learn(X[: first + 1], label_sets[: first + 1])
    learner = bank.learner(40)
    # it saw the 30 examples then buffered (as negatives) and then its own example
    assert learner.examples_presented == 31
    assert learner.buffer.examples().labels.tolist() == [-1] * 29 + [1]
    assert bank.buffer.features.evicted == first + 1 - 30
    alone = PDM(eps=0.05, delta=0.5, buffer_size=30)
    y = one_label_targets(label_sets, 40)
    alone.learn(X[first - 30 : first + 1], y[first - 30 : first + 1])
    assert_same_learner(learner, alone, ignore=("buffer_evicted",))
    # learners that were there all along saw every example
    assert bank.learner(10).examples_presented == first + 1


def test_new_labels_mid_batch_and_mid_stream_give_the_same_bank() -> None:
    X, label_sets = multilabel_stream()
    whole = ModelBank(PAUM(delta=0.5)).learn(X, label_sets)
    pieces = ModelBank(PAUM(delta=0.5))
    for start in range(0, 240, 7):
        pieces.learn(X[start : start + 7], label_sets[start : start + 7])
    _assert_same_bank(whole, pieces)


def test_a_declared_label_never_seen_positive_is_learned_as_all_negative() -> None:
    X, label_sets = multilabel_stream()
    bank = ModelBank(PDM(eps=0.05, delta=0.5))
    bank.declare_labels([99, 10])
    bank.fit(X, label_sets)
    assert bank.labels_.tolist()[:2] == [99.0, 10.0]
    assert bank.positives_.tolist()[0] == 0
    never = bank.learner(99)
    assert never.buffer.examples().labels.tolist() == [-1] * 240
    assert np.all(bank.decision_function(X)[:, 0] < 0)
    assert all(99.0 not in predicted for predicted in bank.predict_sets(X))


def test_argmax_ties_go_to_the_lowest_label_id() -> None:
    X, _ = multilabel_stream()
    # labels 5 and 3 always come together: their learners are identical
    bank = ModelBank(PDM(eps=0.05, delta=0.5)).fit(X, [[5, 3]] * 120 + [[7]] * 120)
    scores = bank.decision_function(X)
    np.testing.assert_array_equal(scores[:, 0], scores[:, 1])
    predicted = bank.predict(X)
    assert set(predicted.tolist()) <= {5.0, 7.0}
    assert 5.0 in predicted  # the id of 5 (seen first) is lower than that of 3
    ranking = bank.rank(X)
    tied = scores[:, 0] >= scores[:, 2]
    assert ranking[tied, 0].tolist() == [5.0] * int(tied.sum())
    assert ranking[tied, 1].tolist() == [3.0] * int(tied.sum())


def test_multiclass_prediction_on_separable_classes() -> None:
    rng = np.random.default_rng(3)
    centres = np.array([[3.0, 0.0], [0.0, 3.0], [-3.0, -3.0]])
    y = rng.integers(0, 3, size=300)
    X = centres[y] + rng.normal(scale=0.5, size=(300, 2))
    bank = ModelBank(PDM(eps=0.05)).fit(X, y)
    assert bank.labels_.tolist() == sorted(bank.labels_.tolist(), key=y.tolist().index)
    assert np.mean(bank.predict(X) == y) > 0.97
    assert bank.converged


def test_paum_per_label_tau_pos_follows_the_fraction_of_positives() -> None:
    X, label_sets = multilabel_stream()
    bank = ModelBank(PAUM(tau_neg=-1.0, tau_pos=10.0, delta=0.5), tau_pos_kappa=-20.0)
    bank.learn(X[:60], label_sets[:60])
    first_20 = next(i for i, s in enumerate(label_sets) if 20 in s)
    # at its start: one positive among the examples presented with it counted
    assert bank.learner(20).tau_pos == pytest.approx(20.0 / (1 + math.exp(20.0 / (first_20 + 1))))
    bank.learn(X[60:], label_sets[60:]).replay()
    for value, positives in zip(bank.labels_, bank.positives_, strict=True):
        expected = 20.0 / (1.0 + math.exp(20.0 * positives / 240))
        assert bank.learner(value).tau_pos == pytest.approx(expected)
        assert positives == sum(value in s for s in label_sets)
    taus = bank.tau_pos_
    assert taus[np.argmin(bank.positives_)] == taus.max()  # the rarest gets the largest


def test_a_declared_label_starts_with_c_zero() -> None:
    bank = ModelBank(PAUM(tau_pos=10.0, delta=0.5), tau_pos_kappa=-20.0)
    bank.learn(np.eye(3), [[1], [], [1]]).declare_labels([2])
    assert bank.learner(2).tau_pos == 10.0  # c = 0: the base tau_pos itself
    assert bank.learner(1).tau_pos == pytest.approx(20.0 / (1 + math.exp(20.0)))  # c = 1/1
    bank.replay()
    assert bank.learner(1).tau_pos == pytest.approx(20.0 / (1 + math.exp(20.0 * 2 / 3)))


def test_tau_pos_kappa_needs_paum() -> None:
    with pytest.raises(InvalidParameterError, match="PAUM"):
        ModelBank(PDM(), tau_pos_kappa=1.0)


def test_auto_delta_is_fixed_once_for_the_bank() -> None:
    X, label_sets = multilabel_stream()
    bank = ModelBank(PDM(eps=0.05)).learn(X, label_sets)
    alone = PDM(eps=0.05).learn(X, one_label_targets(label_sets, 10))
    # learned from the first example, under a provisional Delta from it
    assert bank.n_labels == 4 and bank.delta_ == alone.delta_ is not None
    provisional = bank.delta_
    bank.flush()  # the end of the stream: Delta from every example that came
    alone.flush()
    assert bank.delta_ == alone.delta_ != provisional
    assert all(learner.delta_ == alone.delta_ for learner in bank.learners())


@pytest.mark.parametrize("base", [PDMSucc(eps=0.02), PAUM(delta=0.5)], ids=["pdmsucc", "paum"])
def test_state_round_trip_through_a_checkpoint_continues_exactly(base: LinearLearner) -> None:
    X, label_sets = multilabel_stream()
    kappa = {"tau_pos_kappa": 3.0} if isinstance(base, PAUM) else {}
    bank = ModelBank(base, **kappa).learn(X[:150], label_sets[:150])
    bank.replay(max_passes=2)  # PDM-succ mid-stage, auto-delta examples still pending
    restored = model_from_state(decode(encode(bank.state_dict(), created=0.0)).payload)
    assert isinstance(restored, ModelBank)
    _assert_same_bank(bank, restored)
    for model in (bank, restored):
        model.learn(X[150:], label_sets[150:]).replay()
    _assert_same_bank(bank, restored)
    np.testing.assert_array_equal(bank.decision_function(X), restored.decision_function(X))


def test_bad_states_are_refused() -> None:
    bank = ModelBank(PDM(delta=0.5)).learn(np.eye(3), [[1], [2], []])
    state = bank.state_dict()
    with pytest.raises(StateError, match="version"):
        ModelBank.from_state({**state, "version": 99})
    with pytest.raises(StateError, match="labels"):
        ModelBank.from_state({**state, "learners": state["learners"][:1]})
    with pytest.raises(StateError):
        ModelBank.from_state({k: v for k, v in state.items() if k != "weights"})
    with pytest.raises(StateError, match="beyond the weights"):
        ModelBank.from_state({**state, "n_features": 2})
    buffer = state["buffer"]
    with pytest.raises(StateError, match="signs must be"):
        ModelBank.from_state({**state, "buffer": {**buffer, "signs": buffer["signs"] * 0}})
    features = {**buffer["features"], "indices": buffer["features"]["indices"] - 5}
    with pytest.raises(StateError, match="feature indices must lie in"):
        ModelBank.from_state({**state, "buffer": {**buffer, "features": features}})


def test_an_example_without_labels_is_a_negative_for_every_label() -> None:
    bank = ModelBank(Perceptron(delta=0.0)).learn(np.eye(3), [[1], [], [2]])
    assert bank.learner(1).buffer.examples().labels.tolist() == [1, -1, -1]
    assert bank.learner(2).buffer.examples().labels.tolist() == [-1, -1, 1]


def _assert_same_bank(a: ModelBank, b: ModelBank) -> None:
    assert a.labels_.tolist() == b.labels_.tolist()
    for ours, theirs in zip(a.learners(), b.learners(), strict=True):
        assert_same_learner(ours, theirs)
        assert ours.get_params() == theirs.get_params()
    assert a.summary() == b.summary()


def _rows(X: Any, label_sets: list[list[int]]) -> Any:
    from streamlearn.learn import as_labelled_rows

    return as_labelled_rows(X, label_sets)


def _batch(X: Any, y: np.ndarray) -> Any:
    from streamlearn.learn.inputs import as_batch

    return as_batch(X, y)


def test_a_bank_goes_through_a_checkpoint_store(tmp_path: Any) -> None:
    from streamlearn.checkpoint import CheckpointStore

    X, label_sets = multilabel_stream()
    bank = ModelBank(PDM(eps=0.05, delta=0.5)).fit(X, label_sets)
    store = CheckpointStore(tmp_path, keep=2)
    store.write({"kind": "streamlearn.model", "learner": bank.state_dict()}, created=0.0)
    latest = store.latest()
    assert latest is not None
    restored = model_from_state(latest[1].payload["learner"])
    assert isinstance(restored, ModelBank)
    np.testing.assert_array_equal(restored.decision_function(X), bank.decision_function(X))
    np.testing.assert_array_equal(restored.rank(X), bank.rank(X))


# -- what a bank refuses ---------------------------------------------------------------


def test_a_tuple_of_label_sets_is_read_as_a_list_of_them_is() -> None:
    as_list = ModelBank(PDM(delta=0.0)).learn(np.eye(2), [(0, 1, 2), (5, 6)])
    as_tuple = ModelBank(PDM(delta=0.0)).learn(np.eye(2), ((0, 1, 2), (5, 6)))
    assert as_tuple.labels_.tolist() == as_list.labels_.tolist() == [0, 1, 2, 5, 6]
    two_classes = ModelBank(PDM(delta=0.0)).learn(np.eye(2), (1, 2))
    assert two_classes.labels_.tolist() == [1, 2]
    pair = (np.array([0, 2, 3]), np.array([0.0, 1.0, 5.0]))
    assert ModelBank(PDM(delta=0.0)).learn(np.eye(2), pair).labels_.tolist() == [0, 1, 5]


def test_an_indicator_matrix_is_read_as_scikit_learn_writes_label_sets() -> None:
    """Dense or sparse, 0 and 1: a row's labels are its columns that hold 1, and every
    column is a label, declared before the examples, whether a row holds it or not."""
    import scipy.sparse as sp

    X, sets = multilabel_stream(120, n_labels=3, seed=4)
    columns = [[label // 10 - 1 for label in labels] for labels in sets]  # 10, 20, 30: 0, 1, 2
    n_labels = 4  # the last column: never set
    Y = np.zeros((120, n_labels), dtype=np.int64)
    for row, held in enumerate(columns):
        Y[row, held] = 1
    twin = ModelBank(PAUM(tau_pos=2.0, delta=0.5)).declare_labels(np.arange(n_labels))
    twin.learn(X, columns)
    for form in (Y, Y.astype(bool), sp.csr_matrix(Y), sp.coo_matrix(Y.astype(float))):
        bank = ModelBank(PAUM(tau_pos=2.0, delta=0.5)).learn(X, form)
        assert bank.labels_.tolist() == list(range(n_labels))
        np.testing.assert_array_equal(bank.decision_function(X), twin.decision_function(X))


def test_a_2d_label_array_other_than_an_indicator_matrix_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="indicator matrix and must hold only 0 and 1"):
        ModelBank(PDM()).learn(np.eye(2), np.array([[3, 7], [1, 2]]))
    with pytest.raises(InvalidInputError, match="2 examples but 3 rows of labels"):
        ModelBank(PDM()).learn(np.eye(2), np.zeros((3, 2)))
    bank = ModelBank(PDM())
    with pytest.raises(InvalidInputError, match="indicator matrix"):
        bank.learn(np.eye(2), np.array([[0.0, np.nan], [1.0, 0.0]]))
    assert bank.n_labels == 0  # refused before any label was declared
    with pytest.raises(InvalidInputError, match="got a 3-D array"):
        bank.learn(np.eye(2), np.ones((2, 1, 1)))
    with pytest.raises(InvalidInputError, match="must hold numbers"):
        bank.learn(np.eye(2), np.array([["a", None], [1, 0]], dtype=object))


def test_object_and_matrix_indicators_are_read_as_arrays_are() -> None:
    """A 2-D object array (of numbers) or an np.matrix (a sparse matrix's todense()) is an
    indicator matrix like the plain array: neither is read row by row as label sets."""
    import scipy.sparse as sp

    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]])
    Y = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0], [1, 1, 1]])
    plain = ModelBank(PDM(delta=0.0, eps=0.1)).learn(X, Y)
    for form in (Y.astype(object), sp.csr_matrix(Y).todense()):
        bank = ModelBank(PDM(delta=0.0, eps=0.1)).learn(X, form)
        assert bank.labels_.tolist() == [0.0, 1.0, 2.0]
        np.testing.assert_array_equal(bank.positives_, plain.positives_)
        np.testing.assert_array_equal(bank.decision_function(X), plain.decision_function(X))


def test_decreasing_label_offsets_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="non-decreasing offsets"):
        ModelBank(PDM()).learn(np.eye(2), (np.array([0, 2, 1]), np.array([5.0])))


@pytest.mark.parametrize("labels", [[math.nan], [1.0, math.inf], ["a"]])
def test_declared_labels_must_be_finite_numbers(labels: list[Any]) -> None:
    with pytest.raises(InvalidInputError, match="label values must be"):
        ModelBank(PDM()).declare_labels(labels)


@pytest.mark.parametrize("index", [-1, -(2**32) + 1, 2**31, 10**12])
def test_one_example_indices_outside_the_engines_range_are_refused(index: int) -> None:
    bank = ModelBank(PDM(delta=0.0)).learn(np.eye(3), [1, 2, 3])
    with pytest.raises(InvalidInputError, match=f"feature index {index} is outside"):
        bank.canonical_decisions(np.array([0, index]), np.array([1.0, 1.0]), True)
    if index < 0:
        with pytest.raises(InvalidInputError, match="is negative"):
            bank.decision_row(np.array([index]), np.array([1.0]))


def test_one_example_whose_squared_norm_overflows_is_refused() -> None:
    bank = ModelBank(PDM(delta=0.0)).learn(np.eye(3), [1, 2, 3])
    for values in ([1e308, 1e308], [1e200, 1.0]):  # a repeated index's sum, one square
        with pytest.raises(InvalidInputError, match="values are too large"):
            bank.canonical_decisions(np.array([2, 2]), np.array(values), True)
    assert bank.canonical_decisions(np.array([2]), np.array([math.nan]), True) is None
