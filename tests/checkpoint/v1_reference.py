"""Version 1 of the checkpoint format as the first writer and reader did it, whole in
memory with msgpack's own packer and unpacker: the twin the streaming codec is checked
against (the same bytes written, the same payloads and refusals read).

Copied from streamlearn/checkpoint/codec.py as of commit 125d4be; not used by the package.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np
import numpy.typing as npt

from streamlearn.checkpoint.codec import ARRAY_EXT, FORMAT, TUPLE_EXT, VERSION, Checkpoint
from streamlearn.errors import CheckpointError

_ARRAY_DTYPES = frozenset(
    {"|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8"}
    | {"<c8", "<c16"}
)
_SCALAR_KINDS = frozenset("biuf")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def encode(payload: Mapping[str, Any], *, created: float, writer: str | None = None) -> bytes:
    """The checkpoint bytes of ``payload``, stamped with ``created`` (Unix seconds) and,
    when given, ``writer`` (the software writing it, such as ``"streamlearn 0.1.0"``).

    Raises :class:`CheckpointError` naming the first value that cannot be stored (an
    object, a non-str key, an int beyond 64 bits, an array of strings or objects...).
    """
    if not isinstance(payload, Mapping):
        raise CheckpointError(f"a checkpoint payload is a mapping, not {type(payload).__name__}")
    if isinstance(created, bool) or not isinstance(created, int | float | np.integer | np.floating):
        raise CheckpointError(f"created must be a number of seconds, got {created!r}")
    if not math.isfinite(created):
        raise CheckpointError(f"created must be finite, got {created!r}")
    if writer is not None and not isinstance(writer, str):
        raise CheckpointError(f"writer must be a str, got {writer!r}")
    content = _pack(_to_wire(payload, "payload"))
    envelope: dict[str, Any] = {"format": FORMAT, "version": VERSION, "created": float(created)}
    if writer is not None:
        envelope["writer"] = writer
    envelope["crc32"] = zlib.crc32(content)
    envelope["payload"] = content  # last, so that any truncation cuts the envelope short
    return _pack(envelope)


def decode(data: bytes) -> Checkpoint:
    """The checkpoint in ``data``; :class:`CheckpointError` says why when it is not valid."""
    envelope = _unpack_envelope(data)
    created = envelope.get("created")
    checksum = envelope.get("crc32")
    content = envelope.get("payload")
    if not isinstance(content, bytes):
        raise CheckpointError("malformed checkpoint: the payload is not a msgpack bin")
    if type(checksum) is not int:
        raise CheckpointError("malformed checkpoint: crc32 is not an integer")
    if isinstance(created, bool) or not isinstance(created, int | float):
        raise CheckpointError(f"malformed checkpoint: created is {created!r}, not a number")
    if zlib.crc32(content) != checksum:
        raise CheckpointError("checksum mismatch: the checkpoint is corrupt")
    try:
        payload = msgpack.unpackb(content, raw=False, ext_hook=_from_ext)
    except CheckpointError:
        raise
    except Exception as exc:  # unpacking any bytes must end in CheckpointError
        raise CheckpointError(f"corrupt checkpoint payload: {exc}") from exc
    if not isinstance(payload, dict):
        raise CheckpointError("corrupt checkpoint payload: not a map")
    writer = envelope.get("writer")
    return Checkpoint(
        payload=payload,
        created=float(created),
        version=VERSION,
        writer=writer if isinstance(writer, str) else None,
    )


# -- encoding ----------------------------------------------------------------------------


def _pack(value: Any) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def _to_wire(value: Any, where: str) -> Any:
    """``value`` as msgpack-native values and extension types; ``where`` names it in errors."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, np.ndarray):
        return msgpack.ExtType(ARRAY_EXT, _pack(_array_record(value, where)))
    if isinstance(value, np.generic):
        return _scalar(value, where)
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise CheckpointError(f"cannot store {where}: {value} does not fit in 64 bits")
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        wire = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CheckpointError(f"cannot store {where}: key {key!r} is not a str")
            wire[str(key)] = _to_wire(item, f"{where}[{key!r}]")
        return wire
    if isinstance(value, list):
        return [_to_wire(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, tuple):
        items = [_to_wire(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return msgpack.ExtType(TUPLE_EXT, _pack(items))
    raise CheckpointError(f"cannot store {where}: a {type(value).__name__} is not storable")


def _array_record(array: npt.NDArray[Any], where: str) -> list[Any]:
    little = array.dtype.newbyteorder("<")
    if little.str not in _ARRAY_DTYPES:
        raise CheckpointError(
            f"cannot store {where}: arrays of dtype {array.dtype} are not storable "
            "(only bool, integer, float and complex)"
        )
    data = np.asarray(array).astype(little, copy=False).tobytes(order="C")
    return [little.str, list(array.shape), data]


def _scalar(value: np.generic, where: str) -> bool | int | float:
    dtype = value.dtype
    if dtype.kind not in _SCALAR_KINDS or dtype.newbyteorder("<").str not in _ARRAY_DTYPES:
        raise CheckpointError(
            f"cannot store {where}: numpy scalars of dtype {dtype} are not storable"
        )
    plain: bool | int | float = value.item()
    return plain


# -- decoding ----------------------------------------------------------------------------


def _unpack_envelope(data: bytes) -> dict[str, Any]:
    try:
        envelope = msgpack.unpackb(data, raw=False)
    except Exception as exc:  # truncated, garbage or trailing bytes: all the same to a reader
        raise CheckpointError(
            "truncated or not a streamlearn checkpoint (not one complete msgpack value)"
        ) from exc
    if not isinstance(envelope, dict):
        raise CheckpointError(
            f"not a streamlearn checkpoint: a msgpack {type(envelope).__name__}, not a map"
        )
    if envelope.get("format") != FORMAT:
        raise CheckpointError(f"not a streamlearn checkpoint: format {envelope.get('format')!r}")
    version = envelope.get("version")
    if type(version) is not int or version != VERSION:
        raise CheckpointError(
            f"checkpoint version {version!r} is not supported (this streamlearn reads {VERSION})"
        )
    return envelope


def _from_ext(code: int, body: bytes) -> Any:
    if code == ARRAY_EXT:
        return _array_from_record(body)
    if code == TUPLE_EXT:
        items = msgpack.unpackb(body, raw=False, ext_hook=_from_ext)
        if not isinstance(items, list):
            raise CheckpointError("malformed tuple record in the checkpoint payload")
        return tuple(items)
    raise CheckpointError(f"unknown msgpack extension type {code} in the checkpoint payload")


def _array_from_record(body: bytes) -> npt.NDArray[Any]:
    try:
        record = msgpack.unpackb(body, raw=False)
    except Exception as exc:
        raise CheckpointError(f"malformed array record: {exc}") from exc
    if not isinstance(record, list) or len(record) != 3:
        raise CheckpointError("malformed array record: not [typestr, shape, data]")
    typestr, shape, data = record
    if typestr not in _ARRAY_DTYPES:
        raise CheckpointError(f"malformed array record: unsupported dtype {typestr!r}")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise CheckpointError(f"malformed array record: bad shape {shape!r}")
    if not isinstance(data, bytes):
        raise CheckpointError("malformed array record: the data is not a msgpack bin")
    dtype = np.dtype(typestr)
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise CheckpointError(
            f"malformed array record: {len(data)} bytes for shape {tuple(shape)} of {typestr}"
        )
    try:
        # astype copies: the result is writable, in native byte order, owns its memory
        flat = np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("="))
        return flat.reshape(shape)
    except ValueError as exc:  # e.g. more dimensions than numpy allows
        raise CheckpointError(f"malformed array record: {exc}") from exc
