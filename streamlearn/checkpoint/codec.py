"""The checkpoint format: a payload of plain values and numpy arrays to msgpack bytes and back.

Pure: no I/O, no clock, no globals; the creation time is an argument, and reading takes
a stream its caller opened (anything with ``read`` and ``readinto``). Never pickle.

A checkpoint is a msgpack map ``{"format": "streamlearn.checkpoint", "version": 1,
"created": float, "writer": str, "crc32": int, "payload": bin}`` (``writer``, the
software that wrote it, is optional), where ``payload`` holds the msgpack of
the content and ``crc32 == zlib.crc32(payload)``. The content is a map with str keys whose
values nest maps (str keys), lists, str, bytes, int, float (nan and inf too), bool and
None, plus two msgpack extension types: 1 is a numpy array, stored as the msgpack array
``[typestr, shape, data]`` (``typestr`` like ``"<f8"`` or ``"|b1"``, ``data`` the C-order
little-endian bytes), and 2 is a tuple, stored as the msgpack array of its items.

Neither direction holds the whole checkpoint in memory: :func:`encode_pieces` gives the
bytes as pieces, each array's data a view of the array's own memory (copied only when
its byte order or layout is not the stored one), and :func:`decode_stream` reads each
array's data straight into the array it returns, the checksum computed as the bytes
pass. :func:`encode` and :func:`decode` are the same on bytes.

A payload may also hold a :class:`LazyArray` where an array goes: an object that gives
its data a block at a time (a gather from a model's own memory, say), written as the
array it stands for (the same bytes) without ever being whole in memory. Its blocks are
made twice, for the checksum and then for the file, and the second time must give the
same bytes (:class:`DeferredBytes` checks it).

>>> import numpy as np
>>> data = encode({"weights": np.array([0.5, -1.0]), "seen": np.int64(3)}, created=1.5)
>>> checkpoint = decode(data)
>>> checkpoint.payload
{'weights': array([ 0.5, -1. ]), 'seen': 3}
>>> checkpoint.created, checkpoint.version, checkpoint.writer
(1.5, 1, None)
>>> decode(encode({}, created=0.0, writer="streamlearn 0.1.0")).writer
'streamlearn 0.1.0'
>>> decode(data[:-1])  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
streamlearn.errors.CheckpointError: truncated or not a streamlearn checkpoint ...
"""

from __future__ import annotations

import io
import math
import struct
import sys
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import msgpack
import numpy as np
import numpy.typing as npt

from streamlearn.errors import CheckpointError

#: the ``kind`` of a model file written by ``streamlearn learn``
MODEL_KIND = "streamlearn.model"
#: the ``kind`` of a daemon's checkpoint (a model file too: ``predict`` and ``learn
#: --resume`` read both)
DAEMON_KIND = "streamlearn.daemon"

#: the envelope's ``format`` field
FORMAT = "streamlearn.checkpoint"
#: the only envelope version this module writes and reads
VERSION = 1
#: msgpack extension type codes in the content
ARRAY_EXT = 1
TUPLE_EXT = 2
#: the largest piece :meth:`EncodedCheckpoint.chunks` hands out (bytes)
CHUNK_BYTES = 4 << 20

#: array dtypes that can be stored, as little-endian numpy typestrs
_ARRAY_DTYPES = frozenset(
    {"|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"}
    | {"<c8", "<c16"}
)
_SCALAR_KINDS = frozenset("biuf")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what msgpack can hold
_LENGTH_MAX = 2**32 - 1  # the most bytes or items one msgpack value holds
#: a view shorter than this is copied into the piece being built rather than kept apart
_SMALL = 1 << 16
#: the read-ahead of the structure (array data bypasses it)
_READ_AHEAD = 1 << 16
#: the longest single read of a str or bin, so that a corrupt length allocates no more
#: than the bytes that are really there
_LONGEST_READ = 1 << 24
#: containers nested deeper than this are refused (msgpack's own unpacker stops at 1024)
_DEPTH_MAX = 1024
_LITTLE_ENDIAN = sys.byteorder == "little"


@dataclass(frozen=True)
class Checkpoint:
    """A decoded checkpoint: the payload, its creation time (Unix seconds), its version
    and the software that wrote it (None when the file does not say)."""

    payload: dict[str, Any]
    created: float
    version: int
    writer: str | None = None


