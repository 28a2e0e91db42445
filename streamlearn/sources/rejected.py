"""What the daemon says of the lines the parser rejects: one log line each, placed in the
stream's own terms, at most ``burst`` lines per ``interval`` seconds; the lines held back
beyond that are counted and said in one line (every rejected line is also counted in
``streamlearn_rejected_lines_total``).

On standard input a message's offset is the number of its first line (from 0), so a line
is named by its number in the whole input; on Kafka by its message and its line there.

>>> rejected_line("stdin", 0, 1000, 3, "bad token")
'rejected line 1003 (bad token)'
>>> rejected_line("kafka:examples", 2, 1000, 3, "bad token")
'message 1000@2: rejected line 3 (bad token)'
>>> import logging
>>> now = [0.0]
>>> said = RejectedLog(logging.getLogger("doc"), burst=2, interval=60.0, clock=lambda: now[0])
>>> [said.lines(f"rejected line {n} (bad token)") for n in (1, 2, 3, 4)]
[['rejected line 1 (bad token)'], ['rejected line 2 (bad token)'], [], []]
>>> now[0] = 61.0
>>> said.lines("rejected line 9 (bad token)")  # doctest: +NORMALIZE_WHITESPACE
['2 more rejected lines not logged (at most 2 are logged per 60 s)',
 'rejected line 9 (bad token)']
>>> said.held
0
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

#: rejected lines logged per interval, at most
LOG_BURST = 10
#: seconds of one interval
LOG_INTERVAL = 60.0


def rejected_line(stream: str, partition: int, offset: int, line: int, reason: str) -> str:
    """What the log says of line ``line`` (1-based) of the message at ``offset`` of
    ``partition`` in ``stream`` (a :attr:`~streamlearn.sources.base.Source.stream`)."""
    if stream == "stdin":
        return f"rejected line {offset + line} ({reason})"
    return f"message {offset}@{partition}: rejected line {line} ({reason})"


class RejectedLog:
    """Every rejected line, up to ``burst`` per ``interval`` seconds; then how many were
    held back, said before the next line logged or by :meth:`flush`."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = LOG_BURST,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._burst = burst
        self._interval = interval
        self._clock = clock
        self._started: float | None = None  # when the current interval began
        self._logged = 0  # lines logged in the current interval
        #: rejected lines held back and not said yet
        self.held = 0

    def report(self, text: str) -> None:
        """Log ``text`` (one rejected line) unless the interval's lines are spent."""
        for line in self.lines(text):
            self._logger.warning("%s", line)

    def lines(self, text: str) -> list[str]:
        """What :meth:`report` logs for ``text``: nothing, it, or the count of those
        held back and then it."""
        now = self._clock()
        if self._started is None or now - self._started >= self._interval:
            self._started, self._logged = now, 0
        if self._logged >= self._burst:
            self.held += 1
            return []
        self._logged += 1
        return [*self._held_back(), text]

    def flush(self) -> None:
        """Say how many lines were held back since the last one logged (at the end)."""
        for line in self._held_back():
            self._logger.warning("%s", line)

    def _held_back(self) -> list[str]:
        if not self.held:
            return []
        held, self.held = self.held, 0
        return [
            f"{held} more rejected line{'s' if held > 1 else ''} not logged "
            f"(at most {self._burst} are logged per {self._interval:.0f} s)"
        ]
