"""kafka-python's fetcher made to hand over whole record batches instead of records.

kafka-python turns every record it fetches into a ``ConsumerRecord``, in Python; that
caps a consumer near 100k records/s. :class:`BlockPartitionRecords` replaces the
fetcher's per-partition record unpacker (``Fetcher.PartitionRecords``) so that each v2
record batch (message format of Kafka 0.11 and later) yields ONE :class:`RecordBlock`:
the batch's bytes (decompressed when it was compressed) and the spans of its records,
decoded by the compiled :func:`decode_records`. What the stock unpacker does around the
records is kept as it is: skipping control batches and batches of aborted transactions
(``read_committed``), skipping the records before the fetch position when a fetch
starts inside a batch, and the next fetch position. A batch the kernel finds malformed,
and old-format batches (magic 0 and 1), go through the stock per-record path.

**Nothing a batch holds stops the partition.** kafka-python raises at a batch it cannot
read (a CRC that does not match, a codec whose library is missing or that fails on the
bytes, a record that breaks the format), and then fetches the same batch again at the
next poll, for ever. Here each such batch (from the first record that cannot be read to
the batch's end) yields an :class:`UnreadableRecords` instead, and the partition goes on
after it. So does a batch whose records would decompress to more than
``max_batch_bytes`` (a decompression bomb: :mod:`streamlearn.sources.kafka_codecs`
decompresses with that bound), and each record whose value or key is larger than
``max_record_bytes``.

A block's ``offset`` is the offset of its last record, so the fetcher's bookkeeping
stays right; the consumer's ``max_records`` then counts blocks, not records.

:func:`install_block_records` puts it on one consumer, after checking that
kafka-python's internals are the ones this module was written against (kafka-python
3.0); otherwise it logs a warning and leaves the consumer as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
from kafka.consumer.fetcher import ConsumerRecord, Fetcher
from kafka.errors import CorruptRecordError, UnsupportedCodecError
from kafka.protocol.consumer import IsolationLevel
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from streamlearn._kernels.kafka_records import (
    CONTENT_TYPE,
    KEY_LENGTH,
    KEY_START,
    MIN_RECORD_BYTES,
    OFFSET,
    OTHER_HEADERS,
    RECORD_ROWS,
    RECORDS_OK,
    VALUE_LENGTH,
    VALUE_START,
    decode_records,
)
from streamlearn.parse.messages import SPAN_ROWS
from streamlearn.sources.base import CONTENT_TYPE as HEADER
from streamlearn.sources.base import MessageBatch
from streamlearn.sources.headers import HeaderColumn, read_varint
from streamlearn.sources.kafka_codecs import (
    BAD_CRC,
    CODEC_FAILED,
    CODEC_MISSING,
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_RECORD_BYTES,
    MALFORMED,
    NONE,
    RECORD_TOO_LARGE,
    UnreadableError,
    decompress,
)

log = logging.getLogger(__name__)

_STOCK = Fetcher.PartitionRecords
#: what this module uses of kafka-python's internals
_BATCH_SLOTS = ("_buffer", "_pos", "_decompressed")
_RECORDS_METHODS = (
    "_unpack_records",
    "_maybe_skip_record",
    "_consume_aborted_transactions_up_to",
    "_contains_abort_marker",
    "_is_batch_aborted",
    "_deserialize",
    "drain",
    "take",
)


class RecordBlock:
    """The records of one batch kept: ``data`` and ``columns`` (rows of
    :mod:`streamlearn._kernels.kafka_records`: spans first, then offsets); the batch's
    records start at ``records_start`` in ``data``, numbered from ``base_offset``."""

    __slots__ = ("base_offset", "columns", "data", "offset", "records_start")

    def __init__(
        self,
        data: npt.NDArray[np.uint8],
        columns: npt.NDArray[np.int64],
        records_start: int = 0,
        base_offset: int = 0,
    ) -> None:
        self.data = data
        self.columns = columns
        self.records_start = records_start
        self.base_offset = base_offset
        #: the offset of the last record (what the fetcher's skip logic reads)
        self.offset = int(columns[OFFSET, -1])

    def __len__(self) -> int:
        return int(self.columns.shape[1])

    @property
    def spans(self) -> npt.NDArray[np.int64]:
        """The value, key and content-type spans (``SPAN_ROWS`` x records)."""
        return self.columns[:SPAN_ROWS]

    @property
    def offsets(self) -> npt.NDArray[np.int64]:
        """The offset of each record."""
        offsets: npt.NDArray[np.int64] = self.columns[OFFSET]
        return offsets

    def message_batch(self, partition: int) -> MessageBatch:
        """The block's records as a batch of ``partition``'s messages (their headers
        other than ``content-type`` stay in the block, read only if asked for)."""
        sections = self.header_sections()
        headers = None
        if sections is not None:
            headers = HeaderColumn((self.data,), np.vstack([np.zeros_like(sections), sections]))
        partitions = np.full(len(self), partition, dtype=np.int32)
        return MessageBatch(self.data, self.spans, partitions, self.offsets, headers)

    def header_sections(self) -> npt.NDArray[np.int64] | None:
        """Where the header section of each record with a header other than
        ``content-type`` starts in ``data`` (-1 for the other records); None when no
        record has one, as in most streams. Vectorised: the section follows the value;
        only a record with a null value is looked for record by record."""
        columns = self.columns
        others = columns[OTHER_HEADERS] > 0
        if not others.any():
            return None
        null = columns[VALUE_LENGTH] < 0
        value_end = columns[VALUE_START] + columns[VALUE_LENGTH]
        sections: npt.NDArray[np.int64] = np.where(others & ~null, value_end, -1)
        for j in np.flatnonzero(others & null).tolist():
            sections[j] = self._section_after_null_value(j)
        return sections

    def _section_after_null_value(self, j: int) -> int:
        """The header section of record ``j``, whose value is null."""
        data = self.data
        key_length = int(self.columns[KEY_LENGTH, j])
        if key_length >= 0:
            p = int(self.columns[KEY_START, j]) + key_length
        else:  # neither key nor value tells where the record is: find it
            p = self.records_start
            while True:
                length, body = read_varint(data, p)
                _, q = read_varint(data, body)  # attributes
                _, q = read_varint(data, q)  # timestamp delta
                delta, q = read_varint(data, q)
                if self.base_offset + delta == int(self.columns[OFFSET, j]):
                    _, p = read_varint(data, q)  # the key's length (null)
                    break
                p = body + length
        _, p = read_varint(data, p)  # the value's length (null)
        return p


def decode_batch(batch: Any, min_offset: int) -> tuple[int, RecordBlock | None, int]:
    """``(code, block or None if no record was kept, offset after the batch)`` of a v2
    batch, its CRC already checked and its records decompressed; a code other than
    ``RECORDS_OK`` leaves the batch for the stock reader, unread."""
    batch._maybe_uncompress()  # a no-op once decompressed (see _decompress)
    buffer = batch._buffer
    start = batch._pos
    n = batch.records_count
    end = len(buffer)
    if n < 0 or n * MIN_RECORD_BYTES > end - start:
        return -1, None, 0
    data = np.frombuffer(buffer, dtype=np.uint8)
    data.flags.writeable = False
    columns = np.empty((RECORD_ROWS, n), dtype=np.int64)
    code, kept, _ = decode_records(
        data, start, end, n, batch.base_offset, min_offset, CONTENT_TYPE, columns
    )
    if code != RECORDS_OK:
        return int(code), None, 0
    block = RecordBlock(data, columns[:, :kept], start, batch.base_offset) if kept else None
    return RECORDS_OK, block, batch.next_offset


class UnreadableRecords:
    """Records of one batch that cannot be read, from ``first_offset`` to
    ``last_offset``: why (one of :data:`~streamlearn.sources.kafka_codecs.REASONS`), what
    was found, and their bytes as fetched (``raw``: the whole batch, or the record's
    value for a record too large, with its ``key``), for the dead-letter topic."""

    __slots__ = ("detail", "first_offset", "key", "last_offset", "offset", "raw", "reason")

    def __init__(
        self,
        first_offset: int,
        last_offset: int,
        reason: str,
        detail: str,
        raw: bytes | None,
        key: bytes | None = None,
    ) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.reason = reason
        self.detail = detail
        self.raw = raw
        self.key = key
        #: what the fetcher's skip logic reads
        self.offset = last_offset


class PassedRecords:
    """Offsets ``first_offset`` to ``last_offset`` hold nothing to return (a control batch,
    or a batch of an aborted transaction): the partition's position moves past them."""

    __slots__ = ("first_offset", "last_offset", "offset")

    def __init__(self, first_offset: int, last_offset: int) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.offset = last_offset  # what the fetcher's skip logic reads


