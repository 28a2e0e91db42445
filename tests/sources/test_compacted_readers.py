"""The readers of streamlearn's compacted topics (a group's sync topic, the keyed
models' state topic) on a real broker (Tansu): a batch there that cannot be read (a
codec that fails, a decompression bomb, a bad CRC) is logged and skipped, and the
records around it are read; a reader used to raise at it, or to fetch it for ever."""

from __future__ import annotations

import logging
import sys
import uuid
from pathlib import Path

import lz4.frame
import pytest
import zstandard
from services import Tansu, produce_raw

from streamlearn.sources.kafka_state import StateTopic
from streamlearn.sources.kafka_sync import SyncTopic

sys.path.append(str(Path(__file__).resolve().parents[1] / "daemon"))
from kafka_producers import bad_crc, v2_batch, with_payload

pytestmark = pytest.mark.kafka


def poison(tansu: Tansu, topic: str, partition: int) -> int:
    """Three batches nobody can read: lz4 that is not, a zstd bomb (a gigabyte of
    zeros), a CRC that does not match; how many."""
    junk = v2_batch([b"x"] * 3, keys=[b"k"] * 3)
    writer = zstandard.ZstdCompressor().compressobj()
    chunk = bytes(1 << 20)  # the gigabyte, a megabyte at a time
    bomb = with_payload(junk, 4, b"".join(writer.compress(chunk) for _ in range(1024))
                        + writer.flush())  # fmt: skip
    for batch in (with_payload(junk, 3, b"not an lz4 frame"), bomb,
                  bad_crc(v2_batch([b"y"], keys=[b"k"]))):  # fmt: skip
        error, _ = produce_raw(tansu.bootstrap, topic, partition, batch)
        assert error == 0
    assert lz4.frame  # the codec's library is there: the batch itself is bad
    return 3


def test_the_sync_topics_reader_skips_what_it_cannot_read(
    tansu: Tansu, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"s-{uuid.uuid4().hex[:8]}"
    writer = SyncTopic(tansu.bootstrap, name, request_timeout_ms=5000)
    try:
        writer.write("a", b"first")
        poison(tansu, name, 0)
        writer.write("b", b"second")
        reader = SyncTopic(tansu.bootstrap, name, request_timeout_ms=5000)
        try:
            with caplog.at_level(logging.ERROR, logger="streamlearn.sources.kafka"):
                entries = reader.read(to_end=True, timeout=30)
            assert entries == [("a", b"first"), ("b", b"second")]
            said = caplog.text
            assert f"topic {name} partition 0" in said and "codec failed" in said
            assert "batch too large" in said and "bad crc" in said
        finally:
            reader.close()
    finally:
        writer.close()


def test_the_sync_topics_reader_reads_to_the_end_of_a_last_batch_of_many_records(
    tansu: Tansu,
) -> None:
    """Tansu gives a log's end as its last batch's start + 1, and a poll returns a large
    batch in parts: a read to that end left the rest of the batch, the latest records
    among them, for a later read (a member taking partitions then resumed them where an
    older record stood)."""
    name = f"s-{uuid.uuid4().hex[:8]}"
    writer = SyncTopic(tansu.bootstrap, name, request_timeout_ms=5000)
    try:
        writer.write("a", b"first")
        many = [b"r%d" % i for i in range(1200)]
        error, _ = produce_raw(tansu.bootstrap, name, 0, v2_batch(many, keys=[b"b"] * 1200))
        assert error == 0
        reader = SyncTopic(tansu.bootstrap, name, request_timeout_ms=5000)
        try:
            entries = reader.read(to_end=True, timeout=30)
            assert entries == [("a", b"first"), *(("b", value) for value in many)]
        finally:
            reader.close()
    finally:
        writer.close()


def test_the_state_topics_reader_skips_what_it_cannot_read(tansu: Tansu, topic_name: str) -> None:
    tansu.create_topic(topic_name, 1)
    store = StateTopic(tansu.bootstrap, f"s-{uuid.uuid4().hex[:8]}", input_topic=topic_name,
                       request_timeout_ms=5000)  # fmt: skip
    try:
        store.open({0})
        store.put(0, b"k1", b"one")
        assert store.flush(10) == 0
        poison(tansu, store.topic, 0)
        store.put(0, b"k2", b"two")
        assert store.flush(10) == 0
        again = StateTopic(tansu.bootstrap, store.topic, input_topic=topic_name,
                           request_timeout_ms=5000)  # fmt: skip
        try:
            again.open({0})
            assert again.find(b"k1") == b"one" and again.find(b"k2") == b"two"
            assert again.known() == 2
        finally:
            again.close()
    finally:
        store.close()
