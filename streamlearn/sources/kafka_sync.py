"""A learning group's sync topic on Kafka: keyed records, read whole and then followed.

The topic is compacted (created so when missing): Kafka keeps the last value of every
key, a null value deletes the key. A reader folds it itself all the same (compaction is
never complete, and some brokers do not compact at all): :meth:`SyncTopic.read` reads from
the beginning the first time, then what came since; a later value of a key replaces an
earlier one. Every partition of the topic is read, without a consumer group: each member
reads everything.

Writes wait for the broker (``acks='all'``): a share is published only once it is on
the topic, so that the positions beside it can be relied on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from streamlearn.errors import InputError
from streamlearn.sources.kafka import (
    MAX_RECORD_BYTES,
    client_options,
    compacted_topic_reader,
    create_compacted_topic,
)
from streamlearn.sources.kafka_logging import tame_kafka_logs
from streamlearn.sources.stopping import StopBudget

log = logging.getLogger(__name__)

#: seconds a write may wait for the broker's acknowledgement
WRITE_TIMEOUT = 30.0
#: longest a fetch of the sync topic waits at the broker for records to arrive
FETCH_MAX_WAIT_MS = 20

Entry = tuple[str, bytes | None]


class SyncTopic:
    """Keyed records of one compacted topic: all of them read, ours written."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        topic: str,
        *,
        security: Mapping[str, str] | None = None,
        client_id: str = "streamlearn-sync",
        request_timeout_ms: int = 30000,
        compression: str | None = None,
        budget: StopBudget | None = None,
    ) -> None:
        tame_kafka_logs()
        self.topic = topic
        #: once a stop began, reads and writes wait at most the time it leaves
        self.budget = budget if budget is not None else StopBudget()
        self._common = client_options(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms,
            security=security,
        )  # fmt: skip
        try:
            self._ensure_topic()
            self._producer = KafkaProducer(
                acks="all", max_request_size=MAX_RECORD_BYTES, compression_type=compression,
                **self._common,
            )  # fmt: skip
            # a member reads to the end before each record and replay: a fetch the
            # broker may hold while nothing new is there would hold the member too
            self._consumer = compacted_topic_reader(
                self._common, fetch_max_wait_ms=FETCH_MAX_WAIT_MS
            )
            partitions = self._consumer.partitions_for_topic(topic) or {0}
        except KafkaError as exc:
            raise InputError(
                f"sync topic {topic}: the brokers do not answer ({exc!r}); a member of a "
                "learning group starts once they do"
            ) from exc
        self._partitions = [TopicPartition(topic, p) for p in sorted(partitions)]
        self._consumer.assign(self._partitions)
        self._consumer.seek_to_beginning(*self._partitions)
        #: bytes written and read, for the metrics
        self.bytes_written = 0
        self.bytes_read = 0

    def _ensure_topic(self) -> None:
        """Create the topic, compacted, with one partition, unless it exists."""
        admin = KafkaAdminClient(**self._common)
        try:
            exists = self.topic in admin.list_topics()
        finally:
            admin.close()
        if not exists and create_compacted_topic(self._common, self.topic, 1, {}):
            log.info("created the sync topic %s (compacted)", self.topic)

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[Entry]:
        """The records that came since the last read, oldest first. ``to_end``: until
        the end the topic had when the call began (else whatever has arrived); raises
        :class:`InputError` when that end is not reached within ``timeout`` seconds."""
        try:
            return self._read(to_end, self.budget.cap(timeout))
        except KafkaError as exc:
            raise InputError(f"sync topic {self.topic}: not readable ({exc!r})") from exc

    def _read(self, to_end: bool, timeout: float) -> list[Entry]:
        consumer = self._consumer
        entries: list[Entry] = []
        ends: dict[TopicPartition, int] = {}
        if to_end:
            ends = {
                tp: int(offset) for tp, offset in consumer.end_offsets(self._partitions).items()
            }
        deadline = time.monotonic() + timeout
        while True:
            # a member reads to the end before each record and replay: one that is there
            # already returns at once (a poll with nothing to fetch waits its timeout)
            if to_end and all(consumer.position(tp) >= end for tp, end in ends.items()):
                return entries
            fetched = consumer.poll(timeout_ms=50 if to_end else 0)
            for records in fetched.values():
                for record in records:
                    key = record.key.decode("utf-8", "replace") if record.key else ""
                    entries.append((key, record.value))
                    self.bytes_read += len(record.value or b"")
            if not to_end:
                return entries
            if time.monotonic() > deadline:
                raise InputError(
                    f"sync topic {self.topic}: its end was not reached within {timeout:.0f} s"
                )

    def write(self, key: str, value: bytes | None) -> None:
        """Write ``value`` under ``key`` (None deletes the key) and wait for the broker
        to have it; :class:`InputError` when it does not."""
        try:
            future = self._producer.send(self.topic, key=key.encode(), value=value)
            future.get(timeout=self.budget.cap(WRITE_TIMEOUT))
        except KafkaError as exc:
            raise InputError(f"sync topic {self.topic}: write failed ({exc})") from exc
        self.bytes_written += len(value or b"")

    def close(self) -> None:
        """Close the producer and the consumer (within the time a stop leaves)."""
        self._producer.close(timeout=self.budget.cap(5.0))
        self._consumer.close()
