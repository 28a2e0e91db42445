"""Which partitions' logs went back behind what was learned from them: a broker that lost
its storage, a topic deleted and created again, an unclean leader election.

Two signs, either enough:

- **The log's end went back.** The end offset the broker gives for a partition (its high
  watermark) never decreases while the log keeps its records. It is below the furthest
  one seen (this run, or the checkpoint the daemon resumed from), and below the position
  the daemon resumes from, for ``confirm`` seconds (a new leader's end can lag behind
  the old leader's for a moment): the log that held the learned records is gone.
- **Records came from behind the position.** The consumer was moved back without being
  asked to (its ``auto.offset.reset`` after the broker said the position is out of
  range): what it fetches starts below the position.

A broker's end offset is compared only with ends the same broker gave, never with the
offsets of records, so a broker that reports ends lagging its last batch (Tansu 0.6 gives
its last batch's base offset + 1) raises no false alarm.

>>> guard = LogGuard(confirm=5.0)
>>> guard.expect({0: 100})                                   # a checkpoint's ends
>>> guard.observe_ends({0: 100}, {0: 100}, now=0.0)          # all is well
set()
>>> guard.observe_ends({0: 30}, {0: 100}, now=1.0)           # gone back: wait to confirm
set()
>>> guard.observe_ends({0: 30}, {0: 100}, now=6.5)
{0}
"""

from __future__ import annotations

from collections.abc import Mapping

#: what ``--on-offset-reset`` may say
POLICIES = ("wait", "earliest")


class LogGuard:
    """Per partition, the furthest end seen, and since when the log has been behind."""

    def __init__(self, confirm: float = 5.0) -> None:
        self.confirm = confirm
        self.ends: dict[int, int] = {}
        self._behind_since: dict[int, float] = {}

    def expect(self, ends: Mapping[int, int]) -> None:
        """The ends a checkpoint saw: the logs must not be found behind them."""
        for partition, end in ends.items():
            self.ends[partition] = max(end, self.ends.get(partition, 0))

    def observe_ends(
        self, ends: Mapping[int, int], positions: Mapping[int, int], now: float
    ) -> set[int]:
        """The partitions whose log has been behind (its end below the furthest end
        seen, and below the position) for ``confirm`` seconds at ``now``; the other
        ends are remembered."""
        gone: set[int] = set()
        for partition, end in ends.items():
            furthest = self.ends.get(partition, 0)
            position = positions.get(partition, 0)
            if end >= furthest or position <= end:
                self.ends[partition] = max(end, furthest)
                self._behind_since.pop(partition, None)
                continue
            since = self._behind_since.setdefault(partition, now)
            if now - since >= self.confirm:
                gone.add(partition)
        return gone

    def restart(self, partition: int, end: int) -> None:
        """``partition``'s log is taken as it is now (it is read again from its start)."""
        self.ends[partition] = end
        self._behind_since.pop(partition, None)


def behind(first_offset: int, position: int | None) -> bool:
    """Whether records fetched from ``first_offset`` come from behind ``position`` (the
    consumer moved back on its own).

    >>> behind(0, 5000), behind(5000, 5000), behind(7, None)
    (True, False, False)
    """
    return position is not None and first_offset < position