class BlockPartitionRecords(_STOCK):  # type: ignore[misc,valid-type]
    """``Fetcher.PartitionRecords`` yielding a :class:`RecordBlock` per v2 batch, and an
    :class:`UnreadableRecords` for each batch or record it cannot read (never an
    exception: the rest of the partition goes on)."""

    #: a batch whose records decompress to more bytes than this is unreadable
    max_batch_bytes = DEFAULT_MAX_BATCH_BYTES
    #: a record whose value or key is larger than this is unreadable
    max_record_bytes = DEFAULT_MAX_RECORD_BYTES
    #: where the next fetch of the partition starts (kafka-python's, kept up to date)
    next_fetch_offset: int

    def __init__(self, fetch_offset: int, *args: Any, **kwargs: Any) -> None:
        # records below the fetch offset are dropped until the first one that is not
        self._dropping = True
        super().__init__(fetch_offset, *args, **kwargs)

    def _maybe_skip_record(self, record: Any) -> bool:
        if isinstance(record, RecordBlock | UnreadableRecords | PassedRecords):
            return False  # trimmed when decoded
        skip = bool(super()._maybe_skip_record(record))
        if not skip:
            self._dropping = False
        return skip

    def _unpack_records(
        self, tp: Any, records: Any, key_deserializer: Any, value_deserializer: Any
    ) -> Iterator[Any]:
        # kafka-python keeps taking from a partition's records until they are drained:
        # an iterator that ended with an exception, undrained, had a later poll spin on
        # it for ever (at full CPU, deaf to signals): drained whatever happens
        try:
            last_batch = None
            while True:
                try:
                    batch = records.next_batch()
                except CorruptRecordError as error:  # shorter than a batch header
                    first = int(self.next_fetch_offset)
                    yield self._unreadable(first, first, MALFORMED, str(error), None)
                    break
                if batch is None:
                    break
                last_batch = batch
                if batch.magic != 2:
                    yield from self._legacy_batch(tp, batch, key_deserializer, value_deserializer)
                else:
                    yield from self._v2_batch(tp, batch, key_deserializer, value_deserializer)
            if last_batch is not None and last_batch.magic == 2:
                self.next_fetch_offset = max(int(self.next_fetch_offset), last_batch.next_offset)
        except StopIteration:
            log.exception("StopIteration raised unpacking messageset")
            raise RuntimeError("StopIteration raised unpacking messageset") from None
        finally:
            self.drain()

    def _v2_batch(
        self, tp: Any, batch: Any, key_deserializer: Any, value_deserializer: Any
    ) -> Iterator[Any]:
        """What one v2 batch gives: a block, records one by one, or unreadable records."""
        first = max(batch.base_offset, self.next_fetch_offset)
        last = batch.last_offset
        raw = batch._buffer  # the batch as fetched (decompression replaces it)
        if self.check_crcs and not batch.validate_crc():
            yield self._unreadable(first, last, BAD_CRC, "its CRC does not match", raw)
            return
        self.leader_epoch = batch.leader_epoch
        if self.isolation_level == IsolationLevel.READ_COMMITTED and batch.has_producer_id():
            self._consume_aborted_transactions_up_to(batch.last_offset)
            producer_id = batch.producer_id
            if self._contains_abort_marker(batch):
                self.aborted_producer_ids.discard(producer_id)
            elif self._is_batch_aborted(batch):
                log.debug(
                    "Skipping aborted record batch from partition %s with producer_id "
                    "%s and offsets %s to %s",
                    self.topic_partition, producer_id, batch.base_offset, batch.last_offset,
                )  # fmt: skip
                self.next_fetch_offset = batch.next_offset
                yield PassedRecords(first, last)
                return
        if batch.is_control_batch:
            self.next_fetch_offset = batch.next_offset
            yield PassedRecords(first, last)
            return
        try:
            _decompress(batch, self.max_batch_bytes)
        except UnreadableError as error:
            yield self._unreadable(first, last, error.reason, error.detail, raw)
            return
        if not self._blocks():
            yield from self._records_of(
                tp, batch, key_deserializer, value_deserializer, first, last, raw
            )
            return
        min_offset = self.fetch_offset if self._dropping else -(1 << 63)
        code, block, _ = decode_batch(batch, min_offset)
        if code != RECORDS_OK:
            yield from self._records_of(
                tp, batch, key_deserializer, value_deserializer, first, last, raw
            )
        elif block is not None:
            self._dropping = False
            self.records_read += len(block)
            self.bytes_read += batch.size_in_bytes
            self.next_fetch_offset = block.offset + 1
            yield from self._within_limits(block)
        else:
            self.next_fetch_offset = max(self.next_fetch_offset, batch.next_offset)

    def _blocks(self) -> bool:
        """Whether a readable v2 batch is handed over as one block (else record by
        record)."""
        return True

    def _within_limits(self, block: RecordBlock) -> Iterator[Any]:
        """``block``, with each record whose value or key is over ``max_record_bytes``
        taken out as unreadable."""
        limit = self.max_record_bytes
        columns = block.columns
        large = (columns[VALUE_LENGTH] > limit) | (columns[KEY_LENGTH] > limit)
        if not large.any():
            yield block
            return
        start = 0
        for j in np.flatnonzero(large).tolist():
            if j > start:
                yield RecordBlock(block.data, columns[:, start:j], block.records_start,
                                  block.base_offset)  # fmt: skip
            offset = int(columns[OFFSET, j])
            value_length, key_length = int(columns[VALUE_LENGTH, j]), int(columns[KEY_LENGTH, j])
            value = block.data[columns[VALUE_START, j] :][: max(value_length, 0)].tobytes()
            key = None
            if key_length >= 0:
                key = block.data[columns[KEY_START, j] :][:key_length].tobytes()
            detail = f"a record of {max(value_length, key_length)} bytes, over {limit}"
            yield self._unreadable(offset, offset, RECORD_TOO_LARGE, detail, value, key)
            start = j + 1
        if start < len(block):
            yield RecordBlock(block.data, columns[:, start:], block.records_start,
                              block.base_offset)  # fmt: skip

    def _records_of(
        self,
        tp: Any,
        batch: Any,
        key_deserializer: Any,
        value_deserializer: Any,
        first: int,
        last: int,
        raw: Any,
    ) -> Iterator[Any]:
        """The records of a batch the kernel refused, one by one as the stock reader
        yields them, up to the first that cannot be read: from there to the end of the
        batch, the records are unreadable."""
        try:
            for record in self._stock_records(tp, batch, key_deserializer, value_deserializer):
                first = record.offset + 1
                yield record
        except Exception as error:
            if first <= last:
                yield self._unreadable(first, last, MALFORMED, str(error), raw)

    def _legacy_batch(
        self, tp: Any, batch: Any, key_deserializer: Any, value_deserializer: Any
    ) -> Iterator[Any]:
        """The records of an old-format batch (magic 0 or 1), one by one, up to the first
        that cannot be read (kafka-python decompresses these itself, unbounded)."""
        first = self.next_fetch_offset
        try:
            for record in self._stock_records(tp, batch, key_deserializer, value_deserializer):
                first = record.offset + 1
                yield record
        except Exception as error:
            last = max(first, int(batch.base_offset))
            reason = _legacy_reason(error)
            yield self._unreadable(first, last, reason, str(error) or type(error).__name__,
                                   batch._buffer)  # fmt: skip

    def _unreadable(
        self,
        first: int,
        last: int,
        reason: str,
        detail: str,
        raw: Any,
        key: bytes | None = None,
    ) -> UnreadableRecords:
        """Records ``first`` to ``last`` skipped: the partition goes on after them."""
        self._dropping = False
        self.next_fetch_offset = max(self.next_fetch_offset, last + 1)
        return UnreadableRecords(first, last, reason, detail, None if raw is None else bytes(raw),
                                 key)  # fmt: skip

    def _stock_records(
        self, tp: Any, batch: Any, key_deserializer: Any, value_deserializer: Any
    ) -> Iterator[Any]:
        """The records of one batch as the stock unpacker yields them (its CRC checked)."""
        for record in batch:
            if self.check_crcs and not record.validate_crc():
                raise CorruptRecordError(
                    f"Record for partition {self.topic_partition} at offset {record.offset} "
                    "failed crc check"
                )
            key_size = len(record.key) if record.key is not None else -1
            value_size = len(record.value) if record.value is not None else -1
            key = self._deserialize(key_deserializer, tp.topic, record.headers, record.key)
            value = self._deserialize(value_deserializer, tp.topic, record.headers, record.value)
            headers = record.headers
            header_size = (
                sum(len(k.encode("utf-8")) + (len(v) if v is not None else 0) for k, v in headers)
                if headers
                else -1
            )
            self.records_read += 1
            self.bytes_read += record.size_in_bytes
            self.next_fetch_offset = record.offset + 1
            yield ConsumerRecord(
                tp.topic, tp.partition, self.leader_epoch, record.offset, record.timestamp,
                record.timestamp_type, key, value, headers, record.checksum,
                key_size, value_size, header_size,
            )  # fmt: skip


