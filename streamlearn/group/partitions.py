"""Where a member stands in the input topic's partitions: those the consumer group gives
it, and those it gave up while its window still holds examples of them.

A record says both (:class:`MemberRecord` ``partitions`` and ``released``): the next
owner of a partition resumes where the member stopped in it, and the group counts what
each member learned from each partition. A partition given up is forgotten once the
member's buffer has evicted a whole capacity since: none of its examples is left.

>>> ledger = PartitionLedger()
>>> ledger.take(0, None)
>>> ledger.learned({0: 5}, {0: 9})
>>> ledger.give_up({0}, {0: 12}, evicted=0)
>>> ledger.held, ledger.released_positions()
({}, {0: PartitionPosition(offset=12, examples=5)})
>>> ledger.prune(evicted=100, capacity=100)
>>> ledger.released_positions()
{}
"""

from __future__ import annotations

from collections.abc import Mapping

from streamlearn.group.records import MemberRecord, PartitionPosition


class PartitionLedger:
    """The partitions a member holds, each at its position and count of examples learned,
    and those it gave up, each where it stopped with its buffer's evictions then."""

    def __init__(self) -> None:
        self.held: dict[int, PartitionPosition] = {}
        self.released: dict[int, tuple[PartitionPosition, int]] = {}

    def take(self, partition: int, position: PartitionPosition | None) -> None:
        """The member holds ``partition`` now, at ``position`` (None: at its start, no
        member having learned from it)."""
        self.held[partition] = position or PartitionPosition(offset=0, examples=0)
        self.released.pop(partition, None)

    def give_up(self, partitions: set[int], positions: Mapping[int, int], evicted: int) -> None:
        """The member gave up ``partitions``, stopped at ``positions`` in them (where it
        stood, for those not given), its buffer having evicted ``evicted`` examples."""
        for partition in partitions:
            position = self.held.pop(partition, None)
            if position is None:
                continue
            stopped = int(positions.get(partition, position.offset))
            self.released[partition] = (PartitionPosition(stopped, position.examples), evicted)

    def lose(self, partitions: set[int], last: MemberRecord | None, evicted: int) -> dict[int, int]:
        """The consumer group gave ``partitions`` to others without this member (it had
        left the group): each is given up where ``last``, the member's last record, stands
        in it, the position its next owner resumes from; those the record does not name
        are forgotten. Returns the examples learned from each since that record."""
        learned_since: dict[int, int] = {}
        for partition in partitions:
            position = self.held.pop(partition, None)
            if position is None:
                continue
            stated = None if last is None else last.partitions.get(partition)
            learned_since[partition] = position.examples - (stated.examples if stated else 0)
            if stated is not None:
                self.released[partition] = (stated, evicted)
        return learned_since

    def learned(self, counts: Mapping[int, int], positions: Mapping[int, int]) -> None:
        """The member learned ``counts`` labelled examples per partition held, and now
        stands at ``positions``."""
        for partition, position in list(self.held.items()):
            self.held[partition] = PartitionPosition(
                offset=int(positions.get(partition, position.offset)),
                examples=position.examples + int(counts.get(partition, 0)),
            )

    def resume(self, record: MemberRecord, evicted: int) -> None:
        """The member goes on from its ``record``: where it stopped in the partitions its
        window holds examples of, for whoever takes them (those it is given again leave
        the list)."""
        self.released = {partition: (position, evicted)
                         for partition, position in {**record.released,
                                                     **record.partitions}.items()}  # fmt: skip

    def released_positions(self) -> dict[int, PartitionPosition]:
        """Where the member stopped in the partitions it gave up, as a record says it."""
        return {p: stopped for p, (stopped, _) in self.released.items()}

    def prune(self, evicted: int, capacity: int) -> None:
        """Forget partitions given up whose examples have all left the member's window
        (its buffer, of ``capacity`` examples, has evicted ``evicted`` in all)."""
        self.released = {
            p: (stopped, evicted_then)
            for p, (stopped, evicted_then) in self.released.items()
            if evicted - evicted_then < capacity
        }

    def stated_by(self, record: MemberRecord) -> bool:
        """Whether ``record`` says where the member stands: every partition held at the
        position the record gives, every partition given up where the record left it.
        (Whether a partition is held or given up at a position changes nothing for its
        next owner, who resumes there, nor for the group's model.)"""
        stated = {**record.released, **record.partitions}
        return all(
            record.partitions.get(p) == position for p, position in self.held.items()
        ) and all(stated.get(p) == position for p, position in self.released_positions().items())
