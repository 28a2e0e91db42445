"""kafka-python's fetcher made to hand over whole record batches instead of records.

kafka-python turns every record it fetches into a ``ConsumerRecord``, in Python; that
caps a consumer near 100k records/s. :class:`BlockPartitionRecords` replaces the
fetcher's per-partition record unpacker (``Fetcher.PartitionRecords``) so that each v2
record batch (message format of Kafka 0.11 and later) yields ONE :class:`RecordBlock`:
the batch's bytes (decompressed when it was compressed) and the spans of its records,
decoded by the compiled :func:`decode_records`. What the stock unpacker does around the
records is kept as it is: the CRC check of the batch (``check_crcs``), skipping control
batches and batches of aborted transactions (``read_committed``), skipping the records
before the fetch position when a fetch starts inside a batch, and the next fetch
position. A batch the kernel finds malformed, and old-format batches (magic 0 and 1),
go through the stock per-record path, which raises or yields exactly as it would.

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
from kafka.errors import CorruptRecordError
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

log = logging.getLogger(__name__)

_STOCK = Fetcher.PartitionRecords
#: what this module uses of kafka-python's internals
_BATCH_SLOTS = ("_buffer", "_pos")
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
    batch, its CRC already checked; a code other than ``RECORDS_OK`` leaves the batch
    for the stock reader, unread (it has been decompressed)."""
    batch._maybe_uncompress()
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


class BlockPartitionRecords(_STOCK):  # type: ignore[misc,valid-type]
    """``Fetcher.PartitionRecords`` yielding a :class:`RecordBlock` per v2 batch."""

    def __init__(self, fetch_offset: int, *args: Any, **kwargs: Any) -> None:
        # records below the fetch offset are dropped until the first one that is not
        self._dropping = True
        super().__init__(fetch_offset, *args, **kwargs)

    def _maybe_skip_record(self, record: Any) -> bool:
        if isinstance(record, RecordBlock):
            return False  # trimmed when decoded
        skip = bool(super()._maybe_skip_record(record))
        if not skip:
            self._dropping = False
        return skip

    def _unpack_records(
        self, tp: Any, records: Any, key_deserializer: Any, value_deserializer: Any
    ) -> Iterator[Any]:
        try:
            batch = records.next_batch()
            last_batch = None
            while batch is not None:
                last_batch = batch
                if self.check_crcs and not batch.validate_crc():
                    raise CorruptRecordError(
                        f"Record batch for partition {self.topic_partition} at offset "
                        f"{batch.base_offset} failed crc check"
                    )
                if batch.magic != 2:
                    yield from self._stock_records(tp, batch, key_deserializer, value_deserializer)
                    batch = records.next_batch()
                    continue
                self.leader_epoch = batch.leader_epoch
                if (
                    self.isolation_level == IsolationLevel.READ_COMMITTED
                    and batch.has_producer_id()
                ):
                    self._consume_aborted_transactions_up_to(batch.last_offset)
                    producer_id = batch.producer_id
                    if self._contains_abort_marker(batch):
                        self.aborted_producer_ids.discard(producer_id)
                    elif self._is_batch_aborted(batch):
                        log.debug(
                            "Skipping aborted record batch from partition %s with producer_id "
                            "%s and offsets %s to %s",
                            self.topic_partition, producer_id, batch.base_offset,
                            batch.last_offset,
                        )  # fmt: skip
                        self.next_fetch_offset = batch.next_offset
                        batch = records.next_batch()
                        continue
                if batch.is_control_batch:
                    self.next_fetch_offset = batch.next_offset
                    batch = records.next_batch()
                    continue
                min_offset = self.fetch_offset if self._dropping else -(1 << 63)
                code, block, _ = decode_batch(batch, min_offset)
                if code != RECORDS_OK:
                    yield from self._stock_records(tp, batch, key_deserializer, value_deserializer)
                elif block is not None:
                    self._dropping = False
                    self.records_read += len(block)
                    self.bytes_read += batch.size_in_bytes
                    self.next_fetch_offset = block.offset + 1
                    yield block
                batch = records.next_batch()
            if last_batch is not None and last_batch.magic == 2:
                self.next_fetch_offset = last_batch.next_offset
            self.drain()
        except StopIteration:
            log.exception("StopIteration raised unpacking messageset")
            raise RuntimeError("StopIteration raised unpacking messageset") from None

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


def install_block_records(consumer: Any) -> bool:
    """Make ``consumer`` fetch :class:`RecordBlock` objects; whether it could.

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
    fetcher.PartitionRecords = BlockPartitionRecords
    return True