class RecordsWithin(BlockPartitionRecords):
    """kafka-python's records one by one, as its stock unpacker yields them, read with
    the same bounds and the same care: a batch that cannot be read is reported to
    ``report`` and skipped, never raised (the readers of compacted topics take records
    one by one; a poisoned batch there must not stop them, nor make them spin)."""

    #: told of each batch or record skipped
    report: Any = None

    def _unpack_records(
        self, tp: Any, records: Any, key_deserializer: Any, value_deserializer: Any
    ) -> Iterator[Any]:
        for item in super()._unpack_records(tp, records, key_deserializer, value_deserializer):
            if isinstance(item, UnreadableRecords):
                if self.report is not None:
                    self.report(self.topic_partition, item)
            elif isinstance(item, RecordBlock):  # never: blocks are made into records
                raise AssertionError("a block where records were expected")
            elif not isinstance(item, PassedRecords):
                yield item

    def _blocks(self) -> bool:
        return False


def install_records_within(
    consumer: Any, *, max_batch_bytes: int, max_record_bytes: int, report: Any
) -> bool:
    """Make ``consumer`` read records one by one within these bounds, ``report(tp,
    UnreadableRecords)`` told of what it skips (:class:`RecordsWithin`); whether it
    could (kafka-python's internals as expected)."""
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is None or getattr(fetcher, "PartitionRecords", None) is not _STOCK:
        return False
    if not internals_known():
        return False
    fetcher.PartitionRecords = type(
        "BoundedRecords",
        (RecordsWithin,),
        {"max_batch_bytes": max_batch_bytes, "max_record_bytes": max_record_bytes,
         "report": staticmethod(report)},
    )  # fmt: skip
    return True


