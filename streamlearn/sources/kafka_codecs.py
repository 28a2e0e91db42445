"""The codecs of Kafka record batches, decompressed with a bound on what they may grow to.

A v2 record batch holds its records compressed with one of gzip (1), snappy (2), lz4 (3)
or zstd (4), as its producer chose. kafka-python decompresses them whole with the
libraries it finds (a default install of streamlearn has all four), however large the
result: a batch of a few kilobytes that decompresses to gigabytes (a decompression bomb)
would take the daemon's memory. :func:`decompress` reads the same formats as
kafka-python, but stops at ``limit`` bytes of output and says why a batch cannot be read.

Each reason a batch or a record cannot be read has a name (the ``reason`` label of
``streamlearn_unreadable_total``) and the fix an operator can apply (:data:`FIXES`).

>>> import gzip
>>> decompress(GZIP, gzip.compress(b"+1 1:1\\n" * 3), limit=100)
b'+1 1:1\\n+1 1:1\\n+1 1:1\\n'
>>> decompress(GZIP, gzip.compress(b"0" * 1000), limit=100)
Traceback (most recent call last):
...
streamlearn.sources.kafka_codecs.UnreadableError: batch too large: gzip decompresses to more ...
>>> decompress(LZ4, b"not lz4", limit=100)
Traceback (most recent call last):
...
streamlearn.sources.kafka_codecs.UnreadableError: codec failed: lz4: ...
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
#: the codec of each compression type of a batch's attributes
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
#: the codecs a producer of streamlearn's can be told to use (``--compression``)
PRODUCER_CODECS = tuple(CODEC_NAMES.values())
#: the package that reads each codec (kafka-python's choice), for the fix in the log
CODEC_PACKAGES = {SNAPPY: "python-snappy", LZ4: "lz4", ZSTD: "zstandard"}

#: the default bound of a batch's decompressed records (``--max-batch-bytes``)
DEFAULT_MAX_BATCH_BYTES = 64 << 20
#: the default bound of one record's value or key (``--max-record-bytes``)
DEFAULT_MAX_RECORD_BYTES = 16 << 20

#: why a batch or a record cannot be read
BAD_CRC = "bad crc"
CODEC_MISSING = "codec missing"
CODEC_FAILED = "codec failed"
BATCH_TOO_LARGE = "batch too large"
RECORD_TOO_LARGE = "record too large"
MALFORMED = "malformed batch"
REASONS = (BAD_CRC, CODEC_MISSING, CODEC_FAILED, BATCH_TOO_LARGE, RECORD_TOO_LARGE, MALFORMED)
#: what an operator can do about each
FIXES = {
    BAD_CRC: "the batch was damaged after its producer wrote it: check the broker's disks "
    "and logs, and produce its messages again",
    CODEC_MISSING: "install the codec's package in the daemon's environment",
    CODEC_FAILED: "its producer wrote a batch its codec cannot read: check the producer's "
    "compression library",
    BATCH_TOO_LARGE: "raise --max-batch-bytes if batches this large are legitimate",
    RECORD_TOO_LARGE: "raise --max-record-bytes if messages this large are legitimate",
    MALFORMED: "its producer wrote records that do not follow Kafka's record format",
}

#: output is gathered in pieces of this size at most (no piece holds more than the limit)
_CHUNK = 1 << 20
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16


class UnreadableError(Exception):
    """A batch or record that cannot be read: one of :data:`REASONS`, and what was
    found."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def decompress(codec: int, payload: bytes | memoryview, limit: int) -> bytes:
    """The records of a batch compressed with ``codec``; :class:`UnreadableError` when the
    codec is unknown or its library missing, when the payload is not what the codec
    writes, or when it would decompress to more than ``limit`` bytes."""
    if codec == NONE:
        return bytes(payload)
    reader = _READERS.get(codec)
    if reader is None:
        raise UnreadableError(CODEC_MISSING, f"compression type {codec} is none Kafka defines")
    name = CODEC_NAMES[codec]
    try:
        out = reader(payload, limit)
    except UnreadableError:
        raise
    except ImportError:
        raise UnreadableError(
            CODEC_MISSING, f"{name} needs the package {CODEC_PACKAGES[codec]}"
        ) from None
    except Exception as error:  # every library raises its own kind
        raise UnreadableError(CODEC_FAILED, f"{name}: {error or type(error).__name__}") from None
    if len(out) > limit:
        raise UnreadableError(BATCH_TOO_LARGE, f"{name} decompresses to more than {limit} bytes")
    return out


