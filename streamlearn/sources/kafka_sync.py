"""A learning group's sync topic on Kafka: keyed records, read whole and then followed.

The topic is compacted (created so when missing): Kafka keeps the last value of every
key, a null value deletes the key. A reader folds it itself all the same (compaction is
never complete, and some brokers do not compact at all): :meth:`SyncTopic.read` reads from
the beginning the first time, then what came since; a later value of a key replaces an
earlier one. Every partition of the topic is read, without a consumer group: each member
reads everything.

Writes wait for the broker (``acks='all'``): a share is published only once it is on
the topic, so that the positions beside it can be relied on.

The same object tells a member what the brokers know of its group: who is in the
consumer group (:meth:`SyncTopic.members`: a member's consumer names it in its client
id, :func:`member_client_id`) and where the input topic's logs end
(:meth:`SyncTopic.log_ends`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Collection, Mapping
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.protocol.admin import DescribeGroupsRequest

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

#: seconds a write may wait for the broker's acknowledgement
WRITE_TIMEOUT = 30.0
#: longest a fetch of the sync topic waits at the broker for records to arrive
FETCH_MAX_WAIT_MS = 20

Entry = tuple[str, bytes | None]

#: how a learning group's member names its consumer: the client id is this and its id
CLIENT_PREFIX = "streamlearn-member-"
#: a consumer's member id as a group coordinator makes it: the client id, a dash, a UUID
_MEMBER_ID = re.compile(r"^(.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: seconds a question about the consumer group or the input topic's ends may wait
ASK_TIMEOUT = 5.0


def member_client_id(member: str) -> str:
    """The client id of a learning-group member's consumer: it names the member, so
    that the others can tell from the consumer group who is in it.

    >>> member_client_id("host-12-ab34"), member_of("", "streamlearn-member-host-12-ab34-"
    ...     "1b4e28ba-2fa1-11d2-883f-0016d3cca427")
    ('streamlearn-member-host-12-ab34', 'host-12-ab34')
    """
    return CLIENT_PREFIX + member


def member_of(client_id: str, member_id: str) -> str | None:
    """The learning-group member a consumer group's member is, from its client id, or
    (brokers that do not give it) from the member id the coordinator made of it; None
    for a consumer that names none."""
    if not client_id:
        found = _MEMBER_ID.match(member_id)
        client_id = found.group(1) if found else ""
    return client_id[len(CLIENT_PREFIX) :] if client_id.startswith(CLIENT_PREFIX) else None


class _GroupAdmin(KafkaAdminClient):  # type: ignore[misc]
    """An admin client that describes groups without their authorized operations (some
    brokers send bits kafka-python cannot read, and a member needs none of them)."""

    def _describe_groups_request(self, group_ids: list[str]) -> Any:
        return DescribeGroupsRequest(groups=list(group_ids), include_authorized_operations=False)

    def _process_acl_operations(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj.pop("authorized_operations", None)
        return obj


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
        consumer_group: str | None = None,
        input_topic: str | None = None,
    ) -> None:
        """``consumer_group`` and ``input_topic``: the members' consumer group and the
        topic it reads, for :meth:`members` and :meth:`log_ends` (None: they say None)."""
        tame_kafka_logs()
        self.topic = topic
        self.consumer_group = consumer_group
        self.input_topic = input_topic
        self._admin: KafkaAdminClient | None = None
        self._unnamed_logged = False
        self._warned_at = -float("inf")
        self._prober: KafkaConsumer | None = None
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
        the end the topic had when the call began (the further of the brokers' end
        offsets and the high watermark its fetches report; else whatever has arrived); raises
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
            ends = end_offsets(consumer, self._partitions)
            self._raise_ends(ends)
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
            self._raise_ends(ends)
            if time.monotonic() > deadline:
                raise InputError(
                    f"sync topic {self.topic}: its end was not reached within {timeout:.0f} s"
                )

    def _raise_ends(self, ends: dict[TopicPartition, int]) -> None:
        """Raise each of ``ends`` to the high watermark the last fetch of its partition
        reported. Some brokers (Tansu) answer a ListOffsets with their last batch's
        start + 1: a read that stopped there would leave the rest of a batch of several
        records unread (a poll returns a large batch in parts), the latest records among
        them. (A topic written faster than it is read would keep raising them: the
        read's timeout bounds it; members write a record at a time, and seldom.)"""
        for tp in ends:
            mark = self._consumer.highwater(tp)
            if mark is not None:
                ends[tp] = max(ends[tp], int(mark))

    def write(self, key: str, value: bytes | None) -> None:
        """Write ``value`` under ``key`` (None deletes the key) and wait for the broker
        to have it; :class:`InputError` when it does not."""
        try:
            future = self._producer.send(self.topic, key=key.encode(), value=value)
            future.get(timeout=self.budget.cap(WRITE_TIMEOUT))
        except KafkaError as exc:
            raise InputError(f"sync topic {self.topic}: write failed ({exc})") from exc
        self.bytes_written += len(value or b"")

    def members(self) -> set[str] | None:
        """The learning-group members in the consumer group now (their consumers name
        them, :func:`member_client_id`); None when the coordinator cannot tell, or when
        a consumer of the group names no member (a client id set by hand)."""
        if self.consumer_group is None:
            return None
        try:
            if self._admin is None:
                options = {**self._common, "request_timeout_ms": int(ASK_TIMEOUT * 1000)}
                self._admin = _GroupAdmin(**options)
            described = self._admin.describe_groups([self.consumer_group])[self.consumer_group]
            if described.get("error"):
                raise KafkaError(described["error"])
            named = [
                member_of(found.get("client_id") or "", found["member_id"])
                for found in described["members"]
            ]
            if None in named:
                if not self._unnamed_logged:
                    self._unnamed_logged = True
                    log.warning(
                        "consumer group %s: a consumer names no learning-group member (a "
                        "client_id set with --consumer-option?): records are judged by "
                        "their own checks only", self.consumer_group,
                    )  # fmt: skip
                return None
            return {member for member in named if member is not None}
        except Exception as exc:  # kafka-python raises more than KafkaError on odd answers
            self._warn(f"consumer group {self.consumer_group}: its members cannot be told "
                       f"({exc!r})")  # fmt: skip
            return None

    def log_ends(self, probe: Collection[int] = ()) -> dict[int, int] | None:
        """Where each partition of the input topic ends now (the offset after its last
        record); for those in ``probe`` read off a fetch there too (the greater is
        taken): some brokers answer a ListOffsets with their last batch's start + 1.
        None when the brokers cannot tell."""
        if self.input_topic is None:
            return None
        try:
            known = self._consumer.partitions_for_topic(self.input_topic)
            if not known:
                return None
            tps = [TopicPartition(self.input_topic, p) for p in sorted(known)]
            answer = self._consumer.end_offsets(tps, timeout_ms=int(ASK_TIMEOUT * 1000))
            ends = {tp.partition: int(offset) for tp, offset in answer.items()}
            if probe:
                ends.update(self._fetched_ends({p: e for p, e in ends.items() if p in probe}))
            return ends
        except Exception as exc:  # as in members
            self._warn(f"topic {self.input_topic}: the ends of its logs cannot be told ({exc!r})")
            return None

    def _warn(self, message: str) -> None:
        """Log ``message`` at most once a minute (a broker away repeats it every read)."""
        if time.monotonic() - self._warned_at >= 60.0:
            self._warned_at = time.monotonic()
            log.warning("%s", message)

    def _fetched_ends(self, ends: Mapping[int, int]) -> dict[int, int]:
        """The high watermarks a fetch from each of ``ends`` finds (at least the end)."""
        assert self.input_topic is not None
        if self._prober is None:
            self._prober = compacted_topic_reader(self._common, fetch_max_wait_ms=FETCH_MAX_WAIT_MS)
        prober = self._prober
        tps = {TopicPartition(self.input_topic, p): end for p, end in ends.items()}
        prober.assign(list(tps))
        for tp, end in tps.items():
            prober.seek(tp, end)
        found = dict(ends)
        deadline = time.monotonic() + self.budget.cap(ASK_TIMEOUT)
        while time.monotonic() < deadline:
            prober.poll(timeout_ms=50)
            marks = {tp: prober.highwater(tp) for tp in tps}
            if all(mark is not None for mark in marks.values()):
                for tp, mark in marks.items():
                    found[tp.partition] = max(found[tp.partition], int(mark))
                break
        prober.assign([])
        return found

    def close(self) -> None:
        """Close the producer and the consumers (within the time a stop leaves)."""
        self._producer.close(timeout=self.budget.cap(5.0))
        self._consumer.close()
        for client in (self._admin, self._prober):
            if client is not None:
                try:
                    client.close()
                except KafkaError as exc:
                    log.debug("sync topic %s: a client did not close (%r)", self.topic, exc)
