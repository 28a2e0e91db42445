"""Record blocks: the fetcher's batch-at-a-time unpacker against kafka-python's stock one,
on batches built in memory (compressed, corrupt, control, old format) and on a real
broker (Tansu), and the poll budget of KafkaSource."""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.fetcher import Fetcher
from kafka.errors import CorruptRecordError
from kafka.protocol.consumer import IsolationLevel
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32c
from kafka.serializer import Deserializer
from services import Tansu, wait_for

from streamlearn.sources.base import MessageBatch
from streamlearn.sources.kafka import KafkaSource
from streamlearn.sources.kafka_blocks import (
    BlockPartitionRecords,
    PassedRecords,
    RecordBlock,
    UnreadableRecords,
    install_block_records,
)

TP = TopicPartition("t", 0)
Seen = tuple[int, bytes | None, bytes, bytes | None]  # offset, key, value, content type
Records = list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]


def v2_batch(
    records: Records,
    base_offset: int,
    *,
    compression: int = 0,
    control: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
    )  # fmt: skip
    for delta, (key, value, headers) in enumerate(records):
        builder.append(delta, timestamp=1000 + delta, key=key, value=value, headers=headers)
    buffer = builder.build()
    struct.pack_into(">q", buffer, 0, base_offset)
    if control:
        attributes_at = DefaultRecordBatch.ATTRIBUTES_OFFSET
        (attributes,) = struct.unpack_from(">h", buffer, attributes_at)
        struct.pack_into(">h", buffer, attributes_at, attributes | DefaultRecordBatch.CONTROL_MASK)
        crc = calc_crc32c(memoryview(buffer)[attributes_at:])
        struct.pack_into(">I", buffer, DefaultRecordBatch.CRC_OFFSET, crc)
    return bytes(buffer)


def legacy_batch(values: list[bytes], base_offset: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 30)
    for i, value in enumerate(values):
        builder.append(i, timestamp=1000, key=None, value=value)
    buffer = builder.build()
    # each legacy message carries its own offset (the log's, written by the broker)
    position = 0
    for i in range(len(values)):
        struct.pack_into(">q", buffer, position, base_offset + i)
        position += 12 + struct.unpack_from(">i", buffer, position + 8)[0]
    return bytes(buffer)


def seen_of(items: list[Any]) -> list[Seen]:
    """Records or blocks as (offset, key, value, content type); records that cannot be
    read as (first offset, None, reason, last offset as bytes)."""
    out: list[Seen] = []
    for item in items:
        if isinstance(item, PassedRecords):
            continue  # no record: the position moves past it
        if isinstance(item, UnreadableRecords):
            out.append((item.first_offset, None, item.reason.encode(), b"%d" % item.last_offset))
        elif isinstance(item, RecordBlock):
            partitions = np.zeros(len(item), dtype=np.int32)
            batch = MessageBatch(item.data, item.spans, partitions, item.offsets)
            out += [(m.offset, m.key, m.value, m.headers.get("content-type")) for m in batch]
        else:
            out.append((item.offset, item.key, item.value, dict(item.headers).get("content-type")))
    return out


def take_all(
    kind: Any, data: bytes, fetch_offset: int, n: int | None = None
) -> tuple[list[Seen], int, Exception | None]:
    """What a PartitionRecords of ``kind`` gives, its final next fetch offset, and the
    error it raised at the end, if any."""
    parts = kind(fetch_offset, TP, MemoryRecords(data), check_crcs=True)
    items: list[Any] = []
    error: Exception | None = None
    try:
        while parts:
            got = parts.take(n)
            if not got:
                break
            items += got
    except CorruptRecordError as e:
        error = e
    return seen_of(items), parts.next_fetch_offset, error


def random_records(rng: random.Random, n: int) -> Records:
    out = []
    for _ in range(n):
        headers: list[tuple[str, bytes | None]] = []
        if rng.random() < 0.3:
            headers.append(
                ("content-type", rng.choice([b"application/msgpack", b"text/plain", None]))
            )
        if rng.random() < 0.2:
            headers.append(("trace", rng.randbytes(5)))
        key = None if rng.random() < 0.5 else rng.randbytes(rng.randrange(8))
        value = None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 10, 300, 5000]))
        out.append((key, value, headers))
    return out


def stock_seen(seen: list[Seen]) -> list[Seen]:
    """Stock records give a null value as None; a batch gives b"" (as the source does)."""
    return [(o, k, v if v is not None else b"", c) for o, k, v, c in seen]


