"""Whether a Kafka consumer works: its polls, and its group coordinator's answers.

A broker outage never raises out of a poll: the source logs the first failure of a run,
then one line a minute with how many failed meanwhile (the daemon never retries in
silence), and reports itself not ready until a poll works again.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger("streamlearn.sources.kafka")

#: seconds between two log lines while the polls keep failing
FAILING_LOG_INTERVAL = 60.0
#: seconds a heartbeat may wait for its answer before the broker counts as not answering
#: (a frozen broker keeps its connections open: requests only time out after 30 s)
ANSWER_TIMEOUT = 3.0


class PollFailures:
    """The run of failed polls the consumer is in (none: the last poll worked)."""

    def __init__(self) -> None:
        #: whether the last poll failed
        self.failing = False
        self._failures = 0  # failed polls since the last log line about them
        self._logged = -float("inf")

    def failed(self, error: Exception, *, expected: bool) -> None:
        """A poll failed with ``error`` (not ``expected``: a fault of kafka-python's own,
        logged with its traceback)."""
        self.failing = True
        self._failures += 1
        now = time.monotonic()
        if now - self._logged < FAILING_LOG_INTERVAL:
            return
        if self._failures == 1:
            log.warning("Kafka poll failed (will retry): %r", error, exc_info=not expected)
        else:
            log.warning("Kafka polls still failing: %d failed in the last %.0f s, the last "
                        "with %r (will retry)", self._failures, FAILING_LOG_INTERVAL, error,
                        exc_info=not expected)  # fmt: skip
        self._failures = 0
        self._logged = now

    def worked(self) -> None:
        """A poll worked: the run of failures, if any, is over."""
        if self.failing:
            log.info("Kafka polls work again")
        self.failing = False
        self._failures = 0


def answers(coordinator: Any) -> bool:
    """Whether the group coordinator answers: no heartbeat has waited for its answer
    longer than :data:`ANSWER_TIMEOUT`."""
    heartbeat = getattr(coordinator, "heartbeat", None)
    if heartbeat is None:
        return True
    waiting = heartbeat.last_send > heartbeat.last_receive
    return not (waiting and time.monotonic() - heartbeat.last_send > ANSWER_TIMEOUT)
