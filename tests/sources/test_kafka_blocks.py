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
    RecordBlock,
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
    """Records or blocks as (offset, key, value, content type)."""
    out: list[Seen] = []
    for item in items:
        if isinstance(item, RecordBlock):
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
    stock_blocks = 0
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
    stock_blocks = len(parts.take(None))
    assert stock_blocks == 3  # one block per data batch
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


def test_corrupt_batches_fall_back_to_the_stock_reader() -> None:
    good = v2_batch([(b"k", b"1 1:1", [])] * 5, 0)
    # a record whose length byte lies (the CRC is rewritten to match): the kernel refuses
    # the batch, the stock reader yields the records before the bad one, then raises
    broken = bytearray(v2_batch([(b"k", b"1 1:1", [])] * 4, 5))
    header = DefaultRecordBatch.HEADER_STRUCT.size
    second = header + 1 + broken[header] // 2  # the length varint is one byte here
    broken[second] = 0x7E  # a length beyond the batch
    crc = calc_crc32c(memoryview(broken)[DefaultRecordBatch.ATTRIBUTES_OFFSET :])
    struct.pack_into(">I", broken, DefaultRecordBatch.CRC_OFFSET, crc)
    data = good + bytes(broken)
    stock, _, stock_error = take_all(Fetcher.PartitionRecords, data, 0)
    ours, _, our_error = take_all(BlockPartitionRecords, data, 0)
    assert ours == stock_seen(stock)
    assert [o for o, *_ in ours] == [0, 1, 2, 3, 4, 5]
    assert isinstance(stock_error, CorruptRecordError) and isinstance(our_error, CorruptRecordError)
    # a CRC mismatch raises before anything of the batch is read, as stock does
    flipped = bytearray(good)
    flipped[-1] ^= 1
    stock, _, stock_error = take_all(Fetcher.PartitionRecords, bytes(flipped), 0)
    ours, _, our_error = take_all(BlockPartitionRecords, bytes(flipped), 0)
    assert ours == stock == []
    assert "crc" in str(stock_error) and "crc" in str(our_error)


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
