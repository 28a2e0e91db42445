"""What the brokers say of a learning group's consumer group, as a member asks it: who is
in it now, and where its input topic's logs end.

A member asks who is in the consumer group to judge the records it reads (a member no
one knows is refused), to refuse to start while another process holds its id, and to
refuse to learn beside a member of another model. It asks where the logs end to refuse
a record that claims a position beyond them. When the brokers cannot tell, the records'
own checks decide.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Protocol

from streamlearn.errors import StateError
from streamlearn.group.records import MemberRecord, PartitionPosition

log = logging.getLogger("streamlearn.group")

#: seconds between two looks at the consumer group while a starting member waits
TAKEOVER_POLL = 0.5


class ConsumerGroupView(Protocol):
    """What the brokers say of the consumer group and its input topic
    (:class:`streamlearn.sources.kafka_sync.SyncTopic`)."""

    def members(self) -> set[str] | None:
        """The learning-group ids of the consumer group's members now (None: unknown)."""
        ...

    def log_ends(self, probe: Collection[int] = ()) -> dict[int, int] | None:
        """The input topic's partitions and the end of each log now, read off a fetch
        for those in ``probe`` (None: unknown)."""
        ...


class ConsumerGroupWatch:
    """Member ``me``'s questions to ``view`` (None: no view; every answer is then
    "unknown"). ``holding`` says whether the member holds partitions now, and ``warn``
    logs a warning without repeating it every turn."""

    def __init__(
        self,
        view: ConsumerGroupView | None,
        me: str,
        *,
        holding: Callable[[], bool],
        warn: Callable[[str], None],
    ) -> None:
        self.view = view
        self.me = me
        self.holding = holding
        self.warn = warn
        #: the furthest end seen of each partition of the input topic
        self._ends: dict[int, int] = {}
        #: in the current read: partitions whose log was fetched for its end, and
        #: whether the brokers told the ends (None: not asked yet)
        self._looked: set[int] = set()
        self._ends_asked: bool | None = None

    def members_now(self) -> set[str] | None:
        """The consumer group's members now (None: no view, or the view cannot tell;
        also when this member, holding partitions, is not among them: its consumer's
        client id does not name it)."""
        if self.view is None:
            return None
        members = self.view.members()
        if members is not None and self.holding() and self.me not in members:
            self.warn(f"group {self.me}: the consumer group does not list this member (a "
                      "client_id given with --consumer-option?): records are judged by "
                      "their own checks only")  # fmt: skip
            return None
        return members

    def left_the_group(self) -> bool:
        """Whether the consumer group no longer lists this member (it was removed, its
        session having expired); False when the brokers cannot tell. A member revoking
        its partitions in a rebalance, or as it closes, is still listed."""
        members = None if self.view is None else self.view.members()
        return members is not None and self.me not in members

    def wait_for_the_id(
        self, wait: float, clock: Callable[[], float], sleep: Callable[[float], None]
    ) -> None:
        """Wait until no process with this member's id is in the consumer group, at
        most ``wait`` seconds; :class:`StateError` if one still is."""
        members = self.members_now()
        if members is None or self.me not in members:
            return
        log.warning("group %s: a process with this member id is in the consumer group; "
                    "waiting up to %.0f s for it to leave (a crashed one leaves when its "
                    "session times out)", self.me, wait)  # fmt: skip
        deadline = clock() + wait
        while clock() < deadline:
            sleep(TAKEOVER_POLL)
            members = self.members_now()
            if members is None or self.me not in members:
                log.info("group %s: the other process with this id has left the consumer "
                         "group; this one takes the id over", self.me)  # fmt: skip
                return
        raise StateError(
            f"member id {self.me!r} is taken: a live process with it is in the consumer "
            "group. Give each member its own --member-id (or none: each process then "
            "makes one), or stop the other process first"
        )

    def read_done(self) -> None:
        """A read of the sync topic is done: the next asks the brokers again."""
        self._looked, self._ends_asked = set(), None

    def check_positions(self, record: MemberRecord) -> None:
        """:class:`StateError` when ``record`` names a partition the input topic does not
        have or a position beyond the end of its log. The ends are asked from the
        brokers when a position is beyond those known: once per read, then by a fetch
        of each partition still beyond (some brokers give a log's end as its last
        batch's start). When the brokers cannot tell, the record's own checks decide."""
        if self.view is None:
            return
        claimed = [*record.partitions.items(), *record.released.items()]
        if not self._beyond(claimed):
            return
        if self._ends_asked is None:
            self._ends_asked = self._ask_ends(())
        probe = self._beyond(claimed) - self._looked
        if self._ends_asked and probe:
            self._looked |= probe
            self._ends_asked = self._ask_ends(probe)
        if not self._ends_asked:
            return
        for partition, position in claimed:
            if partition not in self._ends:
                raise StateError(f"partition {partition} is not a partition of the input topic")
            if position.offset > self._ends[partition]:
                raise StateError(
                    f"partition {partition} at offset {position.offset}, beyond the end of "
                    f"its log ({self._ends[partition]})"
                )

    def _beyond(self, claimed: list[tuple[int, PartitionPosition]]) -> set[int]:
        return {p for p, position in claimed if position.offset > self._ends.get(p, -1)}

    def _ask_ends(self, probe: Collection[int]) -> bool:
        """Ask the brokers where the input topic's logs end (fetching ``probe``'s);
        whether they could tell."""
        assert self.view is not None
        ends = self.view.log_ends(probe)
        if ends is None:
            return False
        for partition, end in ends.items():
            self._ends[partition] = max(end, self._ends.get(partition, 0))
        return True
