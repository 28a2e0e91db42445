"""The replay passes of a daemon: run when its :class:`ReplayPolicy` decides, timed,
bounded, and reported.

A pass the policy asks for after a turn is cut short once its budget has run out (or a
stop is asked for), between two level-1 rounds; at the end of the input, with idle
replay on, the window is replayed until it converges (a stop still ends it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sized
from typing import Protocol

from streamlearn.replay.policy import ReplayPolicy, Turn

log = logging.getLogger("streamlearn.daemon")


class Replayable(Protocol):
    """What replay passes go over: a model, or a keyed daemon's models in memory."""

    @property
    def buffer(self) -> Sized: ...
    @property
    def converged(self) -> bool: ...
    def replay(
        self, max_passes: int | None = None, interrupt: Callable[[], bool] | None = None
    ) -> object: ...


#: a replay slice: at most that many passes, ended early when the callable says so
ReplaySlice = Callable[[int, Callable[[], bool]], None]


class ReplayRunner:
    """Runs the passes ``policy`` decides, on ``clock``; ``observe`` is told the seconds
    each took, ``stopping`` says whether a stop was asked for."""

    def __init__(
        self,
        policy: ReplayPolicy,
        clock: Callable[[], float],
        observe: Callable[[float], None],
        stopping: Callable[[], bool],
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.observe = observe
        self.stopping = stopping

    def after(self, turn: Turn, replay: ReplaySlice) -> bool:
        """One pass of ``replay`` when the policy asks for one after ``turn``; whether
        one ran."""
        decision = self.policy.decide(turn)
        if decision.action == "none":
            return False
        started = self.clock()
        slice_end = started + decision.budget
        replay(1, lambda: self.stopping() or self.clock() >= slice_end)
        seconds = self.clock() - started
        self.observe(seconds)
        self.policy.ran(decision, seconds, turn.buffered, turn)
        return True

    def at_the_end(self, replayed: Replayable) -> bool:
        """At the end of the input, with idle replay on, replay ``replayed`` until it
        converges (at most its ``max_passes``; a stop ends it): input read faster than
        it could be replayed otherwise left the window's online model, with no idle time
        to refit it before the exit. Whether a replay ran."""
        if not self.policy.idle_replay or not len(replayed.buffer) or replayed.converged:
            return False
        started = self.clock()
        replayed.replay(interrupt=self.stopping)
        seconds = self.clock() - started
        self.observe(seconds)
        log.info("end of input: replayed the window for %.1f s, %s", seconds,
                 "converged" if replayed.converged else "stopped before it converged")  # fmt: skip
        return True