@pytest.mark.parametrize("compression", [0, 1])  # none, gzip
def test_blocks_give_the_stock_records_and_offsets(compression: int) -> None:
    rng = random.Random(compression)
    batches = [v2_batch(random_records(rng, 40), 0, compression=compression)]
    batches.append(v2_batch(random_records(rng, 1), 40, compression=compression))
    batches.append(v2_batch([(None, b"ctl", [])], 41, control=True))  # skipped by both
    batches.append(v2_batch(random_records(rng, 25), 42, compression=compression))
    data = b"".join(batches)
    for fetch_offset in (0, 1, 17, 39, 40, 41, 42, 50, 66, 67):  # into the middle of batches
        for n in (None, 1, 2):
            stock, stock_next, stock_error = take_all(
                Fetcher.PartitionRecords, data, fetch_offset, n
            )
            ours, our_next, our_error = take_all(BlockPartitionRecords, data, fetch_offset, n)
            assert ours == stock_seen(stock)
            assert our_next == stock_next == 67
            assert stock_error is None and our_error is None
            assert [o for o, *_ in ours] == [o for o in range(67) if o >= fetch_offset and o != 41]
    parts = BlockPartitionRecords(0, TP, MemoryRecords(data), check_crcs=True)
    items = parts.take(None)
    assert sum(isinstance(item, RecordBlock) for item in items) == 3  # one per data batch
    passed = [item for item in items if isinstance(item, PassedRecords)]
    assert [(p.first_offset, p.last_offset) for p in passed] == [(41, 41)]  # the control one
    assert parts.records_read == 66


Whole = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def whole_of(items: list[Any]) -> list[Whole]:
    """Records or blocks as (offset, key, value or None, every header in order)."""
    out: list[Whole] = []
    for item in items:
        if isinstance(item, RecordBlock):
            batch = MessageBatch.concatenate(  # in pieces, as polls take them
                [item.message_batch(0).slice(i, i + 1) for i in range(len(item))]
            )
            out += [(int(batch.offsets[i]), batch.key(i), batch.raw_value(i),
                     batch.all_headers(i)) for i in range(len(batch))]  # fmt: skip
        else:
            headers = list(item.headers)
            if all(name == "content-type" for name, _ in headers):
                # only the spans say: the last content type, a null one as none
                headers = [h for h in headers[-1:] if h[1] is not None]
            out.append((item.offset, item.key, item.value, headers))
    return out


@pytest.mark.parametrize("compression", [0, 1])  # none, gzip
def test_blocks_keep_null_values_and_every_header(compression: int) -> None:
    """What a dead letter forwards whole: the value (null stays null) and the headers in
    order, null values and repeated keys included, as kafka-python's records have them,
    also for records with neither key nor value."""
    rng = random.Random(10 + compression)
    records = random_records(rng, 60)
    records += [(None, None, [("trace", b"t"), ("content-type", b"text/plain")]),
                (b"k", None, [("a", None), ("a", b"2")]), (None, None, [])]  # fmt: skip
    data = v2_batch(records, 5, compression=compression)
    for fetch_offset in (5, 30):
        stock = Fetcher.PartitionRecords(fetch_offset, TP, MemoryRecords(data), check_crcs=True)
        ours = BlockPartitionRecords(fetch_offset, TP, MemoryRecords(data), check_crcs=True)
        expected = whole_of(stock.take(None))
        assert whole_of(ours.take(None)) == expected
        assert len(expected) == 68 - fetch_offset
        assert any(v is None and len(h) > 1 for _, k, v, h in expected if k is None)