@runtime_checkable
class LazyArray(Protocol):
    """What a payload may hold instead of an array: its ``dtype`` and ``shape``, and its
    data a block at a time. The checkpoint holds the array these describe, byte for byte
    what the array itself would give, yet only one block of it is in memory at a time.

    ``blocks()`` yields arrays of ``dtype`` whose data, each in C order and one after
    the other, are the whole array's data in C order (a few rows at a time, say). It is
    called twice per write (for the checksum, then for the file) and must yield the same
    both times.
    """

    @property
    def dtype(self) -> np.dtype[Any]:
        """The type of the elements."""
        ...

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the array it stands for."""
        ...

    def blocks(self) -> Iterator[npt.NDArray[Any]]:
        """The data, a block at a time, in C order."""
        ...


class DeferredBytes:
    """The data of a :class:`LazyArray` as a piece of a checkpoint: its bytes, made a
    block at a time each time the piece is iterated.

    The first iteration (the checksum's, in :func:`encode_pieces`) notes the bytes'
    CRC32; a later one that gives other bytes (the source changed in between) raises
    :class:`CheckpointError` at its end, before a file of a wrong checksum is complete.
    A block of another dtype, or blocks of more or fewer bytes than the shape says,
    raise too.
    """

    def __init__(self, array: LazyArray, stored: np.dtype[Any], size: int, where: str) -> None:
        self.array = array
        self.stored = stored
        #: the bytes it gives
        self.size = size
        self.where = where
        self._crc32: int | None = None

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[memoryview]:
        expected = self.array.dtype
        crc, done = 0, 0
        for block in self.array.blocks():
            if not isinstance(block, np.ndarray) or block.dtype != expected:
                raise CheckpointError(
                    f"cannot store {self.where}: a block that is not an array of {expected}"
                )
            data = _little_endian_bytes(block, self.stored)
            done += data.nbytes
            if done > self.size:
                break
            crc = zlib.crc32(data, crc)
            yield data
        if done != self.size:
            than = "more" if done > self.size else "fewer"
            raise CheckpointError(
                f"cannot store {self.where}: its blocks hold {than} than the {self.size} "
                f"bytes of shape {tuple(self.array.shape)}"
            )
        if self._crc32 is None:
            self._crc32 = crc
        elif crc != self._crc32:
            raise CheckpointError(
                f"cannot store {self.where}: it changed while the checkpoint was written "
                "(write it before the model learns again)"
            )


@dataclass(frozen=True)
class EncodedCheckpoint:
    """A checkpoint's bytes as pieces to write in order (their concatenation is what
    :func:`encode` returns). Array data are views of the payload's arrays, and a lazy
    array's data a :class:`DeferredBytes` that makes them when iterated: write the
    pieces (through :meth:`chunks`) before the payload changes."""

    pieces: tuple[bytes | memoryview | DeferredBytes, ...]
    #: the checkpoint's size in bytes
    size: int

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[bytes | memoryview]:
        """The bytes in order: the pieces, those longer than ``size`` bytes cut into views
        of at most that, and lazy arrays' data made a block at a time."""
        for piece in self.pieces:
            for part in piece if isinstance(piece, DeferredBytes) else (piece,):
                if len(part) <= size:
                    yield part
                    continue
                view = memoryview(part)
                for start in range(0, len(view), size):
                    yield view[start : start + size]


class Readable(Protocol):
    """What :func:`decode_stream` reads: a binary file, ``io.BytesIO``..."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to ``size`` bytes; empty at the end."""
        ...

    def readinto(self, buffer: Any, /) -> int | None:
        """Bytes read into ``buffer`` (0 at the end)."""
        ...


def encode(payload: Mapping[str, Any], *, created: float, writer: str | None = None) -> bytes:
    """The checkpoint bytes of ``payload``, stamped with ``created`` (Unix seconds) and,
    when given, ``writer`` (the software writing it, such as ``"streamlearn 0.1.0"``).

    Raises :class:`CheckpointError` naming the first value that cannot be stored (an
    object, a non-str key, an int beyond 64 bits, an array of strings or objects...).
    """
    return b"".join(encode_pieces(payload, created=created, writer=writer).chunks())


