"""The pace of a member's syncs: what it learned between two records, when it next looks
at the sync topic, and whether a check of the policy (:class:`SyncPolicy`) publishes.

A member counts the examples it learns and cuts the daemon's batches where the policy's
next check comes due; it looks at the sync topic every :data:`READ_INTERVAL` seconds at
most while the stream flows, and at every turn once the stream is idle; and it keeps
publishing within its share of the time (:meth:`SyncPolicy.pause_after`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from streamlearn.group.policy import SyncPolicy

#: seconds between two looks at the sync topic while the stream flows (a look costs a
#: round trip to the client's I/O thread, about 0.25 ms)
READ_INTERVAL = 0.05


class SyncPace:
    """A member's count of examples and times, under ``policy``, by ``clock``."""

    def __init__(self, policy: SyncPolicy, clock: Callable[[], float]) -> None:
        self.policy = policy
        self.clock = clock
        #: labelled examples this member learned
        self.examples = 0
        #: the count of examples at the policy's last check
        self.checked = 0
        self.published_at = clock()
        #: when the member last learned examples: the stream is idle only
        #: ``policy.idle_after`` seconds after
        self.arrived_at = -math.inf
        #: whether the learner moved since the member's last record
        self.dirty = False
        #: whether the stream was idle at the last turn: only then do the window's replays
        #: answer to the group's certificate (a pass over the window each time)
        self.idle = False
        #: no check publishes before this time (the policy's share of the time)
        self.publish_allowed = -math.inf
        #: checks that asked for a record while publishing had used its share of the time
        self.deferred = 0
        self.read_at = -math.inf

    def learned(self, examples: int) -> None:
        """The member learned ``examples`` labelled examples (none: it only stands
        elsewhere in its partitions)."""
        self.examples += examples
        if examples:
            self.arrived_at = self.clock()
        self.dirty = True

    def until_check(self) -> int:
        """Examples to learn before the policy's next check is due (1 at least)."""
        return max(1, self.policy.every - (self.examples - self.checked))

    def idle_now(self, idle: bool) -> bool:
        """Whether the stream is idle: the daemon says it is (``idle``: caught up,
        nothing arrived), and nothing was learned for ``policy.idle_after`` seconds."""
        return idle and self.clock() - self.arrived_at >= self.policy.idle_after

    def read_due(self, idle: bool) -> bool:
        """Whether to look at the sync topic now (then counted as looked at)."""
        if idle or self.clock() - self.read_at >= READ_INTERVAL:
            self.read_at = self.clock()
            return True
        return False

    def publish_due(
        self, idle: bool, published_examples: int, converged: bool, drifted: Callable[[], bool]
    ) -> bool:
        """Whether a check publishes now: the member moved since its last record (which
        counted ``published_examples``), and the policy says so (``drifted``: whether
        its share drifted from the one last published, asked last)."""
        if not self.dirty:
            return False
        if self.clock() - self.published_at >= self.policy.max_interval:
            return True
        if idle and self.examples > published_examples:
            return True  # the stream paused: say where it stands
        if idle and converged:
            return True  # replays settled the window: the group gets the last of them
        if idle and self.policy.mode == "dynamic":
            pass  # replays moved the share: its drift decides
        elif not self.policy.check_due(self.examples, self.checked):
            return False
        self.checked = self.examples
        if self.clock() < self.publish_allowed:
            # publishing has used its share of the time: the next check asks again
            self.deferred += 1
            return False
        if self.policy.mode == "periodic":
            return True
        return drifted()

    def published(self) -> None:
        """A record says all the member learned."""
        self.published_at = self.clock()
        self.checked = self.examples
        self.dirty = False

    def pause(self, started: float) -> None:
        """Publishing that began at ``started`` is done: no check publishes again until
        it has taken no more than its share of the time."""
        self.publish_allowed = self.clock() + self.policy.pause_after(self.clock() - started)
