"""The record-batch kernel against kafka-python's own writer and reader of v2 batches."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from streamlearn._kernels.kafka_records import (
    CONTENT_TYPE,
    KEY_LENGTH,
    KEY_START,
    MIN_RECORD_BYTES,
    OFFSET,
    OTHER_HEADERS,
    RECORD_ROWS,
    RECORDS_BAD_HEADER,
    RECORDS_BAD_LENGTH,
    RECORDS_BAD_VARINT,
    RECORDS_OK,
    RECORDS_TOO_MANY,
    RECORDS_TRAILING_BYTES,
    RECORDS_TRUNCATED,
    TYPE_LENGTH,
    TYPE_START,
    VALUE_LENGTH,
    VALUE_START,
    decode_records,
    join_values,
    read_varint,
)

HEADER_SIZE = DefaultRecordBatch.HEADER_STRUCT.size
Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def build(records: list[Record], base_offset: int = 0, compression: int = 0) -> bytes:
    """A v2 batch written by kafka-python (offsets are deltas from ``base_offset``)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for delta, key, value, headers in records:
        builder.append(delta, timestamp=1_700_000_000_000 + delta, key=key, value=value,
                       headers=headers)  # fmt: skip
    buffer = builder.build()
    struct.pack_into(">q", buffer, 0, base_offset)  # the broker's part, outside the CRC
    return bytes(buffer)


def decoded(batch_bytes: bytes, min_offset: int = -(1 << 62)) -> tuple[int, int, list[Record]]:
    """(code, records read, the kept records rebuilt from the spans) of the kernel."""
    batch = DefaultRecordBatch(batch_bytes)
    batch._maybe_uncompress()
    buffer = bytes(batch._buffer)
    data = np.frombuffer(buffer, dtype=np.uint8)
    n = batch.records_count
    out = np.full((RECORD_ROWS, n), -7, dtype=np.int64)
    code, kept, read = decode_records(
        data, batch._pos, len(buffer), n, batch.base_offset, min_offset, CONTENT_TYPE, out
    )

    def span(start: int, length: int) -> bytes | None:
        if length < 0:
            assert start == 0
            return None
        return buffer[start : start + length]

    rebuilt: list[Record] = []
    for j in range(kept):
        content = span(int(out[TYPE_START, j]), int(out[TYPE_LENGTH, j]))
        headers = [] if content is None else [("content-type", content)]
        rebuilt.append(
            (
                int(out[OFFSET, j]),
                span(int(out[KEY_START, j]), int(out[KEY_LENGTH, j])),
                span(int(out[VALUE_START, j]), int(out[VALUE_LENGTH, j])),
                headers + [("other", None)] * int(out[OTHER_HEADERS, j]),
            )
        )
    return int(code), int(read), rebuilt


def reference(batch_bytes: bytes, min_offset: int = -(1 << 62)) -> list[Record]:
    """The records kafka-python reads, in the kernel's terms (content type kept, the
    last one of several; other headers counted)."""
    out: list[Record] = []
    for record in DefaultRecordBatch(batch_bytes):
        if not out and record.offset < min_offset:
            continue
        headers = dict(record.headers)
        content = headers.get("content-type")
        others = sum(1 for k, _ in record.headers if k != "content-type")
        kept = [] if content is None else [("content-type", content)]
        out.append((record.offset, record.key, record.value, kept + [("other", None)] * others))
    return out


def random_bytes(rng: random.Random, *, null: float = 0.2, big: float = 0.05) -> bytes | None:
    roll = rng.random()
    if roll < null:
        return None
    if roll < null + big:
        return rng.randbytes(rng.choice([200, 20_000, 70_000]))  # multi-byte lengths
    return rng.randbytes(rng.randrange(0, 40))


def random_records(rng: random.Random, n: int) -> list[Record]:
    records: list[Record] = []
    delta = 0
    for _ in range(n):
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            name = rng.choice(["content-type", "trace", "ü-key", "content-typ", ""])
            headers.append((name, random_bytes(rng)))
        records.append((delta, random_bytes(rng), random_bytes(rng), headers))
        delta += rng.choice([1, 1, 1, 2, 70, 20_000])  # gaps as compaction leaves
    return records


@pytest.mark.parametrize("seed", range(12))
def test_random_batches_match_kafka_python(seed: int) -> None:
    rng = random.Random(seed)
    records = random_records(rng, rng.choice([1, 2, 17, 300]))
    base = rng.choice([0, 5, 1 << 40])
    batch = build(records, base_offset=base, compression=1 if seed % 3 == 0 else 0)
    code, read, got = decoded(batch)
    assert code == RECORDS_OK and read == len(records)
    assert got == reference(batch)
    assert [offset for offset, *_ in got] == [base + delta for delta, *_ in records]


def test_min_offset_drops_only_the_leading_records() -> None:
    records = [(d, b"k", b"v%d" % d, []) for d in (0, 1, 2, 5, 6)]
    batch = build(records, base_offset=100)
    for min_offset in (0, 100, 101, 103, 105, 106, 107):
        code, read, got = decoded(batch, min_offset)
        assert code == RECORDS_OK and read == 5
        assert got == reference(batch, min_offset)
        assert [r[0] for r in got] == [o for o in (100, 101, 102, 105, 106) if o >= min_offset]


