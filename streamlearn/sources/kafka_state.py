"""Keyed models' state topic on Kafka: one record per model key, partitioned like the
input topic.

The topic is compacted (created so when missing, with as many partitions as the input
topic): Kafka keeps the last record of every key. The record of a key goes to the
partition number its messages come from, so the member that owns an input partition
finds its keys' models in the same partition of the state topic, as Kafka Streams keeps
its changelogs. :meth:`StateTopic.open` reads a partition from its beginning to its end
and keeps where the latest record of each key is (its offset, not its value: the index
costs a few dozen bytes a key); :meth:`StateTopic.find` fetches one record by its offset.
A reader folds the topic itself (a later record of a key replaces an earlier one, a null
value deletes the key): compaction is never complete, and some brokers do not compact.

Writes go out at once and are waited for by :meth:`StateTopic.flush` (``acks='all'``);
until the broker has one, :meth:`StateTopic.find` gives it from memory, and one the
broker refused is sent again at the next flush.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka import KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from streamlearn.errors import InputError
from streamlearn.sources.kafka import (
    MAX_RECORD_BYTES,
    client_options,
    compacted_topic_reader,
    create_compacted_topic,
)
from streamlearn.sources.kafka_logging import tame_kafka_logs
from streamlearn.sources.kafka_offsets import end_offsets
from streamlearn.sources.stopping import StopBudget

log = logging.getLogger(__name__)

#: seconds a read of the topic (a partition to its end, or one record) may take
READ_TIMEOUT = 60.0


@dataclass(eq=False)
class _Write:
    """A record put and not yet acknowledged: its key, partition, value and send."""

    key: bytes
    partition: int
    #: None: a tombstone
    value: bytes | None
    future: Any = None


class StateTopic:
    """A compacted topic of keyed models' records (see the module doc)."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        topic: str,
        *,
        input_topic: str,
        security: Mapping[str, str] | None = None,
        client_id: str = "streamlearn-state",
        request_timeout_ms: int = 30000,
        compression: str | None = None,
        budget: StopBudget | None = None,
    ) -> None:
        tame_kafka_logs()
        self.topic = topic
        #: once a stop began, flushes wait at most the time it leaves
        self.budget = budget if budget is not None else StopBudget()
        self._common = client_options(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
            security=security,
        )  # fmt: skip
        try:
            self._consumer = compacted_topic_reader(self._common, fetch_max_wait_ms=10)
            self._ensure_topic(input_topic)
            self._producer = KafkaProducer(
                acks="all", max_request_size=MAX_RECORD_BYTES, compression_type=compression,
                max_in_flight_requests_per_connection=1, **self._common,
            )  # fmt: skip
        except KafkaError as exc:
            raise InputError(
                f"state topic {topic}: the brokers do not answer ({exc!r}); keyed models "
                "start once they do"
            ) from exc
        #: key -> (partition, offset, seconds since the epoch) of its latest record in
        #: the open partitions (the time the broker gave the record)
        self._index: dict[bytes, tuple[int, int, float]] = {}
        self._open: set[int] = set()
        #: records put and not acknowledged, by key (the latest put of each)
        self._waiting: dict[bytes, _Write] = {}
        #: every record sent and not acknowledged (older puts of a key too)
        self._sent: list[_Write] = []
        self.bytes_written = 0
        self.bytes_read = 0
        self.records_written = 0

    def _ensure_topic(self, input_topic: str) -> None:
        """Create the topic, compacted, partitioned like ``input_topic``, unless it
        exists; refuse one with fewer partitions than ``input_topic``."""
        wanted = self._consumer.partitions_for_topic(input_topic)
        if not wanted:
            raise InputError(
                f"topic {input_topic} does not exist: keyed models need it (their state "
                f"topic {self.topic} is partitioned like it)"
            )
        held = self._consumer.partitions_for_topic(self.topic)
        if not held:
            config = {"max.message.bytes": str(MAX_RECORD_BYTES)}
            if create_compacted_topic(self._common, self.topic, len(wanted), config):
                log.info("created the state topic %s (compacted, %d partitions)",
                         self.topic, len(wanted))  # fmt: skip
            held = self._partitions_after_creation(len(wanted))
        if len(held) < len(wanted):
            raise InputError(
                f"state topic {self.topic} has {len(held)} partitions, topic {input_topic} "
                f"{len(wanted)}: the state topic needs as many (use another --state-topic)"
            )

    def _partitions_after_creation(self, count: int) -> set[int]:
        deadline = time.monotonic() + READ_TIMEOUT
        while True:
            held = self._consumer.partitions_for_topic(self.topic)
            if held and len(held) >= count:
                return set(held)
            if time.monotonic() > deadline:
                raise InputError(f"state topic {self.topic}: created, but not seen")
            time.sleep(0.1)

    # -- reading -------------------------------------------------------------------------

    def open(self, partitions: set[int]) -> None:
        """Read ``partitions`` from their beginning to their end and index their keys;
        :class:`InputError` when they cannot be read within ``READ_TIMEOUT`` seconds."""
        new = sorted(partitions - self._open)
        if not new:
            return
        started = time.monotonic()
        try:
            found = self._read_to_end([TopicPartition(self.topic, p) for p in new])
        except KafkaError as exc:
            raise InputError(f"state topic {self.topic}: not readable ({exc!r})") from exc
        self._open.update(new)
        log.info("state topic %s: partitions %s hold %d models (read in %.1f s)",
                 self.topic, new, found, time.monotonic() - started)  # fmt: skip

    def _read_to_end(self, partitions: list[TopicPartition]) -> int:
        consumer = self._consumer
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = end_offsets(consumer, partitions)
        deadline = time.monotonic() + READ_TIMEOUT
        while not all(consumer.position(tp) >= end for tp, end in ends.items()):
            for tp, records in consumer.poll(timeout_ms=200).items():
                for record in records:
                    if record.key is None:
                        continue
                    if record.value is None:
                        self._index.pop(record.key, None)
                    else:
                        stamp = _seconds(record.timestamp)
                        self._index[record.key] = (tp.partition, record.offset, stamp)
                        self.bytes_read += len(record.value)
            if time.monotonic() > deadline:
                raise InputError(f"state topic {self.topic}: its end was not reached in time")
        opened = {tp.partition for tp in partitions}
        return sum(1 for partition, _, _ in self._index.values() if partition in opened)

    def find(self, key: bytes) -> bytes | None:
        """The latest record of ``key`` (None: none in the open partitions)."""
        waiting = self._waiting.get(key)
        if waiting is not None:
            return waiting.value
        where = self._index.get(key)
        if where is None:
            return None
        try:
            return self._fetch(where[0], where[1], key)
        except KafkaError as exc:
            raise InputError(f"state topic {self.topic}: not readable ({exc!r})") from exc

    def _fetch(self, partition: int, offset: int, key: bytes) -> bytes:
        tp = TopicPartition(self.topic, partition)
        consumer = self._consumer
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + READ_TIMEOUT
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200, max_records=1).values():
                for record in records:
                    if record.offset == offset and record.key == key and record.value:
                        self.bytes_read += len(record.value)
                        return bytes(record.value)
                    if record.offset >= offset:
                        raise InputError(
                            f"state topic {self.topic}: the record of key {key!r} at offset "
                            f"{offset} of partition {partition} is gone"
                        )
        raise InputError(
            f"state topic {self.topic}: the record of key {key!r} at offset {offset} of "
            f"partition {partition} was not read within {READ_TIMEOUT:.0f} s"
        )

    def known(self) -> int:
        """Keys with a record in the open partitions (written or on their way)."""
        return len(self._index) + sum(1 for key in self._waiting if key not in self._index)

    def forget(self, partitions: set[int]) -> None:
        """Forget the keys of ``partitions``, and the writes to them not acknowledged."""
        self._open -= partitions
        self._index = {k: where for k, where in self._index.items() if where[0] not in partitions}
        for key, write in list(self._waiting.items()):
            if write.partition in partitions:
                del self._waiting[key]
        self._sent = [write for write in self._sent if write.partition not in partitions]

    # -- writing -------------------------------------------------------------------------

    def put(self, partition: int, key: bytes, value: bytes) -> None:
        """Send ``value`` for ``key`` to ``partition`` (:meth:`flush` waits for it)."""
        self._put(_Write(key, partition, value))

    def delete(self, partition: int, key: bytes) -> None:
        """Send a tombstone for ``key`` to ``partition``: compaction drops the key's
        records, and a reader of the topic finds none from it on."""
        self._put(_Write(key, partition, None))

    def _put(self, write: _Write) -> None:
        self._waiting[write.key] = write
        self._send(write)

    def stale(self, before: float) -> list[tuple[int, bytes]]:
        """(partition, key) of the records written before ``before`` (seconds since
        the epoch), by the broker's time of each, none on its way."""
        return [
            (partition, key)
            for key, (partition, _, stamp) in self._index.items()
            if stamp < before and key not in self._waiting
        ]

    def _send(self, write: _Write) -> None:
        try:
            write.future = self._producer.send(
                self.topic, key=write.key, value=write.value, partition=write.partition
            )
        except KafkaError as exc:  # a full buffer, a record too large: sent again later
            log.debug("state record of key %r not sent: %r", write.key, exc)
            write.future = None
        self._sent.append(write)

    def flush(self, timeout: float) -> int:
        """Wait ``timeout`` seconds at most for the records put; send again those that
        failed. The number of records not acknowledged yet."""
        sent, self._sent = self._sent, []
        for write in sent:
            future = write.future
            if future is not None and not (future.is_done and future.failed()):
                self._sent.append(write)
            elif self._waiting.get(write.key) is write:
                self._send(write)  # failed, and the latest record of its key: again
        try:
            self._producer.flush(timeout=self.budget.cap(timeout))
        except KafkaError as exc:
            log.debug("state topic flush: %r", exc)
        sent, self._sent = self._sent, []
        for write in sent:
            future = write.future
            if future is None or not future.is_done or future.failed():
                self._sent.append(write)  # sent again at the next flush, if still latest
                continue
            self.bytes_written += len(write.value or b"")
            self.records_written += 1
            offset = int(future.value.offset)
            held = self._index.get(write.key)
            if held is None or held[0] != write.partition or held[1] < offset:
                if write.value is None:
                    self._index.pop(write.key, None)
                else:
                    stamp = _seconds(future.value.timestamp)
                    self._index[write.key] = (write.partition, offset, stamp)
            if self._waiting.get(write.key) is write:
                del self._waiting[write.key]
        return len(self._waiting)

    def close(self) -> None:
        """Close the producer (after a last flush) and the consumer."""
        try:
            self._producer.close(timeout=self.budget.cap(5.0))
        finally:
            self._consumer.close()


def _seconds(timestamp_ms: int | None) -> float:
    """A record's broker time in seconds since the epoch (now, when it has none)."""
    return timestamp_ms / 1000 if timestamp_ms and timestamp_ms > 0 else time.time()
