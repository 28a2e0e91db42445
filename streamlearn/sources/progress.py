"""Which partitions make no progress: messages wait in them, and neither the position the
source returns nor the number of messages waiting has moved for longer than a time-out
(a fetch that keeps failing, a broker that went away with the lag known, a consumer
stuck in its own fault). A lag that falls is progress too: standard input skipping
what a checkpoint holds reports the lines still to skip as its lag.

>>> progress = PartitionProgress(timeout=10.0)
>>> progress.observe({0: 5, 1: 7}, {0: 3, 1: 0}, now=0.0)
set()
>>> progress.observe({0: 5, 1: 7}, {0: 3, 1: 0}, now=11.0)   # partition 0: 3 wait, no move
{0}
>>> progress.observe({0: 6, 1: 7}, {0: 2, 1: 0}, now=12.0)   # it moved
set()
>>> progress.observe({0: 6}, {0: 1}, now=30.0)   # the lag fell: progress too
set()
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

log = logging.getLogger("streamlearn.daemon")


class PartitionProgress:
    """Tracks, per partition, when its position last moved or its lag was zero."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        # position and lag, and when either last moved
        self._seen: dict[int, tuple[int | None, int, float]] = {}

    def observe(self, positions: Mapping[int, int], lag: Mapping[int, int], now: float) -> set[int]:
        """The partitions stalled at ``now`` (seconds), given each assigned partition's
        ``lag`` (messages waiting; partitions without one are forgotten) and the source's
        ``positions``."""
        stalled: set[int] = set()
        seen: dict[int, tuple[int | None, int, float]] = {}
        for partition, waiting in lag.items():
            position = positions.get(partition)
            before = self._seen.get(partition)
            moved = before is None or before[0] != position or waiting < before[1]
            if waiting <= 0 or moved:
                seen[partition] = (position, waiting, now)
                continue
            assert before is not None
            seen[partition] = (position, max(waiting, before[1]), before[2])
            if now - before[2] >= self.timeout:
                stalled.add(partition)
        self._seen = seen
        return stalled


class StallWatch:
    """:class:`PartitionProgress` for a daemon: the partitions stalled as of the last
    look (:attr:`stalled`), each logged when it stalls and when it moves again, their
    count told to ``report`` whenever it changes."""

    def __init__(self, timeout: float, report: Callable[[int], None]) -> None:
        self.timeout = timeout
        self.report = report
        self.stalled: set[int] = set()
        self._progress = PartitionProgress(timeout)

    def look(self, positions: Mapping[int, int], lag: Mapping[int, int], now: float) -> None:
        """Look at the source's ``positions`` and ``lag`` at ``now``."""
        stalled = self._progress.observe(positions, lag, now)
        for partition in sorted(stalled - self.stalled):
            log.error(
                "partition %d makes no progress: %d messages wait there and the position "
                "has stayed at %s for %.0f s; the daemon reports not ready", partition,
                lag.get(partition, 0), positions.get(partition), self.timeout,
            )  # fmt: skip
        for partition in sorted(self.stalled - stalled):
            log.info("partition %d makes progress again", partition)
        if stalled != self.stalled:
            self.report(len(stalled))
        self.stalled = stalled
