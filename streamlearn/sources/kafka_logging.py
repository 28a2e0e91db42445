"""kafka-python's slow-task warnings, kept for stalls that matter.

kafka-python 3.0 runs its network I/O as tasks on one loop and logs a warning whenever
one step of a task takes over 0.1 s ("Task ... ran for 0.159s (>0.100s threshold)...").
In the daemon that loop shares the GIL with the learner and the parser, so steps of a
few tenths of a second are routine and harmless; a step of a second or more (against
heartbeats every 3 s and a session timeout of 10 s by default) is worth an operator's
attention. :func:`keep_long_stalls_only` drops the shorter ones.

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
