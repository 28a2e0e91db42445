"""``delta='auto'``: learned from the first example under a provisional Delta, settled from
the first min(1000, buffer_size) examples with the state rescaled exactly."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from reference import sparse_problem

from streamlearn import PDM, LinearLearner
from streamlearn.learn.one_example import OneExamplePath

LONG = sparse_problem(1300, 20, seed=6, flip=0.05)


def largest_sqnorm(first: int) -> float:
    rows = LONG.rows(0, first)
    sqnorms = np.add.reduceat(rows.values**2, rows.indptr[:-1])
    sqnorms[np.diff(rows.indptr) == 0] = 0.0
    return float(sqnorms.max())


def learn(learner: LinearLearner, start: int, stop: int) -> None:
    rows = LONG.rows(start, stop)
    learner.learn(rows.triple, rows.labels)


def test_the_first_example_is_learned_under_a_provisional_delta() -> None:
    learner = PDM(eps=0.01, rho=1.5)
    learn(learner, 0, 1)
    assert learner.updates == 1.0 and np.any(learner.coef_ != 0.0)
    assert learner.delta_ == pytest.approx(math.sqrt(largest_sqnorm(1) + 1.5**2) / 10)
    assert learner.summary()["pending_examples"] == 0


def assert_sqnorm_under_the_settled_delta(learner: LinearLearner) -> None:
    state = learner.state
    w, slack = state.weights, state.buffer.alpha_sqsum() + state.external_slack
    expected = float(w @ w) + state.beta**2 + learner.delta_**2 * slack
    assert state.sqnorm == pytest.approx(expected, rel=1e-12)


def test_the_end_of_the_stream_settles_delta_and_rescales_the_state_exactly() -> None:
    """Delta = R/10 over the examples that came; w, beta and the slack counts stay, and
    ||a||^2 is that of the same updates under the new Delta."""
    learner = PDM(eps=0.01)
    learn(learner, 0, 599)
    provisional = learner.delta_
    weights, beta = learner.coef_.copy(), learner.intercept_
    alpha = learner.state.buffer.alpha().copy()
    learner.flush()
    assert learner.delta_ == math.sqrt(largest_sqnorm(599) + 1.0) / 10 != provisional
    assert not learner.converged
    np.testing.assert_array_equal(learner.coef_, weights)
    assert learner.intercept_ == beta
    np.testing.assert_array_equal(learner.state.buffer.alpha(), alpha)
    assert_sqnorm_under_the_settled_delta(learner)
    learner.replay()
    assert learner.converged


def test_a_full_window_settles_delta() -> None:
    learner = PDM(eps=0.01, buffer_size=600)  # a window of min(1000, 600) examples
    learn(learner, 0, 900)
    assert learner.delta_ == math.sqrt(largest_sqnorm(600) + 1.0) / 10
    assert learner.window.room == 0
    assert_sqnorm_under_the_settled_delta(learner)


def test_a_replay_takes_delta_from_what_came_and_leaves_the_window_open() -> None:
    learner = PDM(eps=0.01)
    learn(learner, 0, 300)
    learner.replay(max_passes=5)
    assert learner.delta_ == math.sqrt(largest_sqnorm(300) + 1.0) / 10
    assert learner.window.room == 700
    assert_sqnorm_under_the_settled_delta(learner)
    learn(learner, 300, 1300)
    assert learner.delta_ == math.sqrt(largest_sqnorm(1000) + 1.0) / 10


def test_a_state_that_holds_examples_learns_them_first() -> None:
    """Older versions held the window's examples in the state, Delta not yet fixed: such
    a state learns them under Delta from them, then goes on."""
    held = LONG.rows(0, 400)
    old = PDM(eps=0.01).state_dict()
    old.update(
        delta_value=math.nan,
        window_seen=400,
        window_max_sqnorm=largest_sqnorm(400),
        pending={
            "indptr": held.indptr.astype(np.int64),
            "indices": held.indices.astype(np.int32),
            "values": held.values.astype(np.float64),
            "labels": held.labels.astype(np.int8),
        },
    )
    restored = PDM.from_state(old)
    assert restored.summary()["pending_examples"] == 400
    learn(restored, 400, 1300)
    delta = math.sqrt(largest_sqnorm(400) + 1.0) / 10
    fixed = PDM(eps=0.01, delta=delta)
    learn(fixed, 0, 1300)
    assert restored.delta_ == delta and restored.summary()["pending_examples"] == 0
    np.testing.assert_array_equal(restored.coef_, fixed.coef_)
    assert restored.intercept_ == fixed.intercept_


def test_one_example_at_a_time_settles_as_the_batch_path_does() -> None:
    """The per-example path (river's) under delta 'auto': the same provisional Delta, the
    same settling at the 1000th example, the same model bit for bit."""
    path = OneExamplePath(PDM(eps=0.01), on_refresh=lambda new_blocks: None)
    path.bind(min_weights=20)
    for i in range(LONG.n_examples):
        lo, hi = int(LONG.indptr[i]), int(LONG.indptr[i + 1])
        raw = [*LONG.indices[lo:hi].astype(float), *LONG.values[lo:hi]]
        struct.pack_into(f"@{len(raw)}d", path.F, path.raw_offset, *raw)
        sign = float(LONG.labels[i])
        if path.watching:
            assert path.hold(hi - lo, sign) == 0
        else:
            path.settle(sign, path.kernels.learn_one(hi - lo, sign, path.state))
    path.sync()
    batch = PDM(eps=0.01)
    learn(batch, 0, LONG.n_examples)
    assert path.learner.delta_ == batch.delta_ == math.sqrt(largest_sqnorm(1000) + 1.0) / 10
    np.testing.assert_array_equal(path.learner.coef_, batch.coef_)
    assert path.learner.intercept_ == batch.intercept_
    assert path.learner.summary() == batch.summary()
