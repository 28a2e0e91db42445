"""What every message source gives the daemon: messages with positions, and commits.

A poll returns a :class:`MessageBatch`: the messages as columns (one byte array, spans
into it), so that the daemon decodes a whole poll without a Python object per message.

A position is, per partition, the offset of the next message to read. The daemon stores
positions in its checkpoints and hands them back to :meth:`Source.seek` on restart, and
commits them with :meth:`Source.commit` only once the checkpoint holding them is on disk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from streamlearn.parse.messages import (
    KEY_LENGTH,
    KEY_START,
    SPAN_ROWS,
    TYPE_LENGTH,
    TYPE_START,
    VALUE_LENGTH,
    VALUE_START,
    pack_messages,
)
from streamlearn.sources.headers import Header, HeaderColumn, encode_headers

Positions = dict[int, int]
CONTENT_TYPE = "content-type"


@dataclass(frozen=True)
class Message:
    """One message: its bytes, key and headers, and where it came from."""

    value: bytes
    key: bytes | None = None
    headers: dict[str, bytes] = field(default_factory=dict)
    partition: int = 0
    offset: int = 0


def _read_only(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """``data`` as a read-only view (kernels then see one array type)."""
    if data.flags.writeable:
        data = data.view()
        data.flags.writeable = False
    return data


@dataclass(frozen=True, eq=False)
class MessageBatch:
    """Messages as columns: one byte array and, per message, spans into it.

    ``spans`` (int64, ``SPAN_ROWS`` x n, rows named in :mod:`streamlearn.parse.messages`)
    gives where each message's value, key and ``content-type`` header value start in
    ``data`` and their lengths (-1, start 0, for a null key or value or no header);
    ``partitions`` and ``offsets`` say where each message came from. The ``content-type``
    header is a span; when some message has other headers, ``headers`` says where they
    are (read only for :meth:`all_headers`, to forward a message whole). Single messages
    (:meth:`message`) are built on demand, for the rare paths.

    >>> batch = MessageBatch.from_messages([Message(b"1 1:1", b"k", {}, 0, 7),
    ...                                     Message(b"2", None, {"content-type": b"x"}, 1, 3)])
    >>> len(batch), batch.value(1), batch.key(0), batch.end_positions()
    (2, b'2', b'k', {0: 8, 1: 4})
    >>> batch.message(1)
    Message(value=b'2', key=None, headers={'content-type': b'x'}, partition=1, offset=3)
    >>> [m.offset for m in MessageBatch.concatenate([batch.slice(1, 2), batch.slice(0, 1)])]
    [3, 7]
    >>> whole = MessageBatch.from_records([None], [b"k"], [[("trace", b"1")]], [0], [9])
    >>> whole.raw_value(0), whole.value(0), whole.all_headers(0)
    (None, b'', [('trace', b'1')])
    """

    data: npt.NDArray[np.uint8]
    spans: npt.NDArray[np.int64]
    partitions: npt.NDArray[np.int32]
    offsets: npt.NDArray[np.int64]
    headers: HeaderColumn | None = None

    def __len__(self) -> int:
        return int(self.offsets.shape[0])

    def __iter__(self) -> Iterator[Message]:
        return (self.message(i) for i in range(len(self)))

    def __getitem__(self, i: int) -> Message:
        if not -len(self) <= i < len(self):
            raise IndexError(f"message {i} of {len(self)}")
        return self.message(i % len(self))

    @staticmethod
    def empty() -> MessageBatch:
        """No message."""
        return MessageBatch(
            _read_only(np.empty(0, dtype=np.uint8)),
            np.zeros((SPAN_ROWS, 0), dtype=np.int64),
            np.empty(0, dtype=np.int32),
            np.empty(0, dtype=np.int64),
        )

    @staticmethod
    def from_messages(messages: Sequence[Message]) -> MessageBatch:
        """The columns of these messages."""
        return MessageBatch.from_records(
            [m.value for m in messages],
            [m.key for m in messages],
            [list(m.headers.items()) for m in messages],
            [m.partition for m in messages],
            [m.offset for m in messages],
        )

    @staticmethod
    def from_records(
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None],
        headers: Sequence[Sequence[Header]],
        partitions: Sequence[int],
        offsets: Sequence[int],
    ) -> MessageBatch:
        """The columns of messages given field by field (null values kept as null)."""
        content_types = [
            next((v for k, v in reversed(pairs) if k == CONTENT_TYPE), None) for pairs in headers
        ]  # the last one, as a dict of them keeps
        data, spans = pack_messages(values, keys, content_types)
        return MessageBatch(
            _read_only(data),
            spans,
            np.array(partitions, dtype=np.int32),
            np.array(offsets, dtype=np.int64),
            _header_column(headers),
        )

    def _bytes(self, start_row: int, length_row: int, i: int) -> bytes | None:
        length = int(self.spans[length_row, i])
        if length < 0:
            return None
        start = int(self.spans[start_row, i])
        return self.data[start : start + length].tobytes()

    def value(self, i: int) -> bytes:
        """The value of message ``i`` (empty for a null value)."""
        return self._bytes(VALUE_START, VALUE_LENGTH, i) or b""

    def raw_value(self, i: int) -> bytes | None:
        """The value of message ``i`` (None for a null value)."""
        return self._bytes(VALUE_START, VALUE_LENGTH, i)

    def key(self, i: int) -> bytes | None:
        """The key of message ``i``."""
        return self._bytes(KEY_START, KEY_LENGTH, i)

    def all_headers(self, i: int) -> list[Header]:
        """Every header of message ``i``, in order."""
        if self.headers is not None:
            found = self.headers.headers(i)
            if found is not None:
                return found
        content_type = self._bytes(TYPE_START, TYPE_LENGTH, i)
        return [] if content_type is None else [(CONTENT_TYPE, content_type)]

    def message(self, i: int) -> Message:
        """Message ``i`` as an object."""
        content_type = self._bytes(TYPE_START, TYPE_LENGTH, i)
        return Message(
            self.value(i),
            self.key(i),
            {} if content_type is None else {CONTENT_TYPE: content_type},
            int(self.partitions[i]),
            int(self.offsets[i]),
        )

    def value_bytes(self) -> int:
        """The bytes of all values."""
        return int(np.maximum(self.spans[VALUE_LENGTH], 0).sum())

    def slice(self, first: int, last: int) -> MessageBatch:
        """Messages ``first .. last - 1`` (sharing this batch's arrays)."""
        return MessageBatch(
            self.data,
            self.spans[:, first:last],
            self.partitions[first:last],
            self.offsets[first:last],
            None if self.headers is None else self.headers.slice(first, last),
        )

    def end_positions(self) -> Positions:
        """Per partition of the batch, the offset after its last message here."""
        n = len(self)
        if n == 0:
            return {}
        partitions = self.partitions
        if partitions[0] == partitions[-1] and bool(np.all(partitions == partitions[0])):
            return {int(partitions[0]): int(self.offsets[-1]) + 1}
        positions: Positions = {}
        for partition, offset in zip(partitions.tolist(), self.offsets.tolist(), strict=True):
            positions[partition] = offset + 1
        return positions

    @staticmethod
    def concatenate(parts: Sequence[MessageBatch]) -> MessageBatch:
        """The messages of several batches, in order, as one (copying only the bytes
        their spans cover)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return MessageBatch.empty()
        if len(parts) == 1:
            return parts[0]
        pieces: list[npt.NDArray[np.uint8]] = []
        spans: list[npt.NDArray[np.int64]] = []
        base = 0
        for part in parts:
            starts = part.spans[0::2]
            lengths = part.spans[1::2]
            present = lengths >= 0
            low = int(starts[present].min()) if present.any() else 0
            high = int((starts + lengths)[present].max()) if present.any() else 0
            shifted = part.spans.copy()
            shifted[0::2] = np.where(present, starts + (base - low), 0)
            pieces.append(part.data[low:high])
            spans.append(shifted)
            base += high - low
        headers = None
        if any(p.headers is not None for p in parts):  # they stay in their own buffers
            headers = HeaderColumn.concatenate([p.headers for p in parts], [len(p) for p in parts])
        return MessageBatch(
            _read_only(np.concatenate(pieces)),
            np.concatenate(spans, axis=1),
            np.concatenate([p.partitions for p in parts]),
            np.concatenate([p.offsets for p in parts]),
            headers,
        )


def _header_column(headers: Sequence[Sequence[Header]]) -> HeaderColumn | None:
    """The header sections of the messages with a header other than ``content-type``
    (None when there is none)."""
    whole = [any(key != CONTENT_TYPE for key, _ in pairs) for pairs in headers]
    if not any(whole):
        return None
    sections = bytearray()
    where = np.full((2, len(headers)), -1, dtype=np.int64)
    for i, pairs in enumerate(headers):
        if whole[i]:
            where[:, i] = 0, len(sections)
            sections += encode_headers(pairs)
    return HeaderColumn((np.frombuffer(bytes(sections), dtype=np.uint8),), where)


class Source(Protocol):
    """A resumable stream of messages."""

    #: what its positions are positions in (``kafka:TOPIC``, ``stdin``): a checkpoint's
    #: positions mean nothing in another stream
    stream: str

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        """Up to ``max_messages`` messages, waiting at most ``timeout`` seconds for the first."""
        ...

    def position(self) -> Positions:
        """Per partition, the offset after the last message returned by :meth:`poll`."""
        ...

    def seek(self, positions: Positions) -> None:
        """Resume from these positions (from a checkpoint)."""
        ...

    def commit(self, positions: Positions) -> None:
        """Record these positions as done (after the checkpoint holding them is on disk)."""
        ...

    def ready(self) -> bool:
        """Whether the source is connected and assigned its partitions."""
        ...

    def exhausted(self) -> bool:
        """Whether no message will ever come again (end of standard input)."""
        ...

    def lag(self) -> Positions:
        """Per partition, messages not yet read (empty when unknown)."""
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


@dataclass(frozen=True)
class Unreadable:
    """Messages a source skipped because they cannot be read: offsets ``first_offset`` to
    ``last_offset`` of ``partition``, why (``reason``, a short name) and what was found
    (``detail``), and their bytes as fetched (``raw``, with ``key``: a whole record batch,
    or one record), for the dead-letter topic."""

    partition: int
    first_offset: int
    last_offset: int
    reason: str
    detail: str
    raw: bytes | None = None
    key: bytes | None = None


@runtime_checkable
class SkipsUnreadable(Protocol):
    """A source that skips what it cannot read (Kafka: a batch whose codec fails, a bad
    CRC...) and says so: the positions it gives are past what it skipped."""

    def unreadable(self) -> list[Unreadable]:
        """What was skipped since the last call, up to the position of the last poll
        (taken: each is reported once)."""
        ...


@runtime_checkable
class GuardsPositions(Protocol):
    """A source that checks the logs it reads against the positions it resumes from: a
    partition whose log went back behind what was learned from it (a broker that lost
    its storage, a topic created again) is held (``--on-offset-reset wait``) or read
    again from its start (``earliest``), never resumed silently."""

    def log_ends(self) -> Positions:
        """The furthest end of each partition's log seen so far (a checkpoint keeps it)."""
        ...

    def expect(self, log_ends: Positions, *, others_from_earliest: bool) -> None:
        """Resume from a checkpoint that saw these ends; with ``others_from_earliest``,
        partitions it holds no position for start at their logs' start (not at the
        group's committed offsets, which may come from checkpoints that were lost)."""
        ...

    def held(self) -> dict[int, str]:
        """The partitions held back, with why."""
        ...


class RebalanceListener(Protocol):
    """What a source that hands partitions over tells of it (the daemon: a learning
    group's member, keyed models)."""

    def partitions_assigned(self, partitions: set[int]) -> Positions:
        """Partitions given to this process: where to resume each of those whose
        position lives elsewhere (a learning group's sync topic; the others resume where
        the source would)."""
        ...

    def partitions_revoking(self, partitions: set[int]) -> None:
        """Partitions about to be taken away, before they are (what was learned from
        them is handed on for their next owner)."""
        ...


@runtime_checkable
class Rebalances(Protocol):
    """A source whose partitions a consumer group hands over between processes (Kafka),
    which tells a listener as it does."""

    def listen(self, listener: RebalanceListener) -> None:
        """Tell ``listener`` of every assignment and revocation from now on."""
        ...


@dataclass(frozen=True)
class Undelivered:
    """A message a sink could not deliver: where the input message it answers or
    forwards came from, and why."""

    partition: int
    offset: int
    reason: str


class Sink(Protocol):
    """Where predictions (or dead letters) go: a topic, or standard output.

    Delivery failures never raise: a message that cannot be queued or delivered is
    reported by :meth:`undelivered`, with the ``origin`` it was sent with.
    """

    def send(
        self,
        key: bytes | None,
        value: bytes | None,
        *,
        origin: tuple[int, int],
        headers: Sequence[Header] = (),
    ) -> None:
        """Queue one message; ``origin`` is the (partition, offset) of the input message
        it answers or forwards (a dead letter keeps its null value and its headers)."""
        ...

    def undelivered(self) -> list[Undelivered]:
        """The messages that failed since the last call (taken: each is reported once)."""
        ...

    def flush(self, timeout: float) -> int:
        """Wait at most ``timeout`` seconds until every message sent is delivered (or
        has failed); return how many are still on their way (0: none)."""
        ...

    def close(self) -> None:
        """Deliver what is on its way, within a bounded time, and release the
        connection; never raises."""
        ...
