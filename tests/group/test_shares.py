"""Shares of a dual model: a learner of a group holds every member's share, learns with
their sum, and gives back exactly its own."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import PDM, Kozinec, ModelBank
from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.learn.contribution import Contribution, GroupShares, summed

RHO = 1.0
DELTA = 1.0


def _data(seed: int, n: int = 300, d: int = 12) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    direction = np.random.default_rng(99).normal(size=d)
    X = rng.normal(size=(n, d))
    y = np.where(X @ direction + rng.normal(scale=0.7, size=n) > 0, 1, -1)
    return X, y


def _learner() -> PDM:
    return PDM(eps=0.1, delta=DELTA, rho=RHO, buffer_size=200)


def _window_share(learner: PDM) -> tuple[np.ndarray, float, float, float]:
    """w, beta, t and sum alpha^2 of the learner's window, from its examples alone."""
    buffer = learner.buffer
    rows = buffer.examples()
    alpha = buffer.slot_alpha[buffer.live_slots()]
    w = np.zeros(learner.state.n_features)
    for k in range(rows.n_examples):
        lo, hi = rows.indptr[k], rows.indptr[k + 1]
        w[rows.indices[lo:hi]] += alpha[k] * rows.labels[k] * rows.values[lo:hi]
    return w, RHO * float(alpha @ rows.labels), float(alpha.sum()), float(alpha @ alpha)


def test_own_share_is_the_window_combination_after_adopting_the_others() -> None:
    """Two members learn their halves (the window evicting), exchange shares, and learn
    on: each one's own share stays the combination of its own window."""
    a, b = _learner(), _learner()
    shares_a, shares_b = GroupShares(a), GroupShares(b)
    for step in range(3):
        for learner, seed in ((a, 10 + step), (b, 20 + step)):
            learner.learn(*_data(seed))
            learner.replay(max_passes=1)
        mine_a, mine_b = shares_a.own(), shares_b.own()
        shares_a.adopt([mine_a, mine_b], own_at=0)
        shares_b.adopt([mine_a, mine_b], own_at=1)
        np.testing.assert_array_equal(a.state.weights, b.state.weights)
        assert a.state.scalars.tolist()[:3] == b.state.scalars.tolist()[:3]
    assert a.buffer.evicted > 0  # the windows moved on
    for learner, shares in ((a, shares_a), (b, shares_b)):
        w, beta, t, slack = _window_share(learner)
        own = shares.own()
        dense = np.zeros(w.shape[0])
        own.add_to(dense)
        np.testing.assert_allclose(dense, w, rtol=1e-9, atol=1e-9)
        assert own.beta == pytest.approx(beta, rel=1e-9, abs=1e-9)
        assert own.updates == pytest.approx(t, rel=1e-12)
        assert own.slack == pytest.approx(slack, rel=1e-12)


def test_the_sum_keeps_the_norm_and_the_count_of_both() -> None:
    a, b = _learner().learn(*_data(1)), _learner().learn(*_data(2))
    mine_a, mine_b = GroupShares(a).own(), GroupShares(b).own()
    shares = GroupShares(a)
    shares.adopt([mine_a, mine_b], own_at=0)
    state = a.state
    w, (beta, t, slack) = summed([mine_a, mine_b], 0)
    np.testing.assert_array_equal(state.weights[: w.shape[0]], w)
    assert state.updates == t == mine_a.updates + mine_b.updates
    expected = float(w @ w) + beta**2 + DELTA**2 * slack
    assert state.sqnorm == pytest.approx(expected, rel=1e-12)
    assert state.external_slack == mine_b.slack


def test_the_common_bound_holds_for_the_union_of_the_windows() -> None:
    """||h|| / s of the summed shares is above the margin any direction reaches on the
    union of the windows (weak duality), the members' own directions included."""
    a, b = _learner().learn(*_data(3)), _learner().learn(*_data(4))
    for learner in (a, b):
        learner.replay()
    own = [GroupShares(a).own(), GroupShares(b).own()]
    w, (beta, t, slack) = summed(own, 0)
    bound = np.sqrt(float(w @ w) + beta**2 + DELTA**2 * slack) / t
    X = np.vstack([_data(3)[0], _data(4)[0]])
    y = np.concatenate([_data(3)[1], _data(4)[1]])
    # only the windows count: the last 200 of each
    X, y = np.vstack([X[100:300], X[400:600]]), np.concatenate([y[100:300], y[400:600]])
    rng = np.random.default_rng(0)
    directions = [np.append(learner.coef_.ravel(), learner.intercept_) for learner in (a, b)]
    directions += [rng.normal(size=X.shape[1] + 1) for _ in range(50)]
    for u in directions:
        u = u / np.linalg.norm(u)
        margin = np.min(y * (X @ u[:-1] + RHO * u[-1]))
        assert margin <= bound