def encode_pieces(
    payload: Mapping[str, Any], *, created: float, writer: str | None = None
) -> EncodedCheckpoint:
    """The checkpoint of ``payload`` as :func:`encode` makes it, in pieces: nothing the
    size of the payload is built (see :class:`EncodedCheckpoint`). Raises as :func:`encode`.

    >>> import numpy as np
    >>> weights = np.arange(100_000.0)
    >>> encoded = encode_pieces({"w": weights}, created=0.0)
    >>> b"".join(encoded.pieces) == encode({"w": weights}, created=0.0)
    True
    >>> np.shares_memory(np.frombuffer(encoded.pieces[-1], dtype="<f8"), weights)
    True
    """
    if not isinstance(payload, Mapping):
        raise CheckpointError(f"a checkpoint payload is a mapping, not {type(payload).__name__}")
    if isinstance(created, bool) or not isinstance(created, int | float | np.integer | np.floating):
        raise CheckpointError(f"created must be a number of seconds, got {created!r}")
    if not math.isfinite(created):
        raise CheckpointError(f"created must be finite, got {created!r}")
    if writer is not None and not isinstance(writer, str):
        raise CheckpointError(f"writer must be a str, got {writer!r}")
    content = _Pieces()
    _emit(payload, "payload", content)
    parts = content.finish()
    checksum = 0
    for part in parts:
        for data in part if isinstance(part, DeferredBytes) else (part,):
            checksum = zlib.crc32(data, checksum)
    head = _Pieces()
    head.add(_map_header(6 if writer is not None else 5))
    head.add(_pack("format") + _pack(FORMAT) + _pack("version") + _pack(VERSION))
    head.add(_pack("created") + _pack(float(created)))
    if writer is not None:
        head.add(_pack("writer") + _pack(writer))
    head.add(_pack("crc32") + _pack(checksum))
    # the payload last, so that any truncation cuts the envelope short
    head.add(_pack("payload") + _bin_header(content.size, "the payload"))
    pieces = (*head.finish(), *parts)
    return EncodedCheckpoint(pieces, head.size + content.size)


def decode(data: bytes) -> Checkpoint:
    """The checkpoint in ``data``; :class:`CheckpointError` says why when it is not valid."""
    return decode_stream(io.BytesIO(data), size=len(data))


def decode_stream(stream: Readable, *, size: int | None = None) -> Checkpoint:
    """The checkpoint read from ``stream`` to its end (``size``: its length in bytes, when
    known, so that a corrupt length is found out before anything is read for it).

    Each array is read into the memory of the array returned, with no copy in between;
    :class:`CheckpointError` says why the bytes are not a valid checkpoint, as
    :func:`decode` does.

    >>> import io
    >>> data = encode({"w": np.arange(3.0)}, created=0.0)
    >>> decode_stream(io.BytesIO(data)).payload["w"]
    array([0., 1., 2.])
    """
    reader = _Input(stream, size)
    try:
        envelope, content = _read_envelope(reader)
    except (_TruncatedError, _MalformedError) as exc:
        raise CheckpointError(
            "truncated or not a streamlearn checkpoint (not one complete msgpack value)"
        ) from exc
    return _checked(envelope, content)


# -- encoding ----------------------------------------------------------------------------


class _Pieces:
    """Bytes being assembled: small parts gathered into one, large buffers kept as views."""

    def __init__(self) -> None:
        self.size = 0
        self._parts: list[bytes | memoryview | DeferredBytes] = []
        self._small = bytearray()

    def add(self, data: bytes | bytearray) -> None:
        self._small += data
        self.size += len(data)

    def add_view(self, view: memoryview) -> None:
        if view.nbytes < _SMALL:
            self._small += view
        else:
            self._flush()
            self._parts.append(view)
        self.size += view.nbytes

    def add_deferred(self, deferred: DeferredBytes) -> None:
        self._flush()
        self._parts.append(deferred)
        self.size += deferred.size

    def extend(self, other: _Pieces) -> None:
        for part in other.finish():
            if isinstance(part, DeferredBytes):
                self.add_deferred(part)
            elif isinstance(part, memoryview):
                self.add_view(part)
            else:
                self.add(part)

    def finish(self) -> list[bytes | memoryview | DeferredBytes]:
        self._flush()
        return self._parts

    def _flush(self) -> None:
        if self._small:
            self._parts.append(bytes(self._small))
            self._small = bytearray()


