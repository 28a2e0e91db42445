"""Kafka's codecs decompressed with a bound: the same bytes as kafka-python's own
decoders, whatever the producer's framing, and an error with a reason instead of an
exception or a decompression without end."""

from __future__ import annotations

import gzip
import random
import zlib

import lz4.frame
import pytest
import snappy
import zstandard
from kafka import codec as kafka_codec

from streamlearn.sources.kafka_codecs import (
    BATCH_TOO_LARGE,
    CODEC_FAILED,
    CODEC_MISSING,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    UnreadableError,
    decompress,
)


def payloads() -> list[bytes]:
    rng = random.Random(5)
    text = b"".join(b"%+d %d:%.3f\n" % (rng.choice([1, -1]), rng.randrange(1, 200), rng.random())
                    for _ in range(20_000))  # fmt: skip
    return [b"", b"x", rng.randbytes(3000), text, text + rng.randbytes(70_000)]


#: how each producer writes each codec: kafka-python's encoders (xerial-framed snappy, as
#: the Java client writes it), and the raw formats librdkafka writes
WRITERS = {
    GZIP: [kafka_codec.gzip_encode, gzip.compress],
    SNAPPY: [kafka_codec.snappy_encode, snappy.compress],
    LZ4: [kafka_codec.lz4_encode, lz4.frame.compress],
    ZSTD: [kafka_codec.zstd_encode, zstandard.ZstdCompressor(level=3).compress],
}
READERS = {
    GZIP: kafka_codec.gzip_decode,
    SNAPPY: kafka_codec.snappy_decode,
    LZ4: kafka_codec.lz4_decode,
    ZSTD: kafka_codec.zstd_decode,
}


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_what_every_writer_wrote_reads_as_kafka_python_reads_it(codec: int) -> None:
    for write in WRITERS[codec]:
        for payload in payloads():
            compressed = write(payload)
            assert decompress(codec, compressed, limit=len(payload)) == payload
            if payload:  # kafka-python cannot read its own xerial framing of nothing
                assert READERS[codec](compressed) == payload


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_one_byte_over_the_limit_is_a_batch_too_large(codec: int) -> None:
    payload = payloads()[3]
    for write in WRITERS[codec]:
        with pytest.raises(UnreadableError) as raised:
            decompress(codec, write(payload), limit=len(payload) - 1)
        assert raised.value.reason == BATCH_TOO_LARGE


def bomb(codec: int, size: int) -> bytes:
    """``size`` zero bytes compressed with ``codec``, written a megabyte at a time (the
    whole never exists in memory)."""
    chunk = bytes(1 << 20)
    if codec == GZIP:
        deflater = zlib.compressobj(1, wbits=31)
        return b"".join(deflater.compress(chunk) for _ in range(size >> 20)) + deflater.flush()
    if codec == ZSTD:
        writer = zstandard.ZstdCompressor().compressobj()
        return b"".join(writer.compress(chunk) for _ in range(size >> 20)) + writer.flush()
    frames = lz4.frame.LZ4FrameCompressor()
    pieces = [frames.begin()] + [frames.compress(chunk) for _ in range(size >> 20)]
    return b"".join([*pieces, frames.flush()])


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_a_bomb_stops_at_the_limit_without_being_decompressed_whole(codec: int) -> None:
    """Half a gigabyte of zeros, a few hundred kilobytes compressed: no more than about
    the limit is ever held (Python's allocations, traced, peak far below the whole)."""
    import tracemalloc

    compressed = bomb(codec, 512 << 20)
    assert len(compressed) < 4 << 20
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableError) as raised:
            decompress(codec, compressed, limit=8 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert raised.value.reason == BATCH_TOO_LARGE
    assert peak < 64 << 20, peak


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_a_payload_cut_short_is_a_codec_that_failed(codec: int) -> None:
    compressed = WRITERS[codec][1](payloads()[3])
    with pytest.raises(UnreadableError) as raised:
        decompress(codec, compressed[: len(compressed) // 2], limit=1 << 30)
    assert raised.value.reason == CODEC_FAILED


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_bytes_no_codec_wrote_are_a_codec_that_failed(codec: int) -> None:
    with pytest.raises(UnreadableError) as raised:
        decompress(codec, b"\x00\x01 these bytes are no compressed stream", limit=1 << 20)
    assert raised.value.reason == CODEC_FAILED


def test_an_unknown_codec_and_a_missing_library_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UnreadableError) as raised:
        decompress(6, b"anything", limit=100)
    assert raised.value.reason == CODEC_MISSING
    monkeypatch.setitem(__import__("sys").modules, "lz4.frame", None)
    with pytest.raises(UnreadableError) as raised:
        decompress(LZ4, lz4.frame.compress(b"x" * 100), limit=1000)
    assert raised.value.reason == CODEC_MISSING
    assert "lz4" in raised.value.detail


def test_no_compression_is_the_payload() -> None:
    assert decompress(NONE, memoryview(b"abc"), limit=1) == b"abc"