def _decompress(batch: Any, limit: int) -> None:
    """Decompress a v2 batch's records in place, to ``limit`` bytes at most
    (:class:`UnreadableError` otherwise); kafka-python then reads them as it would have."""
    codec = batch.compression_type
    if codec != NONE and not batch._decompressed:
        batch._buffer = decompress(codec, memoryview(batch._buffer)[batch._pos :], limit)
        batch._pos = 0
    batch._decompressed = True


def _legacy_reason(error: Exception) -> str:
    """Why an old-format batch could not be read, from what kafka-python raised."""
    if isinstance(error, UnsupportedCodecError):
        return CODEC_MISSING
    if isinstance(error, CorruptRecordError):
        return BAD_CRC if "crc" in str(error).lower() else MALFORMED
    return CODEC_FAILED


def warm_up() -> None:
    """Decode a batch of one record, so that :func:`decode_records` is compiled (or
    loaded from numba's cache) before a consumer joins its group.

    Compiling it takes seconds on the first run after installing and holds the GIL
    meanwhile, which would starve the consumer's heartbeats if it happened at the
    first fetch. Does nothing when kafka-python's internals are not the expected ones
    (blocks are not used then).
    """
    if not internals_known():
        return
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 16,
    )  # fmt: skip
    builder.append(0, timestamp=0, key=b"", value=b"+1 1:1\n", headers=[(HEADER, b"")])
    decode_batch(DefaultRecordBatch(bytes(builder.build())), 0)