def _emit(value: Any, where: str, out: _Pieces) -> None:
    """Append the msgpack of ``value`` to ``out``; ``where`` names it in errors."""
    if value is None or isinstance(value, bool):
        out.add(_pack(value))
    elif isinstance(value, str):
        out.add(_pack(str(value), where))
    elif isinstance(value, bytes):
        data = bytes(value)  # the same object unless a subclass
        out.add(_bin_header(len(data), where))
        out.add_view(memoryview(data))
    elif isinstance(value, np.ndarray):
        _emit_array(value, where, out)
    elif isinstance(value, np.generic):
        out.add(_pack(_scalar(value, where)))
    elif isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise CheckpointError(f"cannot store {where}: {value} does not fit in 64 bits")
        out.add(_pack(int(value)))
    elif isinstance(value, float):
        out.add(_pack(float(value)))
    elif isinstance(value, Mapping):
        items = list(value.items())
        out.add(_map_header(len(items)))
        for key, item in items:
            if not isinstance(key, str):
                raise CheckpointError(f"cannot store {where}: key {key!r} is not a str")
            out.add(_pack(str(key), where))
            _emit(item, f"{where}[{key!r}]", out)
    elif isinstance(value, list):
        out.add(_array_header(len(value)))
        for i, item in enumerate(value):
            _emit(item, f"{where}[{i}]", out)
    elif isinstance(value, tuple):
        body = _Pieces()
        body.add(_array_header(len(value)))
        for i, item in enumerate(value):
            _emit(item, f"{where}[{i}]", body)
        out.add(_ext_header(TUPLE_EXT, body.size, where))
        out.extend(body)
    elif isinstance(value, LazyArray):
        _emit_lazy_array(value, where, out)
    else:
        raise CheckpointError(f"cannot store {where}: a {type(value).__name__} is not storable")


def _emit_array(array: npt.NDArray[Any], where: str, out: _Pieces) -> None:
    """An array record ``[typestr, shape, data]`` in an extension of type 1, its data a
    view of the array (of a little-endian C-order copy when the array is not one)."""
    data = _little_endian_bytes(array, _stored_dtype(array.dtype, where))
    _emit_record(array.dtype, array.shape, data.nbytes, where, out)
    out.add_view(data)


def _emit_lazy_array(array: LazyArray, where: str, out: _Pieces) -> None:
    """The array record of the array ``array`` stands for, its data made a block at a
    time when the pieces are iterated."""
    dtype, shape = array.dtype, tuple(array.shape)
    if not isinstance(dtype, np.dtype) or not all(
        isinstance(n, int | np.integer) and n >= 0 for n in shape
    ):
        raise CheckpointError(
            f"cannot store {where}: a lazy array of dtype {dtype!r}, shape {shape!r}"
        )
    stored = _stored_dtype(dtype, where)
    size = math.prod(int(n) for n in shape) * dtype.itemsize
    _emit_record(dtype, shape, size, where, out)
    out.add_deferred(DeferredBytes(array, stored, size, where))


def _stored_dtype(dtype: np.dtype[Any], where: str) -> np.dtype[Any]:
    """The little-endian dtype an array of ``dtype`` is stored as (refused when none)."""
    little = dtype.newbyteorder("<")
    if little.str not in _ARRAY_DTYPES:
        raise CheckpointError(
            f"cannot store {where}: arrays of dtype {dtype} are not storable "
            "(only bool, integer, float and complex)"
        )
    return little


def _little_endian_bytes(array: npt.NDArray[Any], stored: np.dtype[Any]) -> memoryview:
    """The C-order data of ``array`` as ``stored``: a view of its memory when it is laid
    out so, else of a converted copy."""
    converted = np.ascontiguousarray(np.asarray(array).astype(stored, copy=False))
    return converted.reshape(-1).view(np.uint8).data


def _emit_record(
    dtype: np.dtype[Any], shape: tuple[int, ...], nbytes: int, where: str, out: _Pieces
) -> None:
    """The extension and record headers of an array, up to its data (``nbytes`` long)."""
    little = dtype.newbyteorder("<")
    record = _array_header(3) + _pack(little.str) + _pack([int(n) for n in shape])
    record += _bin_header(nbytes, where)
    out.add(_ext_header(ARRAY_EXT, len(record) + nbytes, where))
    out.add(record)


def _scalar(value: np.generic, where: str) -> bool | int | float:
    dtype = value.dtype
    if dtype.kind not in _SCALAR_KINDS or dtype.newbyteorder("<").str not in _ARRAY_DTYPES:
        raise CheckpointError(
            f"cannot store {where}: numpy scalars of dtype {dtype} are not storable"
        )
    plain: bool | int | float = value.item()
    return plain


def _pack(value: Any, where: str = "payload") -> bytes:
    try:
        packed: bytes = msgpack.packb(value, use_bin_type=True)
    except (ValueError, UnicodeEncodeError) as exc:  # a lone surrogate, a 4 GiB str...
        raise CheckpointError(f"cannot store {where}: {exc}") from exc
    return packed


def _length(n: int, where: str) -> None:
    if n > _LENGTH_MAX:
        raise CheckpointError(
            f"cannot store {where}: {n} bytes or items is more than msgpack holds"
        )


def _map_header(n: int) -> bytes:
    _length(n, "a map")
    if n < 16:
        return bytes((0x80 | n,))
    return b"\xde" + struct.pack(">H", n) if n < 1 << 16 else b"\xdf" + struct.pack(">I", n)


