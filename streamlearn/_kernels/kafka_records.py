"""The records of one Kafka record batch (message format v2) decoded in one pass.

A v2 batch is a 61-byte header followed by its records (after decompression, when the
batch is compressed). Each record is::

    length: varint, attributes: varint, timestamp delta: varint, offset delta: varint,
    key length: varint, key, value length: varint, value,
    header count: varint, [key length: varint, key (UTF-8), value length: varint, value]

where every varint is zigzag-encoded (a length of -1 is null). :func:`decode_records`
reads them into spans of the buffer instead of Python objects: per record its offset,
where its key and value are, where the value of its ``content-type`` header is (the
last one when there are several, as a dict of the headers keeps), and how many other
headers it has. Malformed input returns an error code, and no read goes past ``end``.

The checks are those of kafka-python's reader (``DefaultRecordBatch._read_msg``): a
varint longer than 64 bits, a negative header count or header key length, a header
key that is not UTF-8, a record whose fields do not fill its length exactly, and bytes
left after the last record are errors; so is any field that runs past the end.
"""

from __future__ import annotations

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.svmlight import valid_utf8

#: rows of the output array, one column per record kept
VALUE_START, VALUE_LENGTH, KEY_START, KEY_LENGTH, TYPE_START, TYPE_LENGTH = 0, 1, 2, 3, 4, 5
OFFSET, OTHER_HEADERS = 6, 7
RECORD_ROWS = 8

#: outcome codes of :func:`decode_records`
RECORDS_OK = 0
RECORDS_TRUNCATED = 1  # a field runs past the end of the buffer
RECORDS_BAD_VARINT = 2  # a varint of more than 64 bits
RECORDS_BAD_LENGTH = 3  # a negative record length, or fields that do not fill it
RECORDS_BAD_HEADER = 4  # a negative header count or key length, or a key not UTF-8
RECORDS_TRAILING_BYTES = 5  # bytes after the last record
RECORDS_TOO_MANY = 6  # more records than the output has room for

#: the fewest bytes a record takes: seven one-byte varints
MIN_RECORD_BYTES = 7

#: ``content-type`` in ASCII
CONTENT_TYPE = np.frombuffer(b"content-type", dtype=np.uint8).copy()


@kernel(inline=True)
def _byte(data: np.ndarray, p: int) -> int:
    """``data[p]`` for ``p >= 0`` (unsigned index: no negative-index fix-up)."""
    return data[np.uint64(p)]


@kernel()
def read_varint(data: np.ndarray, p: int, end: int) -> tuple[int, int]:
    """``(value, position after it)`` of the zigzag varint at ``p``; the position is -1
    when the varint runs past ``end``, -2 when it holds more than 64 bits (kafka-python
    reads those as Python ints beyond int64, nonsense for any field of a record).
    """
    result = np.uint64(0)
    shift = np.uint64(0)
    while True:
        if p >= end:
            return 0, -1
        b = np.uint64(_byte(data, p))
        p += 1
        if shift == np.uint64(63) and (b & np.uint64(0x7F)) > np.uint64(1):
            return 0, -2  # bits beyond the 64th
        result |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            value = np.int64(result >> np.uint64(1)) ^ -np.int64(result & np.uint64(1))
            return int(value), p
        shift += np.uint64(7)
        if shift >= np.uint64(64):
            return 0, -2


@kernel()
def _is_content_type(data: np.ndarray, start: int, length: int, name: np.ndarray) -> bool:
    if length != name.shape[0]:
        return False
    for k in range(length):  # noqa: SIM110 - a loop numba compiles, not a generator
        if _byte(data, start + k) != name[k]:
            return False
    return True