def internals_known() -> bool:
    """Whether kafka-python's fetcher and record batch have what this module uses."""
    slots = getattr(DefaultRecordBatch, "__slots__", ())
    return (
        all(name in slots for name in _BATCH_SLOTS)
        and callable(getattr(DefaultRecordBatch, "_maybe_uncompress", None))
        and all(callable(getattr(_STOCK, name, None)) for name in _RECORDS_METHODS)
    )


def install_block_records(
    consumer: Any,
    *,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> bool:
    """Make ``consumer`` fetch :class:`RecordBlock` objects (and
    :class:`UnreadableRecords` for what cannot be read, within these limits); whether it
    could.

    Only for a consumer without key or value deserializers (blocks hold raw bytes).
    """
    fetcher = getattr(consumer, "_fetcher", None)
    config = getattr(fetcher, "config", None)
    if (
        fetcher is None
        or not isinstance(config, dict)
        or getattr(fetcher, "PartitionRecords", None) is not _STOCK
        or not internals_known()
    ):
        import kafka

        log.warning(
            "kafka-python %s: its fetcher is not the one expected; reading records one by "
            "one (slower)",
            getattr(kafka, "__version__", "?"),
        )
        return False
    if config.get("key_deserializer") is not None or config.get("value_deserializer"):
        return False
    fetcher.PartitionRecords = type(
        "BoundedPartitionRecords",
        (BlockPartitionRecords,),
        {"max_batch_bytes": max_batch_bytes, "max_record_bytes": max_record_bytes},
    )
    return True