def test_a_malformed_batch_gives_its_records_up_to_the_bad_one_and_the_partition_goes_on() -> None:
    good = v2_batch([(b"k", b"1 1:1", [])] * 5, 0)
    # a record whose length byte lies (the CRC is rewritten to match): the kernel refuses
    # the batch, the stock reader yields the records before the bad one, then raises
    broken = bytearray(v2_batch([(b"k", b"1 1:1", [])] * 4, 5))
    header = DefaultRecordBatch.HEADER_STRUCT.size
    second = header + 1 + broken[header] // 2  # the length varint is one byte here
    broken[second] = 0x7E  # a length beyond the batch
    crc = calc_crc32c(memoryview(broken)[DefaultRecordBatch.ATTRIBUTES_OFFSET :])
    struct.pack_into(">I", broken, DefaultRecordBatch.CRC_OFFSET, crc)
    after = v2_batch([(None, b"-1 2:1", [])] * 2, 9)
    data = good + bytes(broken) + after
    stock, _, stock_error = take_all(Fetcher.PartitionRecords, data, 0)
    assert [o for o, *_ in stock] == [0, 1, 2, 3, 4, 5]
    assert isinstance(stock_error, CorruptRecordError)  # and stock fetches it again, for ever
    ours, next_offset, our_error = take_all(BlockPartitionRecords, data, 0)
    assert our_error is None
    assert ours[:6] == stock_seen(stock)
    assert ours[6] == (6, None, b"malformed batch", b"8")
    assert [o for o, *_ in ours[7:]] == [9, 10]
    assert next_offset == 11


def test_a_batch_whose_crc_does_not_match_is_skipped_whole() -> None:
    good = v2_batch([(b"k", b"1 1:1", [])] * 5, 0)
    flipped = bytearray(v2_batch([(b"k", b"1 1:1", [])] * 3, 5))
    flipped[-1] ^= 1
    data = good + bytes(flipped) + v2_batch([(None, b"x", [])], 8)
    assert take_all(Fetcher.PartitionRecords, data, 0)[0] == stock_seen(
        [(o, b"k", b"1 1:1", None) for o in range(5)]
    )  # the stock reader raises at the bad batch
    _, _, stock_error = take_all(Fetcher.PartitionRecords, data, 0)
    assert "crc" in str(stock_error)
    ours, next_offset, our_error = take_all(BlockPartitionRecords, data, 0)
    assert our_error is None
    assert [o for o, *_ in ours] == [0, 1, 2, 3, 4, 5, 8]
    assert ours[5] == (5, None, b"bad crc", b"7")
    assert next_offset == 9


def with_payload(batch: bytes, codec: int, payload: bytes) -> bytes:
    """``batch`` with its records replaced by ``payload``, said to be compressed with
    ``codec`` (CRC and length rewritten: only the codec can tell)."""
    buffer = bytearray(batch[: DefaultRecordBatch.HEADER_STRUCT.size] + payload)
    struct.pack_into(">i", buffer, 8, len(buffer) - 12)
    attributes_at = DefaultRecordBatch.ATTRIBUTES_OFFSET
    (attributes,) = struct.unpack_from(">h", buffer, attributes_at)
    struct.pack_into(">h", buffer, attributes_at, (attributes & ~7) | codec)
    crc = calc_crc32c(memoryview(buffer)[attributes_at:])
    struct.pack_into(">I", buffer, DefaultRecordBatch.CRC_OFFSET, crc)
    return bytes(buffer)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])  # gzip, snappy, lz4, zstd
def test_a_batch_its_codec_cannot_read_is_skipped_and_the_next_one_read(codec: int) -> None:
    good = v2_batch([(b"k", b"1 1:1", [])] * 30, 0, compression=codec)
    assert DefaultRecordBatch(good).compression_type == codec
    bad = with_payload(v2_batch([(b"k", b"1 1:1", [])] * 4, 30), codec, b"not compressed at all")
    data = good + bad + v2_batch([(None, b"x", [])], 34)
    ours, next_offset, error = take_all(BlockPartitionRecords, data, 0)
    assert error is None
    assert [o for o, *_ in ours] == [*range(30), 30, 34]
    assert ours[30] == (30, None, b"codec failed", b"33")
    assert next_offset == 35


@pytest.mark.parametrize("codec", [1, 3, 4])  # gzip, lz4, zstd stream without a stated size
def test_a_decompression_bomb_is_skipped_without_being_decompressed_whole(codec: int) -> None:
    import gzip

    import lz4.frame
    import zstandard

    records = v2_batch([(None, b"1 1:1 " + b"0" * (64 << 20), [])], 0)
    body = records[DefaultRecordBatch.HEADER_STRUCT.size :]
    compress = {1: gzip.compress, 3: lz4.frame.compress,
                4: zstandard.ZstdCompressor().compress}[codec]  # fmt: skip
    bomb = with_payload(records, codec, compress(body))
    assert len(bomb) < 1 << 20  # a few kilobytes to a megabyte on the wire
    bounded = type("Bounded", (BlockPartitionRecords,), {"max_batch_bytes": 1 << 20})
    data = bomb + v2_batch([(None, b"x", [])], 1)
    ours, next_offset, error = take_all(bounded, data, 0)
    assert error is None
    assert ours == [(0, None, b"batch too large", b"0"), (1, None, b"x", None)]
    assert next_offset == 2


