"""What a Kafka consumer fetched and the source has not returned yet.

The consumer hands over, per partition, whole record batches
(:class:`~streamlearn.sources.kafka_blocks.RecordBlock`), records one by one (the stock
consumer), batches it could not read and offsets with nothing to return (control
records, an aborted transaction). :class:`FetchedMessages` keeps them in order as
message batches and skipped spans, and hands out at most so many messages at a time:
what a batch holds beyond that waits for the next poll, so positions stay exact per
message. What is kept of a partition is dropped when it is sought or revoked (it will
be fetched again).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.sources.base import MessageBatch, Positions, Unreadable
from streamlearn.sources.kafka_blocks import PassedRecords, RecordBlock, UnreadableRecords


@dataclass(frozen=True)
class PassedOffsets:
    """Offsets of a partition with nothing to return, up to ``last_offset`` (control
    records, an aborted transaction): the position moves past them when they are reached."""

    partition: int
    last_offset: int


def first_offset(item: Any) -> int:
    """The offset of the first record a fetched item holds."""
    if isinstance(item, RecordBlock):
        return int(item.offsets[0])
    if isinstance(item, UnreadableRecords | PassedRecords):
        return item.first_offset
    return int(item.offset)


def unreadable_of(records: UnreadableRecords, partition: int) -> Unreadable:
    """What the fetcher could not read, as the source reports it."""
    return Unreadable(partition, records.first_offset, records.last_offset, records.reason,
                      records.detail, records.raw, records.key)  # fmt: skip


def record_batch(records: list[Any], partition: int) -> MessageBatch:
    """kafka-python's ``ConsumerRecord`` objects of one partition as a batch (null
    values kept)."""
    return MessageBatch.from_records(
        [r.value for r in records],
        [r.key for r in records],
        [list(r.headers or ()) for r in records],
        [partition] * len(records),
        [r.offset for r in records],
    )


class FetchedMessages:
    """Fetched items in order: message batches, and the spans skipped between them."""

    def __init__(self) -> None:
        self._items: deque[MessageBatch | Unreadable | PassedOffsets] = deque()
        #: messages kept, and the bytes of their values
        self.count = 0
        self.bytes = 0

    def add(self, partition: int, items: list[Any]) -> None:
        """Keep what one partition's fetch gave: record blocks, records one by one, and
        records that cannot be read or hold nothing to return."""
        records: list[Any] = []
        for item in items:
            if isinstance(item, RecordBlock | UnreadableRecords | PassedRecords):
                if records:
                    self._push(record_batch(records, partition))
                    records = []
                if isinstance(item, RecordBlock):
                    self._push(item.message_batch(partition))
                elif isinstance(item, UnreadableRecords):
                    self._items.append(unreadable_of(item, partition))
                else:
                    self._items.append(PassedOffsets(partition, item.last_offset))
            else:
                records.append(item)
        if records:
            self._push(record_batch(records, partition))

    def _push(self, batch: MessageBatch) -> None:
        self._items.append(batch)
        self.count += len(batch)
        self.bytes += batch.value_bytes()

    def take(
        self, max_messages: int, positions: Positions, unreadable: list[Unreadable]
    ) -> MessageBatch:
        """The first ``max_messages`` messages kept (the rest stays), with the unreadable
        records among and just after them added to ``unreadable``; ``positions`` move
        past both."""
        parts: list[MessageBatch] = []
        room = max_messages
        items = self._items
        while items and (room > 0 or not isinstance(items[0], MessageBatch)):
            first = items[0]
            if not isinstance(first, MessageBatch):
                items.popleft()
                if isinstance(first, Unreadable):
                    unreadable.append(first)
                end = first.last_offset + 1
                if end > positions.get(first.partition, -1):
                    positions[first.partition] = end
                continue
            part: MessageBatch = first
            if len(first) <= room:
                items.popleft()
            else:
                part = first.slice(0, room)
                items[0] = first.slice(room, len(first))
            parts.append(part)
            room -= len(part)
            self.bytes -= part.value_bytes()
            positions.update(part.end_positions())
        self.count -= max_messages - room
        return MessageBatch.concatenate(parts)

    def drop(self, partitions: set[int]) -> None:
        """Forget what was fetched of these partitions (it will be fetched again)."""
        if not partitions or not self._items:
            return
        kept: deque[MessageBatch | Unreadable | PassedOffsets] = deque()
        for batch in self._items:
            if isinstance(batch, Unreadable | PassedOffsets):
                if batch.partition not in partitions:
                    kept.append(batch)
                continue
            keep = ~np.isin(batch.partitions, list(partitions))
            if keep.all():
                kept.append(batch)
            elif keep.any():  # a batch holds one partition, unless built from records
                kept.append(MessageBatch.concatenate(
                    [batch.slice(i, i + 1) for i in np.flatnonzero(keep).tolist()]
                ))  # fmt: skip
        self._items = kept
        self.count = sum(len(b) for b in kept if isinstance(b, MessageBatch))
        self.bytes = sum(b.value_bytes() for b in kept if isinstance(b, MessageBatch))

    def clear(self) -> None:
        """Forget everything kept."""
        self._items.clear()
        self.count = self.bytes = 0