def _gzip(payload: bytes | memoryview, limit: int) -> bytes:
    """gzip members one after the other (as ``gzip.decompress`` reads them)."""
    pieces: list[bytes] = []
    size = 0
    data = bytes(payload)
    while data:
        inflater = zlib.decompressobj(wbits=31)
        pending = data
        while True:
            piece = inflater.decompress(pending, min(_CHUNK, limit + 1 - size))
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                return b"".join(pieces)
            if inflater.eof:
                break
            pending = inflater.unconsumed_tail
            if not pending and not piece:
                raise ValueError("truncated gzip stream")
        data = inflater.unused_data
    return b"".join(pieces)


def _snappy(payload: bytes | memoryview, limit: int) -> bytes:
    """Raw snappy, or the xerial framing Kafka's Java client writes: the decompressed
    size is read from each block's preamble before anything is decompressed."""
    import snappy

    data = bytes(payload)
    if data[: len(_XERIAL_MAGIC)] == _XERIAL_MAGIC:
        blocks: list[bytes] = []
        at = _XERIAL_HEADER
        while at < len(data):
            (length,) = struct.unpack_from(">i", data, at)
            if length < 0 or at + 4 + length > len(data):
                raise ValueError("a xerial block runs past the end")
            blocks.append(data[at + 4 : at + 4 + length])
            at += 4 + length
    else:
        blocks = [data]
    size = sum(_snappy_length(block) for block in blocks)
    if size > limit:
        raise UnreadableError(BATCH_TOO_LARGE, f"snappy decompresses to {size} bytes, over {limit}")
    return b"".join(bytes(snappy.decompress(block)) for block in blocks)


def _snappy_length(block: bytes) -> int:
    """The decompressed size a raw snappy block states (its leading varint)."""
    value = shift = 0
    for at in range(min(len(block), 10)):
        byte = block[at]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    raise ValueError("no snappy length preamble")


def _lz4(payload: bytes | memoryview, limit: int) -> bytes:
    """LZ4 frames (Kafka's lz4 since message format 1), one after the other."""
    import lz4.frame

    pieces: list[bytes] = []
    size = 0
    data = bytes(payload)
    while data:
        reader = lz4.frame.LZ4FrameDecompressor()
        piece = reader.decompress(data, max_length=min(_CHUNK, limit + 1 - size))
        while True:
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                return b"".join(pieces)
            if reader.eof:
                break
            if reader.needs_input:  # every byte given, and the frame not done
                raise ValueError("truncated lz4 frame")
            piece = reader.decompress(b"", max_length=min(_CHUNK, limit + 1 - size))
        data = reader.unused_data
    return b"".join(pieces)


def _zstd(payload: bytes | memoryview, limit: int) -> bytes:
    """zstd frames, one after the other."""
    import zstandard

    stream = zstandard.ZstdDecompressor().stream_reader(
        io.BytesIO(payload), read_across_frames=True
    )
    pieces: list[bytes] = []
    size = 0
    with stream:
        while size <= limit:
            piece = stream.read(min(_CHUNK, limit + 1 - size))
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
    return b"".join(pieces)


_READERS: dict[int, Callable[[bytes | memoryview, int], bytes]] = {
    GZIP: _gzip,
    SNAPPY: _snappy,
    LZ4: _lz4,
    ZSTD: _zstd,
}


def codec_of(name: str) -> str | None:
    """The kafka-python ``compression_type`` of ``--compression NAME`` (None for none).

    >>> codec_of("none"), codec_of("zstd")
    (None, 'zstd')
    """
    if name not in PRODUCER_CODECS:
        raise ValueError(f"unknown codec {name!r}")
    return None if name == "none" else name
