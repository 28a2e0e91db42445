"""Kafka record headers kept beside a :class:`~streamlearn.sources.base.MessageBatch`,
read only when they are needed (a dead letter forwarded whole).

A batch keeps each message's ``content-type`` as a span; the other headers stay where
they are, in the records' bytes (the header section of a v2 record: a count, then for
each header its key and value, lengths as zigzag varints, a null value of length -1).
:class:`HeaderColumn` says, per message, which buffer holds that section and where it
starts, so a batch carries no Python object per message for them.

>>> section = encode_headers([("content-type", b"text/svmlight"), ("trace", None)])
>>> read_headers(np.frombuffer(section, dtype=np.uint8), 0)
[('content-type', b'text/svmlight'), ('trace', None)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: a header as Kafka has it: a UTF-8 key and a value, maybe null
Header = tuple[str, bytes | None]


@dataclass(frozen=True, eq=False)
class HeaderColumn:
    """Where each message's header section is: ``where[0]`` the index of its buffer in
    ``buffers``, ``where[1]`` its start there (-1: the message has no header but maybe
    ``content-type``, which its batch's spans hold)."""

    buffers: tuple[npt.NDArray[np.uint8], ...]
    where: npt.NDArray[np.int64]

    def headers(self, i: int) -> list[Header] | None:
        """The headers of message ``i``, or None when only the spans know them."""
        start = int(self.where[1, i])
        if start < 0:
            return None
        return read_headers(self.buffers[int(self.where[0, i])], start)

    def slice(self, first: int, last: int) -> HeaderColumn:
        """Messages ``first .. last - 1``."""
        return HeaderColumn(self.buffers, self.where[:, first:last])

    @staticmethod
    def concatenate(parts: Sequence[HeaderColumn | None], lengths: Sequence[int]) -> HeaderColumn:
        """The columns of consecutive batches (None: a batch of ``lengths[k]`` messages
        with no header section)."""
        buffers: list[npt.NDArray[np.uint8]] = []
        pieces = []
        for part, n in zip(parts, lengths, strict=True):
            if part is None:
                pieces.append(np.full((2, n), -1, dtype=np.int64))
                continue
            where = part.where.copy()
            where[0] += len(buffers)
            pieces.append(where)
            buffers.extend(part.buffers)
        return HeaderColumn(tuple(buffers), np.concatenate(pieces, axis=1))


def read_varint(data: npt.NDArray[np.uint8] | bytes, p: int) -> tuple[int, int]:
    """The zigzag varint at ``p`` and the position after it."""
    shift = result = 0
    while True:
        byte = int(data[p])
        p += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), p
        shift += 7


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def read_headers(data: npt.NDArray[np.uint8], start: int) -> list[Header]:
    """The headers of the header section at ``start`` (already checked by the record
    decoder, or written by :func:`encode_headers`)."""
    count, p = read_varint(data, start)
    headers: list[Header] = []
    for _ in range(count):
        length, p = read_varint(data, p)
        key = data[p : p + length].tobytes().decode("utf-8")
        p += length
        length, p = read_varint(data, p)
        value = None if length < 0 else data[p : p + length].tobytes()
        p += max(length, 0)
        headers.append((key, value))
    return headers


def encode_headers(headers: Sequence[Header]) -> bytes:
    """A header section holding ``headers``."""
    out = [_varint(len(headers))]
    for key, value in headers:
        name = key.encode("utf-8")
        out += [_varint(len(name)), name]
        out += [_varint(-1)] if value is None else [_varint(len(value)), value]
    return b"".join(out)