def test_a_share_says_how_many_evicted_examples_it_still_holds() -> None:
    X, y = _data(5)
    learner = _learner().learn(X[:200], y[:200]).replay()  # a window of 200
    learner.learn(X[200:], y[200:])
    own = GroupShares(learner).own()
    assert own.evicted == 100
    assert Contribution.from_plain(own.to_plain(), max_features=64) == own
    assert own.at_exponent(1).evicted == 100
    learner.replay(max_passes=1)
    assert GroupShares(learner).own().evicted == 0


def test_shares_move_between_units_exactly() -> None:
    share = Contribution.of(np.array([3.0, 0.0, -1.5]), beta=0.5, updates=7.0, slack=2.0)
    down = share.at_exponent(2)
    assert down.at_exponent(0) == share
    assert down.updates == 7.0 * 2.0**-40


@pytest.mark.parametrize(
    "plain",
    [
        {"indices": np.array([2, 1]).tobytes(), "values": np.ones(2).tobytes()},
        {"indices": np.array([0]).tobytes(), "values": np.array([np.nan]).tobytes()},
        {"indices": np.array([5]).tobytes(), "values": np.ones(1).tobytes()},
        {"indices": np.array([0]).tobytes(), "values": np.ones(2).tobytes()},
    ],
    ids=["unsorted", "nan", "beyond max features", "lengths differ"],
)
def test_a_malformed_share_is_refused(plain: dict[str, bytes]) -> None:
    with pytest.raises(StateError):
        Contribution.from_plain(
            {**plain, "beta": 0.0, "updates": 1.0, "slack": 1.0, "exponent": 0}, max_features=4
        )


def test_only_window_semantics_and_summable_rules_form_groups() -> None:
    with pytest.raises(InvalidParameterError, match="window"):
        GroupShares(PDM(delta=1.0, forget="never"))
    with pytest.raises(InvalidParameterError, match="convex"):
        GroupShares(Kozinec())
    with pytest.raises(InvalidParameterError, match="one binary model"):
        GroupShares(ModelBank(PDM(delta=1.0)))


def _dense(share: Contribution, n: int) -> np.ndarray:
    w = np.zeros(n)
    share.add_to(w)
    return w


def test_a_damped_share_moves_by_its_part_of_the_change_past_evictions() -> None:
    """Damping keeps ``keep`` of the whole change since the last damp, the part of the
    examples evicted meanwhile (their rows gone) included: the share published is
    s' + keep (s - s'), as model averaging moves it. With the evicted examples' change
    kept whole beside a window damped to 1/K, members of a group whose windows evicted
    leaned towards the labels of the evicted examples (accuracy 0.24 on a9a)."""
    learner = _learner()
    shares = GroupShares(learner)
    learner.learn(*_data(1))
    learner.replay(max_passes=2)
    shares.damp(0.5)
    before = shares.own(slack=False)
    learner.learn(*_data(2, n=120))  # evicts examples the replay saw: they stay in w
    learner.replay(max_passes=1)
    learner.learn(*_data(3, n=120))
    assert learner.state.evictions_pending > 0
    now = shares.own(slack=False)
    shares.damp(0.5)
    after = shares.own(slack=False)
    n = max(before.n_features, now.n_features, after.n_features)
    expected = 0.5 * _dense(before, n) + 0.5 * _dense(now, n)
    np.testing.assert_allclose(_dense(after, n), expected, rtol=1e-9, atol=1e-9)
    assert after.beta == pytest.approx(0.5 * (before.beta + now.beta))
    assert after.updates == pytest.approx(0.5 * (before.updates + now.updates))
    assert after.evicted > 0  # not a combination of the window alone: no bound from it


def test_the_next_replay_takes_the_part_outside_the_window_out() -> None:
    """What damping left of evicted examples goes at the next replay, as evictions
    pending do: the share is the window's combination again."""
    learner = _learner()
    shares = GroupShares(learner)
    learner.learn(*_data(1))
    learner.replay(max_passes=2)
    shares.damp(0.5)
    learner.learn(*_data(2, n=150))
    shares.damp(0.5)
    assert learner.state.outside_window
    learner.replay(max_passes=1)
    assert not learner.state.outside_window and learner.state.evictions_pending == 0
    w, beta, t, _ = _window_share(learner)
    own = shares.own()
    np.testing.assert_allclose(_dense(own, w.shape[0]), w, rtol=1e-9, atol=1e-9)
    assert own.beta == pytest.approx(beta) and own.updates == pytest.approx(t)
    assert own.evicted == 0
