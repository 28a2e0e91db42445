"""When a daemon replays: one decision per turn, from what the turn saw.

A daemon's turn polls its source, learns what came, and then may run one replay pass.
:class:`ReplayPolicy` makes that choice from the turn's facts alone (:class:`Turn`: what
the poll returned, whether the source is done, its lag, the window's size and whether
its replay has converged, and the time); it never reads a clock or a learner, so the
same facts give the same answer, and its tests are a table.

The rules, in order:

- **Idle**: nothing arrived, nothing waits in the source (the lag is zero: an empty poll
  while messages wait is a fetch under way, not idle time) and the window has not
  converged: a pass in the idle time (with ``idle_replay``).
- **Paced**: messages arrived and the lag is not growing: a pass when the time allowed
  covers it, ``share`` of the time spent behind the stream (:class:`ReplayPacer`), only
  when no count-based schedule replays instead (``paced``). Credit left from before is
  not spent while the lag grows.
- Else none.

Every pass is cut short after ``pass_limit`` seconds (the decision's ``budget``). Whether
the next poll may wait for messages follows from the same facts: not when a decoded
batch waits to be learned, nor when idle replay is due.

>>> policy = ReplayPolicy(idle_replay=True, share=0.25, pass_limit=0.25)
>>> policy.decide(Turn(now=0.0, polled=0, lag=0, buffered=100, converged=False))
ReplayDecision(action='idle', budget=0.25)
>>> policy.decide(Turn(now=0.1, polled=0, lag=5, buffered=100, converged=False)).action
'none'
>>> policy.decide(Turn(now=0.2, polled=0, lag=0, buffered=100, converged=True)).action
'none'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from streamlearn.replay.pacing import ReplayPacer

Action = Literal["none", "idle", "paced"]


@dataclass(frozen=True)
class Turn:
    """What a turn of the daemon saw, once it has polled and learned."""

    #: the daemon's clock, seconds
    now: float
    #: messages the poll returned
    polled: int
    #: messages waiting in the source over all partitions (None: it cannot tell)
    lag: int | None
    #: examples in the window that replay goes over
    buffered: int
    #: whether the window's replay has converged
    converged: bool
    #: whether a decoded batch still waits to be learned
    in_flight: bool = False
    #: whether the source has ended
    exhausted: bool = False

    @property
    def caught_up(self) -> bool:
        """Nothing waits in the source."""
        return not self.lag


@dataclass(frozen=True)
class ReplayDecision:
    """What to do after a turn: ``action`` and the seconds after which a pass is cut
    short (``budget``)."""

    action: Action
    budget: float


class ReplayPolicy:
    """The replay decision of a daemon (see the module doc)."""

    def __init__(
        self, *, idle_replay: bool, share: float, pass_limit: float, paced: bool = True
    ) -> None:
        self.idle_replay = idle_replay
        self.pass_limit = pass_limit
        #: whether passes are paced by time while behind (False: a count-based schedule
        #: replays instead)
        self.paced = paced
        self.pacer = ReplayPacer(share, pass_limit=pass_limit)

    def idle_due(self, caught_up: bool, buffered: int, converged: bool) -> bool:
        """Whether an empty poll now would be idle time to replay in."""
        return self.idle_replay and caught_up and buffered > 0 and not converged

    def poll_waits(self, in_flight: bool, caught_up: bool, buffered: int, converged: bool) -> bool:
        """Whether the next poll may wait for messages: not while a decoded batch waits
        to be learned, nor while idle replay is due (a steady stream slower than the
        poll's timeout still leaves its gaps to replay)."""
        return not in_flight and not self.idle_due(caught_up, buffered, converged)

    def decide(self, turn: Turn) -> ReplayDecision:
        """The action after ``turn`` (it also accounts the turn's time to the pacer)."""
        behind = turn.polled > 0
        if self.paced:
            self.pacer.tick(turn.now, turn.lag, behind)
        if (
            not behind
            and not turn.in_flight
            and not turn.exhausted
            and self.idle_due(turn.caught_up, turn.buffered, turn.converged)
        ):
            return ReplayDecision("idle", self.pass_limit)
        if (
            self.paced
            and behind
            and not self.pacer.growing  # credit left from before waits too
            and not turn.converged
            and self.pacer.may_replay(turn.buffered)
        ):
            return ReplayDecision("paced", self.pass_limit)
        return ReplayDecision("none", self.pass_limit)

    def ran(self, decision: ReplayDecision, seconds: float, examples: int, turn: Turn) -> None:
        """The pass ``decision`` asked for after ``turn`` took ``seconds`` over
        ``examples`` (an idle pass's time is not counted as time behind the stream)."""
        if decision.action == "paced":
            self.pacer.spent(seconds, examples)
        elif decision.action == "idle":
            self.pacer.timed(seconds, examples)
            if self.paced:
                self.pacer.tick(turn.now + seconds, turn.lag, behind=False)