@kernel(releases_gil=True)
def decode_records(
    data: np.ndarray,
    start: int,
    end: int,
    n_records: int,
    base_offset: int,
    min_offset: int,
    name: np.ndarray,
    out: np.ndarray,
) -> tuple[int, int, int]:
    """Decode the ``n_records`` records in ``data[start:end]`` (uint8) into ``out``.

    ``out`` is int64 of shape ``(RECORD_ROWS, m)``; column ``j`` receives the ``j``-th
    record kept. Records are skipped while their offset (``base_offset`` plus the
    record's offset delta) is below ``min_offset``, up to the first one that is not
    (as a consumer that fetched from the middle of a batch drops the records before
    its position). Spans are positions in ``data``; a null key or value has length -1
    and start 0, and so does an absent (or null) ``content-type`` header. ``name`` is
    the header key to look for (:data:`CONTENT_TYPE`).

    Returns ``(code, records kept, records read)``: on an error, the records read are
    the ones before the bad one, and those kept are in ``out``.
    """
    p = start
    kept = 0
    capacity = out.shape[1]
    for i in range(n_records):
        length, p = read_varint(data, p, end)
        if p < 0:
            return (RECORDS_TRUNCATED if p == -1 else RECORDS_BAD_VARINT), kept, i
        body = p
        if length < 0:
            return RECORDS_BAD_LENGTH, kept, i
        if length > end - body:
            return RECORDS_TRUNCATED, kept, i
        record_end = body + length
        _, p = read_varint(data, p, record_end)  # attributes: unused
        if p < 0:
            return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
        _, p = read_varint(data, p, record_end)  # timestamp delta
        if p < 0:
            return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
        offset_delta, p = read_varint(data, p, record_end)
        if p < 0:
            return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
        key_length, p = read_varint(data, p, record_end)
        if p < 0:
            return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
        key_start = 0
        if key_length >= 0:
            if key_length > record_end - p:
                return RECORDS_BAD_LENGTH, kept, i
            key_start = p
            p += key_length
        else:
            key_length = -1
        value_length, p = read_varint(data, p, record_end)
        if p < 0:
            return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
        value_start = 0
        if value_length >= 0:
            if value_length > record_end - p:
                return RECORDS_BAD_LENGTH, kept, i
            value_start = p
            p += value_length
        else:
            value_length = -1
        n_headers, p = read_varint(data, p, record_end)
        if p < 0:
            return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
        if n_headers < 0:
            return RECORDS_BAD_HEADER, kept, i
        type_start = 0
        type_length = -1
        others = 0
        for _ in range(n_headers):
            h_key_length, p = read_varint(data, p, record_end)
            if p < 0:
                return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
            if h_key_length < 0:
                return RECORDS_BAD_HEADER, kept, i
            if h_key_length > record_end - p:
                return RECORDS_BAD_LENGTH, kept, i
            h_key = p
            p += h_key_length
            if not valid_utf8(data, h_key, p):
                return RECORDS_BAD_HEADER, kept, i
            h_value_length, p = read_varint(data, p, record_end)
            if p < 0:
                return (RECORDS_BAD_LENGTH if p == -1 else RECORDS_BAD_VARINT), kept, i
            h_value = 0
            if h_value_length >= 0:
                if h_value_length > record_end - p:
                    return RECORDS_BAD_LENGTH, kept, i
                h_value = p
                p += h_value_length
            else:
                h_value_length = -1
            if _is_content_type(data, h_key, h_key_length, name):
                type_start = h_value
                type_length = h_value_length
            else:
                others += 1
        if p != record_end:
            return RECORDS_BAD_LENGTH, kept, i
        offset = base_offset + offset_delta
        if kept == 0 and offset < min_offset:
            continue
        if kept >= capacity:
            return RECORDS_TOO_MANY, kept, i
        out[VALUE_START, kept] = value_start
        out[VALUE_LENGTH, kept] = value_length
        out[KEY_START, kept] = key_start
        out[KEY_LENGTH, kept] = key_length
        out[TYPE_START, kept] = type_start
        out[TYPE_LENGTH, kept] = type_length
        out[OFFSET, kept] = offset
        out[OTHER_HEADERS, kept] = others
        kept += 1
    if p != end:
        return RECORDS_TRAILING_BYTES, kept, n_records
    return RECORDS_OK, kept, n_records


@kernel(allocates=True, releases_gil=True)  # slice assignment (memcpy) needs the runtime
def join_values(
    data: np.ndarray,
    value_start: np.ndarray,
    value_length: np.ndarray,
    first: int,
    last: int,
    out: np.ndarray,
    ends: np.ndarray,
) -> int:
    """Copy values ``first .. last - 1`` into ``out``, each followed by a newline unless
    it is empty or already ends with one; ``ends[i - first]`` gets the end of value
    ``i`` in ``out``. Returns the bytes written.

    ``out`` needs room for every value plus one byte each; a negative length (a null
    value) counts as empty.
    """
    q = 0
    for i in range(first, last):
        n = value_length[i]
        if n > 0:
            s = value_start[i]
            out[q : q + n] = data[s : s + n]
            q += n
            if _byte(data, s + n - 1) != 10:
                out[q] = 10
                q += 1
        ends[i - first] = q
    return q
