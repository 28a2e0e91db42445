"""Runs are functions of their input and seed: split streams, restarts and seeds."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
from reference import Problem, sparse_problem

import streamlearn
from streamlearn import PAUM, PDM, PFM, Kozinec, LinearLearner, PDMSucc
from streamlearn.learn.state import unpacked_weights

SMALL = sparse_problem(80, 20, seed=5, flip=0.1)
#: longer than the 1000-example window that fixes delta='auto'
LONG = sparse_problem(1300, 20, seed=6, flip=0.05)

FACTORIES: dict[str, Any] = {
    "pdm": lambda **kw: PDM(eps=0.005, **kw),
    "paum": lambda **kw: PAUM(tau_neg=-0.5, tau_pos=2.0, lr=0.7, **kw),
    "pdm-succ": lambda **kw: PDMSucc(eps=0.01, **kw),
    "pfm": lambda **kw: PFM(beta=0.005, **kw),  # below every margin here
    "kozinec": lambda **kw: Kozinec(eps=0.02, **kw),
}


def make(name: str, **kwargs: Any) -> LinearLearner:
    learner: LinearLearner = FACTORIES[name](**kwargs)
    return learner


def learn(learner: LinearLearner, data: Problem) -> None:
    learner.learn(data.triple, data.labels)


def assert_identical(a: LinearLearner, b: LinearLearner) -> None:
    """Bit-identical weights, bias, counts, slack and summary."""
    assert np.array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    assert np.array_equal(a.state.scalars, b.state.scalars)
    assert np.array_equal(a.buffer.alpha(), b.buffer.alpha())
    summary_a, summary_b = a.summary(), b.summary()
    assert summary_a.keys() == summary_b.keys()
    for key, value in summary_a.items():
        other = summary_b[key]
        both_nan = isinstance(value, float) and math.isnan(value) and math.isnan(other)
        assert both_nan or value == other, key


@pytest.mark.parametrize("name", ["pdm", "paum"])
def test_same_seed_and_input_give_identical_weights(name: str) -> None:
    first, second = make(name, delta=0.3, seed=4), make(name, delta=0.3, seed=4)
    for learner in (first, second):
        learn(learner, SMALL)
        learner.replay(max_passes=50)
    assert first.updates > 0
    assert_identical(first, second)


@pytest.mark.parametrize("delta", [0.3, "auto"])
@pytest.mark.parametrize("name", ["pdm", "paum"])
def test_learning_in_two_calls_equals_one_call(name: str, delta: float | str) -> None:
    whole, split = make(name, delta=delta), make(name, delta=delta)
    learn(whole, LONG)
    learn(split, LONG.rows(0, 400))  # with 'auto', shorter than the delta window
    if delta == "auto":  # learned under the provisional Delta, nothing held back
        assert split.examples_presented == 400 and split.window.room == 600
        assert split.summary()["pending_examples"] == 0
    learn(split, LONG.rows(400, LONG.n_examples))
    assert split.delta_ == whole.delta_
    assert whole.delta_ is not None and whole.delta_ > 0
    assert_identical(whole, split)
    whole.replay(max_passes=3)
    split.replay(max_passes=3)
    assert_identical(whole, split)


def test_auto_delta_is_fixed_by_the_first_window() -> None:
    """Delta = R / 10 with R the largest ||[x, rho]|| among the first 1000 examples."""
    learner = make("pdm", delta="auto", rho=1.5)
    learn(learner, LONG)
    window = LONG.rows(0, 1000)
    sqnorms = np.add.reduceat(window.values**2, window.indptr[:-1])
    sqnorms[np.diff(window.indptr) == 0] = 0.0
    assert learner.delta_ == pytest.approx(math.sqrt(sqnorms.max() + 1.5**2) / 10, rel=1e-12)


@pytest.mark.parametrize("round_trip", ["class", "learner_from_state"])
@pytest.mark.parametrize("delta", [0.3, "auto"])
@pytest.mark.parametrize("name", list(FACTORIES))
def test_restart_mid_stream_continues_exactly(
    name: str, delta: float | str, round_trip: str
) -> None:
    data = LONG.rows(0, 1100) if delta == "auto" else SMALL
    cut = 500 if delta == "auto" else 37  # with 'auto': examples still pending at the cut
    never_stopped = make(name, delta=delta, seed=9)
    learn(never_stopped, data)
    never_stopped.replay(max_passes=40)

    before = make(name, delta=delta, seed=9)
    learn(before, data.rows(0, cut))
    restored = restore(before, round_trip)
    learn(restored, data.rows(cut, data.n_examples))
    restored.replay(max_passes=40)
    assert_identical(never_stopped, restored)


@pytest.mark.parametrize("round_trip", ["class", "learner_from_state"])
@pytest.mark.parametrize("name", list(FACTORIES))
def test_restart_mid_replay_continues_exactly(name: str, round_trip: str) -> None:
    never_stopped, interrupted = make(name, delta=0.3, seed=2), make(name, delta=0.3, seed=2)
    for learner in (never_stopped, interrupted):
        learn(learner, SMALL)
        learner.replay(max_passes=1)
    assert not interrupted.converged
    restored = restore(interrupted, round_trip)
    assert_identical(interrupted, restored)
    never_stopped.replay(max_passes=40)
    restored.replay(max_passes=40)
    assert never_stopped.summary()["passes"] > 2
    assert_identical(never_stopped, restored)


def restore(learner: LinearLearner, how: str) -> LinearLearner:
    state = learner.state_dict()
    if how == "class":
        return type(learner).from_state(state)
    restored = streamlearn.learner_from_state(state)
    assert type(restored) is type(learner)
    return restored


def test_pdm_succ_restart_keeps_its_stage() -> None:
    learner = make("pdm-succ", delta=0.3)
    learn(learner, SMALL)
    learner.replay(max_passes=4)
    restored = restore(learner, "learner_from_state")
    assert isinstance(restored, PDMSucc)
    assert restored.summary()["current_eps"] == learner.summary()["current_eps"]


def check_plain(value: Any, where: str = "state") -> None:
    """Only numbers, strings, bools, None, dicts with string keys, lists and arrays."""
    if value is None or isinstance(value, bool | int | float | str | np.ndarray):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), f"{where}: key {key!r}"
            check_plain(item, f"{where}.{key}")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            check_plain(item, f"{where}[{i}]")
        return
    raise AssertionError(f"{where} holds a {type(value).__name__}: {value!r}")


@pytest.mark.parametrize("delta", [0.3, "auto"])
@pytest.mark.parametrize("name", list(FACTORIES))
def test_state_dict_holds_plain_values(name: str, delta: float | str) -> None:
    learner = make(name, delta=delta)
    check_plain(learner.state_dict())
    learn(learner, SMALL)
    check_plain(learner.state_dict())  # with 'auto': examples pending
    learner.replay(max_passes=2)
    check_plain(learner.state_dict())


def assert_states_equal(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for key in a:
            assert_states_equal(a[key], b[key])
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype
        assert np.array_equal(a, b, equal_nan=True)
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b)
    else:
        assert a == b


def test_state_dict_is_a_snapshot_and_from_state_copies() -> None:
    learner = make("pdm", delta=0.3)
    learn(learner, SMALL.rows(0, 40))
    state = learner.state_dict()
    kept = copy.deepcopy(state)
    restored = PDM.from_state(state)
    for continuing in (learner, restored):
        learn(continuing, SMALL.rows(40, 80))
        continuing.replay(max_passes=5)
    assert_states_equal(state, kept)
    assert_identical(learner, restored)


def test_different_seeds_give_different_replay_orders() -> None:
    first, second = make("pdm", delta=0.3, seed=0), make("pdm", delta=0.3, seed=1)
    for learner in (first, second):
        learn(learner, SMALL)
    assert np.array_equal(first.coef_, second.coef_)  # the stream pass ignores the seed
    for learner in (first, second):
        learner.replay(max_passes=50)
    assert not np.array_equal(first.coef_, second.coef_)
    assert not np.array_equal(first.buffer.alpha(), second.buffer.alpha())


def test_states_whose_parts_disagree_are_refused() -> None:
    """A buffer holding features the weights do not have, or pending examples with a
    negative index, would make the kernels read outside the weights: refused on load."""
    learner = PDM(delta=0.0)
    X = np.zeros((4, 100))
    X[0, 99], X[1, 50], X[2, 98], X[3, 3] = 1.0, -1.0, 1.0, -1.0
    learner.learn(X, [1, -1, 1, -1])
    state = learner.state_dict()
    with pytest.raises(streamlearn.StateError, match="beyond the weights"):
        PDM.from_state({**state, "weights": unpacked_weights(state["weights"])[:10]})
    with pytest.raises(streamlearn.StateError, match="scalars"):
        PDM.from_state({**state, "scalars": state["scalars"][:2]})
    waiting = PDM(delta="auto").learn(X, [1, -1, 1, -1]).state_dict()
    assert waiting["pending"]["indices"].shape[0] == 0  # as older versions held them:
    pending = {
        "indptr": np.array([0, 1], dtype=np.int64),
        "indices": np.array([-200], dtype=np.int32),
        "values": np.array([1.0]),
        "labels": np.array([1], dtype=np.int8),
    }
    with pytest.raises(streamlearn.StateError, match="pending examples"):
        PDM.from_state({**waiting, "pending": pending})