def test_varints_round_trip_over_the_int64_range() -> None:
    from kafka.record.util import encode_varint

    values = [0, 1, -1, 63, -64, 64, 127, 128, 300, -300, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]
    for value in values:
        encoded = bytearray()
        encode_varint(value, encoded.append)
        data = np.frombuffer(bytes(encoded) + b"\x00", dtype=np.uint8)
        assert read_varint(data, 0, len(encoded)) == (value, len(encoded))
        assert read_varint(data, 0, len(encoded) - 1)[1] == -1  # truncated
    too_long = np.frombuffer(b"\xff" * 10 + b"\x01", dtype=np.uint8)
    assert read_varint(too_long, 0, 11)[1] == -2


def kafka_python_rejects(buffer: bytes, pos: int, n: int) -> bool:
    """Whether kafka-python's reader raises on these records."""
    batch = DefaultRecordBatch(b"\x00" * HEADER_SIZE)
    batch._buffer = bytearray(buffer)
    batch._pos = pos
    batch._num_records = n
    batch._decompressed = True
    try:
        list(batch)
    except CorruptRecordError:
        return True
    return False


def run_kernel(buffer: bytes, pos: int, n: int, capacity: int | None = None) -> tuple[int, int]:
    data = np.frombuffer(buffer, dtype=np.uint8)
    out = np.empty((RECORD_ROWS, n if capacity is None else capacity), dtype=np.int64)
    code, kept, _ = decode_records(data, pos, len(buffer), n, 0, 0, CONTENT_TYPE, out)
    return int(code), int(kept)


def records_part(batch: bytes) -> bytes:
    return batch[HEADER_SIZE:]


def test_malformed_records_give_codes_never_reads_out_of_bounds() -> None:
    good = records_part(
        build([(0, b"key", b"value", [("content-type", b"x")]), (1, None, b"v", [])])
    )
    assert run_kernel(good, 0, 2) == (RECORDS_OK, 2)
    assert run_kernel(good + b"\x00", 0, 2)[0] == RECORDS_TRAILING_BYTES
    assert run_kernel(good, 0, 3)[0] == RECORDS_TRUNCATED  # claims a third record
    assert run_kernel(good, 0, 1)[0] == RECORDS_TRAILING_BYTES
    assert run_kernel(good, 0, 2, capacity=1)[0] == RECORDS_TOO_MANY
    for cut in range(len(good)):  # every truncation is an error, not a crash
        assert run_kernel(good[:cut], 0, 2)[0] != RECORDS_OK
    # a negative record length, an overlong varint, a negative header count
    assert run_kernel(b"\x01" + good[1:], 0, 2)[0] == RECORDS_BAD_LENGTH
    assert run_kernel(b"\xff" * 11, 0, 1)[0] == RECORDS_BAD_VARINT
    # length 6: attributes, timestamp, offset delta, key null, value null, headers -1
    negative_headers = b"\x0c\x00\x00\x00\x01\x01\x01"
    assert run_kernel(negative_headers, 0, 1)[0] == RECORDS_BAD_HEADER
    # one header whose key is not UTF-8
    bad_key = b"\x12\x00\x00\x00\x01\x01\x02\x04\xff\xfe\x01"
    assert run_kernel(bad_key, 0, 1)[0] == RECORDS_BAD_HEADER
    # a key longer than its record
    long_key = b"\x0c\x00\x00\x00\x7e\x01\x00"
    assert run_kernel(long_key, 0, 1)[0] == RECORDS_BAD_LENGTH
    for buffer, n in [(negative_headers, 1), (bad_key, 1), (long_key, 1), (good + b"\x00", 2)]:
        assert kafka_python_rejects(buffer, 0, n)


def test_random_corruptions_agree_with_kafka_python() -> None:
    rng = random.Random(7)
    for trial in range(300):
        records = random_records(random.Random(trial), rng.choice([1, 3, 8]))
        part = bytearray(records_part(build(records)))
        for _ in range(rng.choice([1, 2, 4])):
            part[rng.randrange(len(part))] = rng.randrange(256)
        n = len(records)
        if n * MIN_RECORD_BYTES > len(part):
            continue
        code, _ = run_kernel(bytes(part), 0, n)
        if kafka_python_rejects(bytes(part), 0, n):
            assert code != RECORDS_OK, trial
        else:  # or a varint beyond 64 bits, which kafka-python reads as a huge int
            assert code in (RECORDS_OK, RECORDS_BAD_VARINT), trial


def test_join_values_ends_each_value_with_one_newline() -> None:
    values = [b"1 1:1", b"", None, b"-1 2:1\n", b"a\nb"]
    buffer = b"".join(v for v in values if v)
    starts, lengths, position = [], [], 0
    for v in values:
        starts.append(position if v is not None else 0)
        lengths.append(len(v) if v is not None else -1)
        position += len(v or b"")
    data = np.frombuffer(buffer, dtype=np.uint8)
    out = np.empty(len(buffer) + len(values), dtype=np.uint8)
    ends = np.empty(len(values), dtype=np.int64)
    size = join_values(data, np.array(starts), np.array(lengths), 0, 5, out, ends)
    assert out[:size].tobytes() == b"1 1:1\n-1 2:1\na\nb\n"
    assert ends.tolist() == [6, 6, 6, 13, 17]
    size = join_values(data, np.array(starts), np.array(lengths), 3, 5, out, ends)
    assert out[:size].tobytes() == b"-1 2:1\na\nb\n" and ends[:2].tolist() == [7, 11]
