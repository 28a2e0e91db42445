"""kafka-python's logs, kept to what an operator needs: stalls that matter, and each
kind of warning once a minute.

kafka-python 3.0 runs its network I/O as tasks on one loop and logs a warning whenever
one step of a task takes over 0.1 s ("Task ... ran for 0.159s (>0.100s threshold)...").
In the daemon that loop shares the GIL with the learner and the parser, so steps of a
few tenths of a second are routine and harmless; a step of a second or more (against
heartbeats every 3 s and a session timeout of 10 s by default) is worth an operator's
attention. :func:`keep_long_stalls_only` drops the shorter ones.

While a broker is unreachable, kafka-python logs the same few warnings (a connection
lost, a request timed out, the coordinator marked dead) every few seconds, for every
connection. :class:`OncePerInterval` lets each kind (its logger and message template)
through once per interval and says, when it next lets one through, how many it held back.

>>> slow = logging.LogRecord("kafka.net.selector", logging.WARNING, "", 0,
...                          "Task <t> ran for 0.240s (>0.100s threshold). It is...", (), None)
>>> LongStallsOnly().filter(slow)
False
>>> slow.msg = "Task <t> ran for 2.500s (>0.100s threshold). It is..."
>>> LongStallsOnly().filter(slow)
True
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

#: the logger of kafka-python's network loop
SELECTOR_LOGGER = "kafka.net.selector"
#: slow-task warnings of shorter steps are dropped
LONG_STALL_SECONDS = 1.0
_SLOW_TASK = re.compile(r"Task .* ran for ([0-9.]+)s")


class LongStallsOnly(logging.Filter):
    """Passes every record except slow-task warnings under :data:`LONG_STALL_SECONDS`."""

    def filter(self, record: logging.LogRecord) -> bool:
        match = _SLOW_TASK.match(record.getMessage())
        return match is None or float(match.group(1)) >= LONG_STALL_SECONDS


def keep_long_stalls_only() -> None:
    """Put :class:`LongStallsOnly` on kafka-python's network-loop logger (once)."""
    logger = logging.getLogger(SELECTOR_LOGGER)
    if not any(isinstance(f, LongStallsOnly) for f in logger.filters):
        logger.addFilter(LongStallsOnly())


#: seconds between two log lines of one kind of kafka-python warning
REPEAT_INTERVAL = 60.0


class OncePerInterval(logging.Filter):
    """Passes the first record of each kind (logger, level and message template) in each
    ``interval`` seconds; the next one passed says how many were held back meanwhile.

    >>> clock = iter([0.0, 1.0, 2.0, 61.0]).__next__
    >>> limit = OncePerInterval(60.0, clock=clock)
    >>> def record(port: int) -> logging.LogRecord:
    ...     return logging.LogRecord("kafka.conn", logging.WARNING, "", 0,
    ...                              "%s: Connection lost", (port,), None)
    >>> [limit.filter(record(p)) for p in (1, 2, 3)]
    [True, False, False]
    >>> last = record(4)
    >>> limit.filter(last), last.getMessage()
    (True, '4: Connection lost (2 more like it in the last 61 s)')
    """

    def __init__(self, interval: float = REPEAT_INTERVAL, *, clock: Any = time.monotonic) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._kinds: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        seen = self._kinds.get(kind)
        if seen is not None and now - seen[0] < self.interval:
            self._kinds[kind] = (seen[0], seen[1] + 1)
            return False
        if seen is not None and seen[1]:
            record.msg = (
                f"{record.getMessage()} ({seen[1]} more like it in the last {now - seen[0]:.0f} s)"
            )
            record.args = ()
        if len(self._kinds) >= MAX_KINDS:  # a bound on what it remembers
            self._kinds.clear()
        self._kinds[kind] = (now, 0)
        return True


#: kinds of message remembered at most
MAX_KINDS = 1000


def limit_repeats(interval: float = REPEAT_INTERVAL) -> None:
    """Put one :class:`OncePerInterval` on every kafka-python logger that exists now
    (filters of a logger see only its own records, not its children's), once."""
    shared = OncePerInterval(interval)
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if not (name == "kafka" or name.startswith("kafka.")):
            continue
        if isinstance(logger, logging.Logger) and not any(
            isinstance(f, OncePerInterval) for f in logger.filters
        ):
            logger.addFilter(shared)


#: the logger of kafka-python's connections
TRANSPORT_LOGGER = "kafka.net.transport"


class ClosedSocketReads(logging.Filter):
    """Drops kafka-python's error about a read on a connection it has just closed (its
    I/O loop still reading a socket that ``close`` set to None: an ``AttributeError``
    with a traceback, logged as an error when a client closes, though nothing failed),
    and keeps a read that a broker's going away broke as one line, without the socket
    call's traceback.

    >>> import sys
    >>> try:
    ...     raise ConnectionResetError(104, "Connection reset by peer")
    ... except ConnectionResetError:
    ...     info = sys.exc_info()
    >>> reset = logging.LogRecord(TRANSPORT_LOGGER, logging.ERROR, "", 0,
    ...     "%s: Error receiving network data closing socket", ("<t>",), info)
    >>> ClosedSocketReads().filter(reset), reset.exc_info, reset.getMessage()[-34:]
    (True, None, "(104, 'Connection reset by peer'))")

    >>> import sys
    >>> try:
    ...     None.recv(4096)
    ... except AttributeError:
    ...     info = sys.exc_info()
    >>> closing = logging.LogRecord(TRANSPORT_LOGGER, logging.ERROR, "", 0,
    ...     "%s: Error receiving network data closing socket", ("<t>",), info)
    >>> ClosedSocketReads().filter(closing)
    False
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, ConnectionError):
            # a broker gone mid-read (reset, refused): the line says so, and the client
            # reconnects; a traceback of the socket call would only look like a crash
            record.msg = f"{record.msg} ({error!r})"
            record.exc_info = None
            record.exc_text = None
            return True
        return not (
            isinstance(error, AttributeError)
            and "'NoneType' object has no attribute 'recv'" in str(error)
        )


def tame_kafka_logs() -> None:
    """:func:`keep_long_stalls_only`, :func:`limit_repeats` and
    :class:`ClosedSocketReads`: what the Kafka clients' makers call."""
    keep_long_stalls_only()
    limit_repeats()
    logger = logging.getLogger(TRANSPORT_LOGGER)
    if not any(isinstance(f, ClosedSocketReads) for f in logger.filters):
        logger.addFilter(ClosedSocketReads())
