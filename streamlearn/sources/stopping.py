"""How long the parts that wait on the network may still wait once a stop was asked for.

A stop (SIGTERM, SIGINT) gives the daemon a few seconds to finish its batch, write its
last checkpoint and leave: every wait on a broker after that (a delivery, a commit, a
group's last record, leaving the consumer group) takes the time left, not its usual
time-out, so that a broker that does not answer cannot hold the exit.

>>> now = [100.0]
>>> budget = StopBudget(clock=lambda: now[0])
>>> budget.cap(30.0), budget.stopping
(30.0, False)
>>> budget.begin(4.0); now[0] = 101.5
>>> budget.cap(30.0), budget.cap(1.0), budget.stopping
(2.5, 1.0, True)
>>> now[0] = 200.0; budget.cap(30.0)
0.0
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class StopBudget:
    """The deadline of a stop, once one began (shared by everything that waits)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._deadline: float | None = None

    def begin(self, seconds: float) -> None:
        """A stop began: waits end within ``seconds`` from now (a second call keeps the
        first deadline)."""
        if self._deadline is None:
            self._deadline = self._clock() + seconds

    @property
    def stopping(self) -> bool:
        """Whether a stop began."""
        return self._deadline is not None

    def remaining(self) -> float:
        """Seconds left until the deadline (infinite before a stop, 0 after it)."""
        if self._deadline is None:
            return math.inf
        return max(0.0, self._deadline - self._clock())

    def cap(self, timeout: float) -> float:
        """``timeout``, or the time left when that is shorter."""
        return min(timeout, self.remaining())
