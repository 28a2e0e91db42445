"""Producers as production configures them, for the tests: librdkafka's (confluent-kafka:
idempotent, compressed, transactional), and record batches sent as they are, whatever
their CRC, codec or records say (:func:`services.produce_raw`)."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c
from services import Tansu, wait_for

#: Kafka's codecs by the name producers take
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: each codec's number in a batch's attributes
CODEC_NUMBERS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def librdkafka(broker: Tansu, **config: Any) -> Any:
    """A confluent-kafka producer as production runs one: idempotent, acks=all, batches
    lingering 20 ms; ``config`` in librdkafka's names (``compression.type``...)."""
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                     "acks": "all", "linger.ms": 20, **config})  # fmt: skip


def send_all(
    producer: Any,
    topic: str,
    values: Sequence[bytes | None],
    *,
    partition: int = 0,
    key: bytes | None = None,
    headers: Sequence[tuple[str, bytes]] | None = None,
) -> list[int]:
    """Produce ``values`` to ``partition`` and wait for every delivery report; their
    offsets (a failed delivery fails the test)."""
    offsets: list[int] = []
    errors: list[Any] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(error)
        else:
            offsets.append(message.offset())

    for value in values:
        producer.produce(topic, value=value, key=key, partition=partition,
                         headers=list(headers or ()), on_delivery=delivered)  # fmt: skip
        producer.poll(0)
    assert producer.flush(60) == 0, "messages still on their way after 60 s"
    assert not errors, errors
    assert len(offsets) == len(values)
    return sorted(offsets)


def codecs_on_the_broker(broker: Tansu, topic: str, partition: int) -> set[int]:
    """The codec numbers of the record batches the broker gives for ``partition``: that
    the producer's batches really are compressed (read with kafka-python's stock reader,
    the batches seen before their records are taken)."""
    seen: set[int] = set()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    fetcher = consumer._fetcher
    stock = fetcher.PartitionRecords

    class Watching(stock):  # type: ignore[misc,valid-type]
        def _unpack_records(self, tp: Any, records: Any, *args: Any) -> Iterator[Any]:
            batch = records.next_batch()
            while batch is not None:
                seen.add(batch.compression_type)
                batch = records.next_batch()
            self.drain()  # as the stock reader does at its end
            yield from ()

    fetcher.PartitionRecords = Watching
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        wait_for(lambda: consumer.poll(timeout_ms=200) is not None and seen, timeout=30,
                 what=f"a fetch of {topic}")  # fmt: skip
    finally:
        consumer.close()
    return seen


def v2_batch(values: Sequence[bytes | None], *, codec: int = 0, keys: Any = None) -> bytes:
    """A record batch of ``values`` (offsets from 0: the broker sets the base)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
    )  # fmt: skip
    for i, value in enumerate(values):
        key = None if keys is None else keys[i]
        builder.append(i, timestamp=1000 + i, key=key, value=value, headers=[])
    return bytes(builder.build())


def fix_crc(batch: bytearray) -> bytes:
    """``batch`` with its CRC made to match what it holds now."""
    at = DefaultRecordBatch.ATTRIBUTES_OFFSET
    struct.pack_into(">I", batch, DefaultRecordBatch.CRC_OFFSET, calc_crc32c(bytes(batch[at:])))
    return bytes(batch)


def with_payload(batch: bytes, codec: int, payload: bytes) -> bytes:
    """``batch`` with its records replaced by ``payload``, said to be compressed with
    ``codec`` (length and CRC rewritten to match: only the codec can tell)."""
    buffer = bytearray(batch[: DefaultRecordBatch.HEADER_STRUCT.size] + payload)
    struct.pack_into(">i", buffer, 8, len(buffer) - 12)
    at = DefaultRecordBatch.ATTRIBUTES_OFFSET
    (attributes,) = struct.unpack_from(">h", buffer, at)
    struct.pack_into(">h", buffer, at, (attributes & ~7) | codec)
    return fix_crc(buffer)


def bad_crc(batch: bytes) -> bytes:
    """``batch`` with its last byte changed, and its CRC left as it was."""
    damaged = bytearray(batch)
    damaged[-1] ^= 0x55
    return bytes(damaged)


def malformed(batch: bytes) -> bytes:
    """``batch`` with its last record cut short (length and CRC rewritten to match)."""
    cut = bytearray(batch[:-3])
    struct.pack_into(">i", cut, 8, len(cut) - 12)
    return fix_crc(cut)
