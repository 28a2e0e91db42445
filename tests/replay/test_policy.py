"""The daemon's replay decision as a table: a turn's facts in, the action out."""

from __future__ import annotations

import pytest

from streamlearn.replay.policy import ReplayPolicy, Turn

BUDGET = 0.25


def policy(*, idle: bool = True, share: float = 0.25, paced: bool = True) -> ReplayPolicy:
    return ReplayPolicy(idle_replay=idle, share=share, pass_limit=BUDGET, paced=paced)


def turn(**facts: object) -> Turn:
    base: dict[str, object] = {"now": 0.0, "polled": 0, "lag": 0, "buffered": 100,
                               "converged": False}  # fmt: skip
    return Turn(**{**base, **facts})  # type: ignore[arg-type]


#: one turn of a fresh policy: (what the turn saw, the policy's options, the action)
FIRST_TURNS = [
    ("nothing came, nothing waits", {}, {}, "idle"),
    ("nothing came, a fetch under way", {"lag": 7}, {}, "none"),
    ("the source cannot tell its lag", {"lag": None}, {}, "idle"),
    ("converged", {"converged": True}, {}, "none"),
    ("an empty window", {"buffered": 0}, {}, "none"),
    ("idle replay off", {}, {"idle": False}, "none"),
    ("a decoded batch waited and was learned", {"in_flight": True}, {}, "none"),
    ("the source ended", {"exhausted": True}, {}, "none"),
    ("messages came: no time accrued yet", {"polled": 5, "lag": 3}, {}, "none"),
    ("a count-based schedule, idle", {}, {"paced": False}, "idle"),
]


@pytest.mark.parametrize(
    ("facts", "options", "action"),
    [row[1:] for row in FIRST_TURNS],
    ids=[row[0] for row in FIRST_TURNS],
)
def test_one_turn(facts: dict[str, object], options: dict[str, object], action: str) -> None:
    decision = policy(**options).decide(turn(**facts))  # type: ignore[arg-type]
    assert decision.action == action and decision.budget == BUDGET


#: turns in sequence of one policy (share 0.25, passes cut at 0.25 s, each taking 0.2 s):
#: (now, polled, lag, converged), the action expected after each
BEHIND = [
    ((0.0, 10, 50, False), "none"),  # the first turn starts the clock
    ((1.0, 10, 45, False), "paced"),  # 0.25 s of credit: a cut pass fits
    ((2.0, 10, 40, False), "paced"),  # 0.05 + 0.25 s >= the last pass's 0.2 s
    ((2.1, 10, 39, False), "none"),  # 0.125 s left: short of a pass
    ((2.5, 10, 90, False), "none"),  # the lag grows: nothing accrues, nothing is spent
    ((3.0, 10, 80, False), "paced"),  # 0.125 + 0.125 s left, the lag falls again
    ((4.0, 10, 70, True), "none"),  # converged: no pass, and 0.3 s of credit left
    ((4.5, 10, 95, False), "none"),  # new examples, but the lag grows: the credit waits
    ((5.0, 10, 90, False), "paced"),  # the lag falls: the credit goes to a pass
    ((6.0, 0, 0, False), "idle"),  # caught up: the idle time is replay time
]


def test_a_stream_that_runs_behind_then_catches_up() -> None:
    replay = policy()
    actions = []
    for (now, polled, lag, converged), _ in BEHIND:
        seen = turn(now=now, polled=polled, lag=lag, converged=converged)
        decision = replay.decide(seen)
        actions.append(decision.action)
        if decision.action != "none":
            replay.ran(decision, 0.2, seen.buffered, seen)
    assert actions == [action for _, action in BEHIND]


def test_without_pacing_only_idle_time_replays() -> None:
    replay = policy(paced=False)
    for now in range(10):
        assert replay.decide(turn(now=float(now), polled=10, lag=5)).action == "none"
    assert replay.decide(turn(now=10.0)).action == "idle"


def test_idle_time_is_not_banked_for_the_next_burst() -> None:
    replay = policy()
    idle = turn(now=0.0)
    assert replay.decide(idle).action == "idle"
    replay.ran(replay.decide(idle), 30.0, 100, idle)  # a long idle pass
    # back behind the stream 30 s later: none of the idle pass's time became credit
    assert replay.decide(turn(now=30.5, polled=10, lag=5)).action == "none"
    assert replay.pacer.credit == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    ("in_flight", "caught_up", "converged", "waits"),
    [
        (False, True, True, True),
        (True, True, True, False),
        (False, True, False, False),
        (False, False, False, True),
    ],
)
def test_the_poll_waits_only_when_nothing_is_due(
    in_flight: bool, caught_up: bool, converged: bool, waits: bool
) -> None:
    assert policy().poll_waits(in_flight, caught_up, 100, converged) is waits