def test_a_codec_whose_library_is_missing_is_reported_with_its_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard: ImportError
    data = v2_batch([(b"k", b"1 1:1", [])] * 50, 0, compression=4)
    assert DefaultRecordBatch(data).compression_type == 4
    data += v2_batch([(None, b"x", [])], 50)
    parts = BlockPartitionRecords(0, TP, MemoryRecords(data), check_crcs=True)
    items = parts.take(None)
    assert isinstance(items[0], UnreadableRecords)
    assert (items[0].reason, items[0].first_offset, items[0].last_offset) == (
        "codec missing",
        0,
        49,
    )
    assert "zstandard" in items[0].detail
    assert items[0].raw is not None and items[0].raw[:8] == data[:8]  # the batch as fetched
    assert seen_of(items[1:]) == [(50, None, b"x", None)]


def test_a_record_over_the_size_limit_is_taken_out_of_its_batch() -> None:
    values = [b"1 1:1", b"2 " * 600, b"-1 2:1", b"3 " * 700, b"1 3:1"]
    data = v2_batch([(b"k%d" % i, v, []) for i, v in enumerate(values)], 10)
    bounded = type("Bounded", (BlockPartitionRecords,), {"max_record_bytes": 1000})
    parts = bounded(10, TP, MemoryRecords(data), check_crcs=True)
    items = parts.take(None)
    assert seen_of(items) == [
        (10, b"k0", b"1 1:1", None),
        (11, None, b"record too large", b"11"),
        (12, b"k2", b"-1 2:1", None),
        (13, None, b"record too large", b"13"),
        (14, b"k4", b"1 3:1", None),
    ]
    large = [item for item in items if isinstance(item, UnreadableRecords)]
    assert [(item.key, item.raw) for item in large] == [(b"k1", values[1]), (b"k3", values[3])]
    assert parts.next_fetch_offset == 15


def test_an_old_format_batch_that_cannot_be_read_is_skipped() -> None:
    broken = bytearray(legacy_batch([b"a", b"b"], 0))
    broken[-1] ^= 1  # the last message's CRC no longer matches
    data = bytes(broken) + v2_batch([(None, b"d", [])], 2)
    ours, next_offset, error = take_all(BlockPartitionRecords, data, 0)
    assert error is None
    assert ours[0] == (0, None, b"a", None)
    assert ours[1][1:3] == (None, b"bad crc") and ours[1][0] == 1
    assert ours[2] == (2, None, b"d", None)
    assert next_offset == 3


