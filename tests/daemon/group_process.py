"""Members of a learning group as real ``streamlearn serve`` processes, and the sync
topic read back as the group's ground truth."""

from __future__ import annotations

import json
import sys
import urllib.request
import uuid
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from serve_process import TEST_CONSUMER, Serve
from services import Tansu, free_port

from streamlearn.errors import StateError
from streamlearn.group.records import MemberRecord, PartitionPosition, decode_record
from streamlearn.group.signing import verified

MAX_FEATURES = 1 << 20


class Member(Serve):
    """One ``serve`` process of the learning group ``group`` on ``topic``, publishing on
    ``sync_topic``; its HTTP API on a port of its own (:meth:`predict`)."""

    def __init__(
        self,
        broker: Tansu,
        topic: str,
        sync_topic: str,
        group: str,
        log_dir: Path,
        *extra: str,
        name: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``name``: the member id (a new one when None); ``env``: the process's
        environment (ours when None)."""
        self.http_port = free_port()
        self.name = name or f"m-{uuid.uuid4().hex[:6]}"
        super().__init__(broker, topic, log_dir / self.name, *extra, command=self._command(
            broker, topic, sync_topic, group, *extra
        ), env=env)  # fmt: skip

    def _command(
        self, broker: Tansu, topic: str, sync_topic: str, group: str, *extra: str
    ) -> list[str]:
        self.metrics_port = free_port()
        options = [f"--consumer-option={name}={value}" for name, value in TEST_CONSUMER.items()]
        return [
            sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
            "--delta", "1", "--source", "kafka", "--bootstrap-servers", broker.bootstrap,
            "--topic", topic, "--group", group, "--sync-topic", sync_topic,
            "--member-id", self.name, "--idle-replay", "off", "--replay-every", "700",
            "--metrics-addr", f"127.0.0.1:{self.metrics_port}",
            "--http-addr", f"127.0.0.1:{self.http_port}", *options, *extra,
        ]  # fmt: skip

    def predict(self, body: bytes) -> list[dict[str, Any]]:
        """The answers of ``POST /predict`` to svmlight lines."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}/predict",
            data=body,
            headers={"content-type": "text/plain"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answers: list[dict[str, Any]] = json.loads(response.read())["predictions"]
        return answers


def records(
    broker: Tansu,
    sync_topic: str,
    members: Collection[str] | None = None,
    ends: Mapping[int, int] | None = None,
    secret: bytes | None = None,
) -> dict[str, MemberRecord]:
    """The latest record of every member on the sync topic (what a compacted topic keeps),
    as the members take them: records that are no member's record, written under another
    key than their member's, out of step with the member's sequence or model, of a member
    not in ``members`` (when given) or beyond the logs' ``ends`` (when given), or not
    signed with ``secret`` (when given) are left out."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    try:
        found = consumer.partitions_for_topic(sync_topic) or set()
        partitions = [TopicPartition(sync_topic, p) for p in sorted(found)]
        latest: dict[str, MemberRecord] = {}
        if not partitions:
            return latest
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        topic_ends = consumer.end_offsets(partitions)
        while any(consumer.position(tp) < end for tp, end in topic_ends.items()):
            for batch in consumer.poll(timeout_ms=500).values():
                for message in batch:
                    key = (message.key or b"").decode(errors="replace")
                    try:
                        value = message.value
                        if secret is not None:
                            value = verified(value or b"", key, secret)
                        record = decode_record(value, MAX_FEATURES, key=key)
                    except StateError:
                        continue
                    held = latest.get(key)
                    if _follows(record, held) and _within(record, members, ends):
                        latest[key] = record
        return latest
    finally:
        consumer.close()


def _follows(record: MemberRecord, held: MemberRecord | None) -> bool:
    """Whether ``record`` follows the member's ``held`` one: its next, of the same model."""
    return held is None or (record.sequence == held.sequence + 1 and record.model == held.model)


def _within(
    record: MemberRecord, members: Collection[str] | None, ends: Mapping[int, int] | None
) -> bool:
    if members is not None and record.member not in members:
        return False
    claimed = [*record.partitions.items(), *record.released.items()]
    return ends is None or all(pos.offset <= ends.get(p, -1) for p, pos in claimed)


def furthest(latest: dict[str, MemberRecord]) -> dict[int, PartitionPosition]:
    """The furthest position any record gives for each partition."""
    found: dict[int, PartitionPosition] = {}
    for record in latest.values():
        for held in (record.partitions, record.released):
            for partition, position in held.items():
                if partition not in found or found[partition].offset < position.offset:
                    found[partition] = position
    return found


def positions(latest: dict[str, MemberRecord]) -> dict[int, int]:
    """The furthest offset any record gives for each partition."""
    return {partition: position.offset for partition, position in furthest(latest).items()}


def group_examples(latest: dict[str, MemberRecord]) -> int:
    """Labelled examples the group has learned from all partitions, by the records."""
    return sum(position.examples for position in furthest(latest).values())
