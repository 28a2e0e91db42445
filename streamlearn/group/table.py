"""The group as the sync topic tells it: every member's latest record, and what the
common model is made of.

The common model is the sum of the members' shares, in the order of their ids (so that
every member that holds the same records computes the same bits). A member that died,
or gave all its partitions up, leaves its last share behind: its examples were learned
once and stay in the model as long as they would have stayed in its window, that is
until the group has learned, from the partitions it covered, as many examples as its
window held since it stopped in them. Then its share is dropped
(:meth:`GroupTable.dropped`): the window moved on, as one daemon's would have.

Where to resume a partition is the furthest position any record gives for it: the one
its last owner published with its share, so what that share holds is never learned
again, and what the owner learned after it (lost with it) is learned once by the next.
Each position also counts the labelled examples learned from the partition up to it,
whoever learned them: the next owner counts on from there.

>>> from streamlearn.learn.contribution import Contribution
>>> from streamlearn.group.records import MemberRecord, PartitionPosition, WindowView
>>> def record(member, partitions, released=None, window=10):
...     return MemberRecord(member, 1, 0.0, {}, Contribution.zero(), 0,
...                         partitions, released or {}, WindowView(window, 100, 0.1, 0.2))
>>> table = GroupTable(me="b", model={})
>>> table.apply(record("a", {0: PartitionPosition(50, 40)}))
True
>>> table.start(0), table.dropped()
(PartitionPosition(offset=50, examples=40), set())
>>> table.apply(record("b", {0: PartitionPosition(62, 52)}))
True
>>> table.dropped()  # 12 examples learned from a's partition since, a's window held 10
{'a'}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from streamlearn.errors import StateError
from streamlearn.group.records import MemberRecord, PartitionPosition


@dataclass(frozen=True)
class GroupView:
    """The certificate and the make-up of the group's model."""

    #: members whose share is in the common model (the local one included)
    members: list[str]
    #: the smallest margin a member reports for the common model on its window
    margin: float
    #: members whose share was dropped
    dropped: list[str]


class GroupTable:
    """The latest record of each member, as read from the sync topic (``me``: the
    local member's id; ``model``: the algorithm and parameters every member must share)."""

    def __init__(self, me: str, model: dict[str, Any]) -> None:
        self.me = me
        self.model = model
        self.records: dict[str, MemberRecord] = {}

    def apply(self, record: MemberRecord) -> bool:
        """Take ``record`` in (True), once :meth:`check` finds nothing against it."""
        self.check(record)
        self.records[record.member] = record
        return True

    def check(self, record: MemberRecord) -> None:
        """:class:`StateError` when ``record`` is of another model, or when its sequence
        does not follow the member's record held by one: a repeated or older record
        would take the member's share back, and a jump (a forged record numbered 2^40)
        would make every later record of the member look old. The first record read of
        a member may have any sequence: a member that starts reads what compaction left
        of the others' records."""
        if self.model and record.model != self.model:
            raise StateError(
                f"member {record.member} learns {record.model}, this member "
                f"{self.model}: members of a group must run the same algorithm and parameters"
            )
        held = self.records.get(record.member)
        if held is not None and record.sequence != held.sequence + 1:
            moved = "does not move past" if record.sequence <= held.sequence else "jumps from"
            raise StateError(
                f"record {record.sequence} of member {record.member} {moved} its record "
                f"{held.sequence} (a record's sequence moves by one)"
            )

    def start(self, partition: int, excluding: str | None = None) -> PartitionPosition | None:
        """Where to resume ``partition``: the furthest position a record (not
        ``excluding``'s) gives for it (None: no member has learned from it)."""
        found: PartitionPosition | None = None
        for record in self.records.values():
            if record.member == excluding:
                continue
            for held in (record.partitions, record.released):
                position = held.get(partition)
                if position is not None and (found is None or position.offset > found.offset):
                    found = position
        return found

    def dropped(self) -> set[str]:
        """The members (not the local one) whose share has left the common model: each
        partition they covered has been taken over, and their takers have learned at least
        as many examples from those partitions as the member's window held."""
        return {
            member
            for member, record in self.records.items()
            if member != self.me and self._relearned(record)
        }

    def _relearned(self, record: MemberRecord) -> bool:
        covered = {**record.released, **record.partitions}
        learned_since = 0
        for partition, stopped in covered.items():
            further = self.start(partition, excluding=record.member)
            if further is None or further.offset < stopped.offset:
                return False  # nobody has taken the partition over
            learned_since += further.examples - stopped.examples
        return learned_since >= record.window.examples

    def in_model(self, dropped: set[str] | None = None) -> list[str]:
        """The members whose share is in the common model, in the order shares are
        summed (their ids' order), the local member included (``dropped``: those of
        :meth:`dropped`, when already known)."""
        if dropped is None:
            dropped = self.dropped()
        return sorted({self.me, *(m for m in self.records if m not in dropped)})

    def learning(self) -> int:
        """How many members learn now: the local one, and every other in the model that
        holds a partition where no other record is further (a member that died leaves
        its partitions in its last record until their new owners move past it).

        >>> from streamlearn.learn.contribution import Contribution
        >>> from streamlearn.group.records import MemberRecord, PartitionPosition, WindowView
        >>> def record(member, partitions):
        ...     return MemberRecord(member, 1, 0.0, {}, Contribution.zero(), 0,
        ...                         partitions, {}, WindowView(10, 100, 0.1, 0.2))
        >>> table = GroupTable(me="c", model={})
        >>> _ = table.apply(record("a", {0: PartitionPosition(50, 40)}))
        >>> _ = table.apply(record("b", {1: PartitionPosition(9, 9)}))
        >>> table.learning()
        3
        >>> _ = table.apply(record("c", {0: PartitionPosition(60, 50)}))  # past a's
        >>> table.learning()
        2
        """
        dropped = self.dropped()
        count = 1
        for member, record in self.records.items():
            if member == self.me or member in dropped:
                continue
            if any(
                self._furthest(partition, position, member)
                for partition, position in record.partitions.items()
            ):
                count += 1
        return count

    def _furthest(self, partition: int, position: PartitionPosition, member: str) -> bool:
        further = self.start(partition, excluding=member)
        return further is None or further.offset <= position.offset

    def view(self, own_margin: float) -> GroupView:
        """The group's margin: the smallest margin its members report on their
        windows (``own_margin``: the local member's, now)."""
        dropped = self.dropped()
        members = self.in_model(dropped)
        margins = [own_margin] if math.isfinite(own_margin) else []
        for member in members:
            if member != self.me and member in self.records:
                window = self.records[member].window
                if window.examples:
                    margins.append(window.margin)
        return GroupView(members, min(margins, default=math.nan), sorted(dropped))