def _array_header(n: int) -> bytes:
    _length(n, "a list")
    if n < 16:
        return bytes((0x90 | n,))
    return b"\xdc" + struct.pack(">H", n) if n < 1 << 16 else b"\xdd" + struct.pack(">I", n)


def _bin_header(n: int, where: str) -> bytes:
    _length(n, where)
    if n < 1 << 8:
        return b"\xc4" + bytes((n,))
    return b"\xc5" + struct.pack(">H", n) if n < 1 << 16 else b"\xc6" + struct.pack(">I", n)


_FIXEXT = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}


def _ext_header(code: int, n: int, where: str) -> bytes:
    """The header msgpack writes before an extension body of ``n`` bytes."""
    _length(n, where)
    if n in _FIXEXT:
        return bytes((_FIXEXT[n], code))
    if n < 1 << 8:
        return bytes((0xC7, n, code))
    if n < 1 << 16:
        return b"\xc8" + struct.pack(">Hb", n, code)
    return b"\xc9" + struct.pack(">Ib", n, code)


# -- decoding: the envelope and its checks ---------------------------------------------


class _TruncatedError(Exception):
    """The stream ended inside the checkpoint."""


class _MalformedError(Exception):
    """Bytes that are not msgpack, or not the msgpack a checkpoint holds there."""


@dataclass
class _Content:
    """The payload as read: its value, or the error that stopped it; its checksum."""

    value: Any
    crc32: int
    error: CheckpointError | None


def _read_envelope(reader: _Input) -> tuple[dict[Any, Any], _Content | None]:
    """The envelope's fields but the payload, and the payload (None: not a bin)."""
    count = _map_length(reader)
    if count is None:  # a checkpoint is a map: what else is there is read to say what
        value = _read_value(reader, None, content=False)
        if not reader.at_end():
            raise _MalformedError("extra data")
        raise CheckpointError(
            f"not a streamlearn checkpoint: a msgpack {type(value).__name__}, not a map"
        )
    envelope: dict[Any, Any] = {}
    content: _Content | None = None
    for _ in range(count):
        key = _read_value(reader, None, content=False)
        if not isinstance(key, str | bytes):
            raise _MalformedError(f"{type(key).__name__} is not allowed for map key")
        length = _bin_length(reader) if key == "payload" else None
        if length is None:
            envelope[key] = _read_value(reader, None, content=False)
            if key == "payload":
                content = None
        elif _foreign(envelope):  # not ours: neither read nor checked
            reader.skip(length)
            content = None
        else:
            content = _read_content(reader, length)
    if not reader.at_end():
        raise _MalformedError("extra data")
    return envelope, content


def _foreign(envelope: Mapping[Any, Any]) -> bool:
    """Whether the fields read so far already say it is not a checkpoint this reads."""
    if "format" in envelope and envelope["format"] != FORMAT:
        return True
    version = envelope.get("version", VERSION)
    return type(version) is not int or version != VERSION


def _checked(envelope: dict[Any, Any], content: _Content | None) -> Checkpoint:
    """The checkpoint, once the envelope's fields and the payload's checksum are right."""
    if envelope.get("format") != FORMAT:
        raise CheckpointError(f"not a streamlearn checkpoint: format {envelope.get('format')!r}")
    version = envelope.get("version")
    if type(version) is not int or version != VERSION:
        raise CheckpointError(
            f"checkpoint version {version!r} is not supported (this streamlearn reads {VERSION})"
        )
    created = envelope.get("created")
    checksum = envelope.get("crc32")
    if content is None:
        raise CheckpointError("malformed checkpoint: the payload is not a msgpack bin")
    if type(checksum) is not int:
        raise CheckpointError("malformed checkpoint: crc32 is not an integer")
    if isinstance(created, bool) or not isinstance(created, int | float):
        raise CheckpointError(f"malformed checkpoint: created is {created!r}, not a number")
    if content.crc32 != checksum:
        raise CheckpointError("checksum mismatch: the checkpoint is corrupt")
    if content.error is not None:
        raise content.error
    if not isinstance(content.value, dict):
        raise CheckpointError("corrupt checkpoint payload: not a map")
    writer = envelope.get("writer")
    return Checkpoint(
        payload=content.value,
        created=float(created),
        version=VERSION,
        writer=writer if isinstance(writer, str) else None,
    )