def transactional_batch(
    values: list[bytes], base_offset: int, *, marker: int | None = None
) -> bytes:
    """A batch of producer 7's transaction; with ``marker`` (0 abort, 1 commit), the
    control batch that ends it instead."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=7,
        producer_epoch=0, base_sequence=0, batch_size=1 << 30,
    )  # fmt: skip
    if marker is None:
        for delta, value in enumerate(values):
            builder.append(delta, timestamp=1000, key=None, value=value, headers=[])
    else:  # a control record: its key is (version 0, type), its value the coordinator epoch
        builder.append(0, timestamp=1000, key=struct.pack(">hh", 0, marker),
                       value=struct.pack(">hi", 0, 0), headers=[])  # fmt: skip
    buffer = builder.build()
    struct.pack_into(">q", buffer, 0, base_offset)
    if marker is not None:
        at = DefaultRecordBatch.ATTRIBUTES_OFFSET
        (attributes,) = struct.unpack_from(">h", buffer, at)
        struct.pack_into(">h", buffer, at, attributes | DefaultRecordBatch.CONTROL_MASK)
        struct.pack_into(">I", buffer, DefaultRecordBatch.CRC_OFFSET,
                         calc_crc32c(memoryview(buffer)[at:]))  # fmt: skip
    return bytes(buffer)


class Aborted:
    """What a fetch response lists of an aborted transaction."""

    def __init__(self, producer_id: int, first_offset: int) -> None:
        self.producer_id = producer_id
        self.first_offset = first_offset


def test_read_committed_skips_aborted_transactions_as_the_stock_reader_does() -> None:
    data = (
        transactional_batch([b"+1 1:1", b"+1 2:1"], 0)  # committed below
        + transactional_batch([], 2, marker=1)
        + transactional_batch([b"-1 9:1"] * 3, 3)  # aborted below
        + transactional_batch([], 6, marker=0)
        + v2_batch([(None, b"+1 3:1", [])], 7)
    )
    aborted = [Aborted(7, 3)]
    for kind in (Fetcher.PartitionRecords, BlockPartitionRecords):
        parts = kind(0, TP, MemoryRecords(data), check_crcs=True,
                     isolation_level=IsolationLevel.READ_COMMITTED,
                     aborted_transactions=aborted)  # fmt: skip
        items = parts.take(None)
        assert [o for o, *_ in seen_of(items)] == [0, 1, 7], kind
        assert parts.next_fetch_offset == 8
        if kind is BlockPartitionRecords:  # what carries the position past them
            passed = [(p.first_offset, p.last_offset) for p in items
                      if isinstance(p, PassedRecords)]  # fmt: skip
            assert passed == [(2, 2), (3, 5), (6, 6)]
    uncommitted = BlockPartitionRecords(0, TP, MemoryRecords(data), check_crcs=True,
                                        aborted_transactions=aborted)  # fmt: skip
    assert [o for o, *_ in seen_of(uncommitted.take(None))] == [0, 1, 3, 4, 5, 7]


def test_the_source_reads_committed_records_unless_told_otherwise() -> None:
    assert KafkaSource("127.0.0.1:1", "t", "g").isolation_level == "read_committed"
    told = KafkaSource("127.0.0.1:1", "t", "g", isolation_level="read_uncommitted")
    assert told.isolation_level == "read_uncommitted"


def test_old_format_batches_go_record_by_record() -> None:
    data = legacy_batch([b"a", b"b", b"c"], 0) + v2_batch([(None, b"d", [])], 3)
    stock, stock_next, _ = take_all(Fetcher.PartitionRecords, data, 1)
    ours, our_next, _ = take_all(BlockPartitionRecords, data, 1)
    assert (
        ours
        == stock_seen(stock)
        == [(1, None, b"b", None), (2, None, b"c", None), (3, None, b"d", None)]
    )
    assert our_next == stock_next == 4


def test_install_refuses_consumers_it_does_not_know() -> None:
    class Strange:
        _fetcher = object()

    assert install_block_records(Strange()) is False
    assert install_block_records(object()) is False


# -- against the broker ------------------------------------------------------------------


def produce(tansu: Tansu, topic: str, values: list[bytes], *, compression: str | None,
            headers: list[tuple[str, bytes]] | None = None) -> None:  # fmt: skip
    producer = KafkaProducer(
        bootstrap_servers=tansu.bootstrap, compression_type=compression, linger_ms=200,
        batch_size=1 << 20,
    )  # fmt: skip
    try:
        for i, value in enumerate(values):
            producer.send(topic, value=value, key=b"k%d" % i if i % 3 else None, partition=0,
                          headers=headers or [])  # fmt: skip
        producer.flush(timeout=30)
    finally:
        producer.close()


def stock_read(tansu: Tansu, topic: str, start: int, count: int) -> list[Seen]:
    consumer = KafkaConsumer(bootstrap_servers=tansu.bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), start)
        out: list[Seen] = []
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                out += [
                    (r.offset, r.key, r.value, dict(r.headers).get("content-type")) for r in records
                ]
        return out
    finally:
        consumer.close(autocommit=False)


def source_read(source: KafkaSource, count: int, budget: int = 500) -> list[Seen]:
    out: list[Seen] = []

    def enough() -> bool:
        batch = source.poll(0.2, budget)
        assert len(batch) <= budget
        out.extend((m.offset, m.key, m.value, m.headers.get("content-type")) for m in batch)
        return len(out) >= count

    wait_for(enough, timeout=40, interval=0.0, what=f"{count} messages")
    return out


@pytest.fixture
def opened() -> Any:
    sources: list[KafkaSource] = []
    yield sources
    for source in sources:
        source.close()


#: Tansu holds a new member's JoinGroup for half the session timeout (2 s at the least)
QUICK_JOIN = {"session_timeout_ms": 4000, "heartbeat_interval_ms": 1000}


def new_source(tansu: Tansu, opened: list[KafkaSource], topic: str) -> KafkaSource:
    source = KafkaSource(tansu.bootstrap, topic, f"g-{uuid.uuid4().hex[:8]}", **QUICK_JOIN)
    opened.append(source)
    return source


@pytest.mark.kafka
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_broker_blocks_match_the_stock_consumer(
    tansu: Tansu, opened: list[KafkaSource], topic_name: str, compression: str | None
) -> None:
    tansu.create_topic(topic_name, 1)
    values = [b"%d 1:%d\n" % (i % 2, i) * (1 + i % 3) for i in range(600)]
    produce(tansu, topic_name, values[:300], compression=compression)
    produce(tansu, topic_name, values[300:], compression=compression,
            headers=[("content-type", b"text/svmlight"), ("x", b"y")])  # fmt: skip
    stock = stock_read(tansu, topic_name, 0, 600)
    assert len(stock) == 600
    source = new_source(tansu, opened, topic_name)
    ours = source_read(source, 600)
    assert source.block_records
    assert ours == stock
    assert source.position() == {0: 600}
    middle = 123  # inside the first batch: the records before it are dropped
    source.seek({0: middle})
    assert source_read(source, 600 - middle, budget=50) == stock[middle:]
    assert source.position() == {0: 600}


@pytest.mark.kafka
def test_poll_budget_counts_messages_not_batches(
    tansu: Tansu, opened: list[KafkaSource], topic_name: str
) -> None:
    tansu.create_topic(topic_name, 1)
    produce(tansu, topic_name, [b"1 1:%d\n" % i for i in range(400)], compression=None)
    source = new_source(tansu, opened, topic_name)
    first = wait_for(lambda: source.poll(0.2, 7), timeout=40, what="a first poll")
    assert [m.offset for m in first] == list(range(7))
    assert source.position() == {0: 7}
    assert wait_for(lambda: source.lag(), timeout=10, what="lag") == {0: 393}
    second = source.poll(0.0, 7)
    assert [m.offset for m in second] == list(range(7, 14))
    source.seek({0: 3})  # what was fetched beyond is dropped, and read again from 3
    again = source_read(source, 397, budget=100)
    assert [o for o, *_ in again] == list(range(3, 400))
    assert source.position() == {0: 400}


@pytest.mark.kafka
def test_records_one_by_one_give_the_same_messages(
    tansu: Tansu, opened: list[KafkaSource], topic_name: str
) -> None:
    tansu.create_topic(topic_name, 1)
    produce(tansu, topic_name, [b"1 1:%d\n" % i for i in range(50)], compression=None,
            headers=[("content-type", b"text/svmlight")])  # fmt: skip

    class Same(Deserializer):
        def deserialize(self, topic: str, headers: Any, data: bytes | None) -> bytes | None:
            return data

    # a deserializer keeps kafka-python's own record path (blocks hold raw bytes only)
    stock = KafkaSource(
        tansu.bootstrap,
        topic_name,
        f"g-{uuid.uuid4().hex[:8]}",
        key_deserializer=Same(),
        **QUICK_JOIN,
    )
    opened.append(stock)
    fast = new_source(tansu, opened, topic_name)
    by_records = source_read(stock, 50, budget=7)
    assert not stock.block_records
    assert source_read(fast, 50, budget=7) == by_records == stock_read(tansu, topic_name, 0, 50)
    assert stock.position() == fast.position() == {0: 50}


WARMED_THEN_FETCHED = """
import random, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from test_kafka_blocks import BlockPartitionRecords, random_records, take_all, v2_batch
from streamlearn._kernels.kafka_records import decode_records
from streamlearn.sources.kafka_blocks import warm_up

warm_up()
warmed = len(decode_records.signatures)
data = v2_batch(random_records(random.Random(3), 20), 0) + v2_batch([(b"k", b"1 1:1", [])], 20)
ours, next_offset, error = take_all(BlockPartitionRecords, data, 0)
assert len(ours) == 21 and next_offset == 21 and error is None
print(warmed, len(decode_records.signatures))
"""


def test_warm_up_compiles_what_fetched_batches_use() -> None:
    """In a fresh process, decoding fetched batches after the warm-up needs no other
    compiled version of the kernel: a first run compiles it before the consumer joins
    its group, not in the middle of a fetch."""
    here = Path(__file__).resolve().parent
    done = subprocess.run(
        [sys.executable, "-c", WARMED_THEN_FETCHED, str(here), str(here.parent)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["1", "1"]