def _read_content(reader: _Input, length: int) -> _Content:
    """The payload of ``length`` bytes, read to its end whatever it holds: its checksum
    decides whether a fault found in it is corruption or a malformed payload."""
    end = reader.position + length
    reader.check_available(length)
    reader.start_crc()
    value: Any = None
    error: CheckpointError | None = None
    try:
        value = _read_value(reader, end, content=True)
        if reader.position != end:
            raise _MalformedError("extra data after the content")
    except _TruncatedError:
        raise
    except CheckpointError as exc:
        error = exc
    except _MalformedError as exc:
        error = CheckpointError(f"corrupt checkpoint payload: {exc}")
    if error is not None:
        value = None
        reader.skip(end - reader.position)
    return _Content(value, reader.stop_crc(), error)


# -- decoding: msgpack values --------------------------------------------------------------

# the bytes of a header after its first one, by first byte (those with a length or a value)
_HEADER_SIZE = {
    **{b: 1 for b in range(0x80, 0xA0)},
    0xC4: 2, 0xC5: 3, 0xC6: 5, 0xC7: 3, 0xC8: 4, 0xC9: 6, 0xCA: 5, 0xCB: 9,
    0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9, 0xD0: 2, 0xD1: 3, 0xD2: 5, 0xD3: 9,
    0xD4: 2, 0xD5: 2, 0xD6: 2, 0xD7: 2, 0xD8: 2, 0xD9: 2, 0xDA: 3, 0xDB: 5,
    0xDC: 3, 0xDD: 5, 0xDE: 3, 0xDF: 5,
}  # fmt: skip
_FIXED = {0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q",
          0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}  # fmt: skip
_FIXEXT_SIZE = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_STR = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I"}
_BIN = {0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
_EXT = {0xC7: ">Bb", 0xC8: ">Hb", 0xC9: ">Ib"}
_LIST = {0xDC: ">H", 0xDD: ">I"}
_MAP = {0xDE: ">H", 0xDF: ">I"}
_CONSTANTS = {0xC0: None, 0xC2: False, 0xC3: True}


def _map_length(reader: _Input) -> int | None:
    """The entries of the map that comes next, its header read; None (nothing read)
    when something else comes."""
    first = reader.peek(None)
    if 0x80 <= first <= 0x8F:
        reader.take(1, None)
        return first & 0x0F
    if first not in _MAP:
        return None
    (count,) = struct.unpack(_MAP[first], reader.take(_HEADER_SIZE[first], None)[1:])
    return int(count)


def _bin_length(reader: _Input, end: int | None = None) -> int | None:
    """The length of the bin that comes next, its header read; None (nothing read)
    when something else comes."""
    first = reader.peek(end)
    if first not in _BIN:
        return None
    head = reader.take(_HEADER_SIZE[first], end)
    (length,) = struct.unpack_from(_BIN[first], head, 1)
    return int(length)


class _Frame:
    """A container being read: its items so far and how many are still to come."""

    __slots__ = ("end", "items", "key", "kind", "left")

    def __init__(self, kind: str, items: Any, left: int, end: int | None) -> None:
        self.kind = kind  # "list", "map" or "tuple" (the body of a tuple extension)
        self.items = items
        self.left = left
        self.key: Any = _NO_KEY
        self.end = end  # where a tuple's body ends


_NO_KEY = object()


def _read_value(reader: _Input, end: int | None, *, content: bool) -> Any:
    """The next msgpack value, read up to ``end`` at most (None: the stream's end).

    In the content (``content``), extension 1 is an array and 2 a tuple, and any other
    is refused; elsewhere an extension is a :class:`msgpack.ExtType`. Map keys are str or
    bytes (msgpack's ``strict_map_key``). Not recursive: nesting costs no stack.
    """
    stack: list[_Frame] = []
    bounds: list[int | None] = [end]
    while True:
        bound = bounds[-1]
        value, frame = _read_item(reader, bound, content)
        if frame is not None:
            if len(stack) >= _DEPTH_MAX:
                raise _MalformedError(f"containers nested deeper than {_DEPTH_MAX}")
            stack.append(frame)
            if frame.kind == "tuple":
                bounds.append(frame.end)
            continue
        while stack:  # hand the value to the containers it completes
            top = stack[-1]
            if top.kind == "tuple":
                if reader.position != top.end or not isinstance(value, list):
                    raise CheckpointError("malformed tuple record in the checkpoint payload")
                value = tuple(value)
                bounds.pop()
            elif top.kind == "list":
                top.items.append(value)
                top.left -= 1
                if top.left:
                    break
                value = top.items
            elif top.key is _NO_KEY:
                if not isinstance(value, str | bytes):
                    raise _MalformedError(f"{type(value).__name__} is not allowed for map key")
                top.key = value
                break
            else:
                top.items[top.key] = value
                top.key = _NO_KEY
                top.left -= 1
                if top.left:
                    break
                value = top.items
            stack.pop()
        else:
            return value


def _read_item(reader: _Input, end: int | None, content: bool) -> tuple[Any, _Frame | None]:
    """A whole value, or the frame of a container that starts (its items come next)."""
    first = reader.take(1, end)[0]
    if first <= 0x7F:
        return first, None
    if first >= 0xE0:
        return first - 0x100, None
    if first in _CONSTANTS:
        return _CONSTANTS[first], None
    if 0xA0 <= first <= 0xBF:
        return _text(reader.take(first & 0x1F, end)), None
    if first == 0xC1:
        raise _MalformedError("0xc1 is not a msgpack value")
    head = reader.take(_HEADER_SIZE[first] - 1, end)
    if first in _FIXED:
        number = struct.unpack(_FIXED[first], head)[0]
        return (float(number) if first <= 0xCB else int(number)), None
    if first in _STR:
        return _text(reader.take(struct.unpack(_STR[first], head)[0], end)), None
    if first in _BIN:
        return reader.take(struct.unpack(_BIN[first], head)[0], end), None
    if first < 0x90 or first in _MAP:
        count = first & 0x0F if first < 0x90 else struct.unpack(_MAP[first], head)[0]
        return ({}, None) if count == 0 else (None, _Frame("map", {}, count, None))
    if first < 0xA0 or first in _LIST:
        count = first & 0x0F if first < 0xA0 else struct.unpack(_LIST[first], head)[0]
        return ([], None) if count == 0 else (None, _Frame("list", [], count, None))
    if first in _FIXEXT_SIZE:
        length, code = _FIXEXT_SIZE[first], struct.unpack(">b", head)[0]
    else:
        length, code = struct.unpack(_EXT[first], head)
    return _extension(reader, end, content, int(code), int(length))


def _extension(
    reader: _Input, end: int | None, content: bool, code: int, length: int
) -> tuple[Any, _Frame | None]:
    body_end = reader.position + length
    if end is not None and body_end > end:
        raise _MalformedError("an extension runs past its container")
    if not content:
        return _plain_extension(code, reader.take(length, end)), None
    if code == ARRAY_EXT:
        return _read_array(reader, body_end), None
    if code == TUPLE_EXT:
        return None, _Frame("tuple", None, 1, body_end)
    raise CheckpointError(f"unknown msgpack extension type {code} in the checkpoint payload")


def _plain_extension(code: int, data: bytes) -> Any:
    """An extension outside the content, as msgpack reads it."""
    try:
        if code == -1:
            return msgpack.Timestamp.from_bytes(data)
        return msgpack.ExtType(code, data)
    except ValueError as exc:  # a negative code, a timestamp of a wrong length
        raise _MalformedError(str(exc)) from exc


def _read_array(reader: _Input, end: int) -> npt.NDArray[Any]:
    """An array record ``[typestr, shape, data]`` ending at ``end``, its data read into
    the memory of the array returned."""
    try:
        first = reader.peek(end)
        if first == 0x93:  # what the writer writes: the data, last, are read in place
            reader.take(1, end)
            typestr = _read_value(reader, end, content=False)
            shape = _read_value(reader, end, content=False)
            length = _bin_length(reader, end)
            data: Any = _read_value(reader, end, content=False) if length is None else None
        else:  # anything else, read whole to say what is wrong with it
            record = _read_value(reader, end, content=False)
            if not isinstance(record, list) or len(record) != 3:
                raise CheckpointError("malformed array record: not [typestr, shape, data]")
            (typestr, shape, data), length = record, None
    except (_MalformedError, CheckpointError) as exc:
        message = str(exc).removeprefix("malformed array record: ")
        raise CheckpointError(f"malformed array record: {message}") from exc
    if typestr not in _ARRAY_DTYPES:
        raise CheckpointError(f"malformed array record: unsupported dtype {typestr!r}")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise CheckpointError(f"malformed array record: bad shape {shape!r}")
    if length is None and not isinstance(data, bytes):
        raise CheckpointError("malformed array record: the data is not a msgpack bin")
    nbytes = len(data) if length is None else length
    dtype = np.dtype(typestr)
    if nbytes != math.prod(shape) * dtype.itemsize:
        raise CheckpointError(
            f"malformed array record: {nbytes} bytes for shape {tuple(shape)} of {typestr}"
        )
    if reader.position + nbytes > end:
        raise CheckpointError("malformed array record: its data run past the record")
    native = dtype.newbyteorder("=")
    flat = np.empty(nbytes // dtype.itemsize, dtype=native)
    try:
        array = flat.reshape(shape)  # before reading: e.g. more dimensions than numpy allows
    except (ValueError, OverflowError, TypeError) as exc:
        raise CheckpointError(f"malformed array record: {exc}") from exc
    if length is None:
        flat.view(np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
    else:
        reader.readinto(flat.view(np.uint8).data)
    if not _LITTLE_ENDIAN and dtype.itemsize > 1:
        flat.byteswap(inplace=True)
    if reader.position != end:
        raise CheckpointError("malformed array record: extra data after the record")
    return array


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _MalformedError(f"a str that is not UTF-8: {exc}") from exc


# -- decoding: the bytes -------------------------------------------------------------------


class _Input:
    """The stream, read ahead in small blocks for the msgpack structure and straight into
    the arrays for their data; keeps the CRC-32 of a region (the payload) as it passes."""

    def __init__(self, stream: Readable, size: int | None) -> None:
        self._stream = stream
        self._size = size  # bytes in the stream, when known
        self._buffer = b""
        self._at = 0  # the next byte of the buffer to read
        self._offset = 0  # the stream offset of the buffer's first byte
        self._crc: int | None = None
        self._crc_from = 0  # the buffer's first byte not yet in the checksum

    @property
    def position(self) -> int:
        """The stream offset of the next byte."""
        return self._offset + self._at

    def check_available(self, n: int) -> None:
        """Truncated, when the stream is known to hold fewer than ``n`` more bytes."""
        if self._size is not None and self.position + n > self._size:
            raise _TruncatedError(f"{n} bytes announced, {self._size - self.position} left")

    def peek(self, end: int | None) -> int:
        """The next byte, not read."""
        if end is not None and self.position >= end:
            raise _MalformedError("a value runs past the end of its container")
        if self._at >= len(self._buffer):
            self._fill(1, end)
        return self._buffer[self._at]

    def take(self, n: int, end: int | None) -> bytes:
        """The next ``n`` bytes (none beyond ``end``)."""
        if end is not None and self.position + n > end:
            raise _MalformedError("a value runs past the end of its container")
        if self._at + n > len(self._buffer):
            self._fill(n, end)
        data = self._buffer[self._at : self._at + n]
        self._at += n
        return data

    def readinto(self, view: memoryview) -> None:
        """Fill ``view`` with the next bytes: what was read ahead, then straight from the
        stream."""
        n = view.nbytes
        self.check_available(n)
        ahead = min(n, len(self._buffer) - self._at)
        view[:ahead] = self._buffer[self._at : self._at + ahead]
        self._at += ahead
        if ahead == n:
            return
        self._fold_crc()
        self._offset += len(self._buffer)
        self._buffer, self._at, self._crc_from = b"", 0, 0
        done = ahead
        while done < n:
            got = self._stream.readinto(view[done:])
            if not got:
                raise _TruncatedError("the stream ended")
            done += got
        self._offset += n - ahead
        if self._crc is not None:
            self._crc = zlib.crc32(view[ahead:], self._crc)

    def skip(self, n: int) -> None:
        """Read ``n`` bytes and drop them (the checksum takes them in)."""
        while n > 0:
            step = min(n, _LONGEST_READ)
            self.take(step, None)
            n -= step

    def at_end(self) -> bool:
        """Whether the stream has nothing after what was read."""
        if self._at < len(self._buffer):
            return False
        return not self._stream.read(1)

    def start_crc(self) -> None:
        self._crc, self._crc_from = 0, self._at

    def stop_crc(self) -> int:
        self._fold_crc()
        crc, self._crc = self._crc or 0, None
        return crc

    def _fold_crc(self) -> None:
        if self._crc is not None and self._at > self._crc_from:
            self._crc = zlib.crc32(memoryview(self._buffer)[self._crc_from : self._at], self._crc)
        self._crc_from = self._at

    def _fill(self, n: int, end: int | None) -> None:
        """Make the buffer hold ``n`` bytes from the next one on."""
        self._fold_crc()
        kept = self._buffer[self._at :]
        self._offset += self._at
        missing = n - len(kept)
        if end is None:  # an envelope field: a corrupt length reads no more than there is
            self.check_available(n)
        chunks = [kept]
        while missing > 0:
            chunk = self._stream.read(min(max(missing, _READ_AHEAD), _LONGEST_READ))
            if not chunk:
                raise _TruncatedError("the stream ended")
            chunks.append(chunk)
            missing -= len(chunk)
        self._buffer = b"".join(chunks)
        self._at = self._crc_from = 0
