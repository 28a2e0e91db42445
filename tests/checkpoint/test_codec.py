"""The checkpoint format: exact round trips, and a clear CheckpointError for any bad bytes."""

from __future__ import annotations

import contextlib
import math
import struct
import zlib
from typing import Any, Literal

import msgpack
import numpy as np
import pytest

from streamlearn import PDM
from streamlearn.checkpoint.codec import ARRAY_EXT, FORMAT, VERSION, Checkpoint, decode, encode
from streamlearn.errors import CheckpointError, StreamlearnError

NUMERIC_DTYPES = [
    "?",
    "i1",
    "i2",
    "i4",
    "i8",
    "u1",
    "u2",
    "u4",
    "u8",
    "f2",
    "f4",
    "f8",
    "c8",
    "c16",
]


def assert_same(a: Any, b: Any, where: str = "payload") -> None:
    """Equal values of the same types; arrays with the same dtype, shape and bytes."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, where
        assert a.shape == b.shape, where
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b), where  # nan and -0.0 too
    else:
        assert a == b, where


def round_trip(payload: dict[str, Any]) -> dict[str, Any]:
    return decode(encode(payload, created=0.0)).payload


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -1,
        2**63 - 1,
        -(2**63),
        2**64 - 1,
        0.0,
        -0.0,
        1.5,
        math.nan,
        math.inf,
        -math.inf,
        5e-324,
        "",
        "héllo ✓",
        b"\x00\xff",
        [],
        (),
        [1, "a", None, [2.5, []]],
        (1, (2, (3,)), [4, (5,)]),
        {},
        {"a": {"b": {"c": [1, {"d": ()}]}}},
    ],
    ids=repr,
)
def test_plain_values_round_trip(value: Any) -> None:
    assert_same(round_trip({"value": value}), {"value": value})


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
@pytest.mark.parametrize("order", ["<", ">", "="])
def test_arrays_of_every_dtype_and_byte_order_round_trip(
    dtype: str, order: Literal["<", ">", "="]
) -> None:
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, size=4 * 3 * np.dtype(dtype).itemsize, dtype=np.uint8)
    native = raw.view(np.dtype(dtype).newbyteorder("=")).reshape(4, 3)
    if native.dtype.kind == "b":
        native = native.astype(bool)
    array = native.astype(native.dtype.newbyteorder(order))
    back = round_trip({"a": array})["a"]
    assert back.dtype == native.dtype and back.dtype.isnative
    assert back.shape == (4, 3)
    assert back.tobytes() == native.tobytes()  # bit-identical, nan payloads included
    assert back.flags.writeable and back.flags.c_contiguous


@pytest.mark.parametrize(
    "array",
    [
        np.arange(24.0).reshape(2, 3, 4)[:, ::-1, ::2],
        np.asfortranarray(np.arange(12, dtype=">i8").reshape(3, 4)),
        np.arange(10, dtype=">f4")[::3],
        np.arange(6.0).reshape(2, 3).T,
        np.empty(0),
        np.empty((0, 5), dtype=">i4"),
        np.empty((3, 0, 2), dtype=bool),
        np.array(7.25),
        np.array(True),
        np.zeros((1, 1, 1, 1, 1, 2), dtype=np.uint16),
    ],
    ids=lambda a: f"{a.dtype.str}{a.shape}",
)
def test_odd_arrays_round_trip(array: np.ndarray[Any, Any]) -> None:
    back = round_trip({"a": array})["a"]
    assert back.dtype == array.dtype.newbyteorder("=")
    assert back.shape == array.shape
    assert np.array_equal(back, array)


def test_special_float_bits_survive() -> None:
    bits = np.array([0x7FF8000000000001, 0xFFF0000000000000, 0x8000000000000000], dtype="<u8")
    array = bits.view("<f8")
    back = round_trip({"a": array, "f": float(array[0])})
    assert back["a"].view("<u8").tolist() == bits.tolist()
    assert struct.pack("<d", back["f"]) == struct.pack("<d", float(array[0]))


@pytest.mark.parametrize(
    ("scalar", "expected"),
    [
        (np.float64(0.1), 0.1),
        (np.float32(0.1), float(np.float32(0.1))),
        (np.float16(-2.5), -2.5),
        (np.int64(-(2**62)), -(2**62)),
        (np.int8(-3), -3),
        (np.uint64(2**64 - 1), 2**64 - 1),
        (np.bool_(True), True),
        (np.bool_(False), False),
    ],
    ids=repr,
)
def test_numpy_scalars_come_back_as_python_numbers(scalar: Any, expected: Any) -> None:
    assert_same(round_trip({"s": scalar, "l": [scalar]}), {"s": expected, "l": [expected]})


def test_envelope_layout() -> None:
    data = encode({"x": 1}, created=1234.5)
    envelope = msgpack.unpackb(data)
    assert list(envelope) == ["format", "version", "created", "crc32", "payload"]
    assert envelope["format"] == FORMAT == "streamlearn.checkpoint"
    assert envelope["version"] == VERSION == 1
    assert envelope["created"] == 1234.5
    assert envelope["crc32"] == zlib.crc32(envelope["payload"])
    assert msgpack.unpackb(envelope["payload"]) == {"x": 1}
    array_content = msgpack.unpackb(
        msgpack.unpackb(encode({"a": np.array([1.0], dtype=">f8")}, created=0))["payload"]
    )
    ext = array_content["a"]
    assert ext.code == ARRAY_EXT
    assert msgpack.unpackb(ext.data) == ["<f8", [1], struct.pack("<d", 1.0)]


def test_decode_returns_a_frozen_checkpoint() -> None:
    checkpoint = decode(encode({"x": 1}, created=7))
    assert checkpoint == Checkpoint(payload={"x": 1}, created=7.0, version=1)
    assert type(checkpoint.created) is float
    with pytest.raises(AttributeError):
        checkpoint.created = 8.0  # type: ignore[misc]


def test_encoding_is_deterministic() -> None:
    payload = {"w": np.arange(5.0), "t": (1, "a"), "n": {"k": [None, True]}}
    assert encode(payload, created=1.0) == encode(payload, created=1.0)


def test_encode_does_not_modify_its_input() -> None:
    array = np.arange(4, dtype=">i4")
    payload = {"a": array, "t": (1, 2)}
    encode(payload, created=0)
    assert array.dtype.str == ">i4" and payload == {"a": array, "t": (1, 2)}


# -- a real learner ----------------------------------------------------------------------


def _problem(seed: int, n: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 0.0, 1.5, -1.0]) > 0, 1, -1)
    return X, y


def test_a_learner_state_round_trips_and_continues_identically() -> None:
    X, y = _problem(1, 60)
    original = PDM(eps=0.05).fit(X, y)
    state = original.state_dict()
    decoded = decode(encode(state, created=0)).payload
    assert_same(decoded, state)
    restored = PDM.from_state(decoded)
    assert np.array_equal(restored.coef_, original.coef_)
    assert_same(restored.summary(), original.summary())

    X2, y2 = _problem(2, 40)
    original.learn(X2, y2).replay()
    restored.learn(X2, y2).replay()
    assert np.array_equal(restored.coef_, original.coef_)
    assert restored.intercept_ == original.intercept_
    assert_same(restored.summary(), original.summary())


# -- errors ------------------------------------------------------------------------------


def _valid_checkpoint() -> bytes:
    X, y = _problem(3, 30)
    payload = {"learner": PDM(eps=0.1).fit(X, y).state_dict(), "position": {"offset": 12}}
    return encode(payload, created=1.0)


def test_every_truncation_is_a_checkpoint_error() -> None:
    data = _valid_checkpoint()
    for end in range(len(data)):
        with pytest.raises(CheckpointError, match="truncated or not a streamlearn checkpoint"):
            decode(data[:end])


def test_trailing_bytes_are_rejected() -> None:
    with pytest.raises(CheckpointError, match="truncated or not"):
        decode(encode({}, created=0) + b"\x00")


def test_a_flipped_payload_byte_fails_the_checksum() -> None:
    data = _valid_checkpoint()
    payload = msgpack.unpackb(data)["payload"]
    start = data.index(payload)
    for offset in (0, len(payload) // 2, len(payload) - 1):
        corrupt = bytearray(data)
        corrupt[start + offset] ^= 0x10
        with pytest.raises(CheckpointError, match="checksum mismatch: the checkpoint is corrupt"):
            decode(bytes(corrupt))


def test_any_single_flipped_byte_is_a_checkpoint_error() -> None:
    data = encode({"w": np.arange(3.0), "t": (1, "x")}, created=5.0)
    for i in range(len(data)):
        corrupt = bytearray(data)
        corrupt[i] ^= 0xFF
        # a flip in "created" can decode to another valid time: only other exceptions fail
        with contextlib.suppress(CheckpointError):
            decode(bytes(corrupt))


def _envelope(**fields: Any) -> bytes:
    content = msgpack.packb({"x": 1})
    envelope = {
        "format": FORMAT,
        "version": VERSION,
        "created": 0.0,
        "crc32": zlib.crc32(content),
        "payload": content,
    }
    envelope.update(fields)
    return bytes(msgpack.packb(envelope))


def test_a_foreign_map_is_not_a_checkpoint() -> None:
    with pytest.raises(CheckpointError, match="not a streamlearn checkpoint: format 'other'"):
        decode(_envelope(format="other"))
    with pytest.raises(CheckpointError, match="not a streamlearn checkpoint: format None"):
        decode(msgpack.packb({"name": "something else", "values": [1, 2]}))


def test_other_msgpack_values_are_not_checkpoints() -> None:
    for value in ([1, 2], "streamlearn.checkpoint", 3, None):
        with pytest.raises(CheckpointError, match="not a streamlearn checkpoint"):
            decode(msgpack.packb(value))


@pytest.mark.parametrize("version", [2, 0, "1", 1.0, None, True])
def test_an_unknown_version_is_rejected(version: Any) -> None:
    with pytest.raises(CheckpointError, match="is not supported \\(this streamlearn reads 1\\)"):
        decode(_envelope(version=version))
    if version == 2:
        with pytest.raises(CheckpointError, match=r"^checkpoint version 2 is not supported"):
            decode(_envelope(version=version))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"payload": "text"}, "payload is not a msgpack bin"),
        ({"crc32": "abc"}, "crc32 is not an integer"),
        ({"crc32": 1}, "checksum mismatch"),
        ({"created": "yesterday"}, "created is 'yesterday'"),
        ({"created": None}, "created is None"),
    ],
)
def test_malformed_envelope_fields(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        decode(_envelope(**fields))


def test_random_bytes_are_checkpoint_errors() -> None:
    rng = np.random.default_rng(42)
    for size in [0, 1, 2, 3, 5, 8, 16, 64, 300] * 30:
        with pytest.raises(CheckpointError):
            decode(rng.integers(0, 256, size, dtype=np.uint8).tobytes())


def _with_content(content_value: Any) -> bytes:
    content = msgpack.packb(content_value, use_bin_type=True)
    return _envelope(payload=content, crc32=zlib.crc32(content))


def _array_ext(record: Any) -> msgpack.ExtType:
    return msgpack.ExtType(ARRAY_EXT, msgpack.packb(record, use_bin_type=True))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (["<f8", [2], b"\x00" * 15], "15 bytes for shape \\(2,\\) of <f8"),
        (["<f8", [2], b"\x00" * 17], "17 bytes"),
        ([">f8", [1], b"\x00" * 8], "unsupported dtype '>f8'"),
        (["|O", [1], b"\x00" * 8], "unsupported dtype"),
        (["<U1", [1], b"\x00" * 4], "unsupported dtype"),
        ([1, [1], b"\x00"], "unsupported dtype"),
        (["<f8", [-1], b""], "bad shape"),
        (["<f8", 3, b"\x00" * 24], "bad shape"),
        (["<f8", [1.0], b"\x00" * 8], "bad shape"),
        (["<f8", [True], b"\x00" * 8], "bad shape"),
        (["<f8", [1], "text"], "the data is not a msgpack bin"),
        (["<f8", [1]], "not \\[typestr, shape, data\\]"),
        ({"dtype": "<f8"}, "not \\[typestr, shape, data\\]"),
        (["|u1", [1] * 100, b"\x00"], ".*dimension"),
    ],
)
def test_malformed_array_records(record: Any, message: str) -> None:
    with pytest.raises(CheckpointError, match=f"malformed array record: {message}"):
        decode(_with_content({"a": _array_ext(record)}))


def test_malformed_array_record_bytes() -> None:
    bad = msgpack.ExtType(ARRAY_EXT, b"\xc1")  # 0xc1 is never valid msgpack
    with pytest.raises(CheckpointError, match="malformed array record"):
        decode(_with_content({"a": bad}))


def test_unknown_extension_types_and_non_map_content() -> None:
    with pytest.raises(CheckpointError, match="unknown msgpack extension type 9"):
        decode(_with_content({"a": msgpack.ExtType(9, b"")}))
    with pytest.raises(CheckpointError, match="malformed tuple record"):
        decode(_with_content({"a": msgpack.ExtType(2, msgpack.packb(5))}))
    with pytest.raises(CheckpointError, match="not a map"):
        decode(_with_content([1, 2]))
    with pytest.raises(CheckpointError, match="corrupt checkpoint payload"):
        decode(_with_content({1: 2}))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"o": object()}, "payload\\['o'\\]: a object is not storable"),
        ({"s": {1, 2}}, "a set is not storable"),
        ({"d": {1: "x"}}, "key 1 is not a str"),
        ({"big": 2**64}, "does not fit in 64 bits"),
        ({"small": [-(2**63) - 1]}, "payload\\['small'\\]\\[0\\]: .* does not fit"),
        ({"u": np.array(["a"])}, "arrays of dtype <U1 are not storable"),
        ({"o": np.array([None])}, "arrays of dtype object"),
        ({"m": np.array([1], dtype="datetime64[s]")}, "arrays of dtype datetime64"),
        ({"c": np.complex128(1j)}, "numpy scalars of dtype complex128"),
        ({"c": 1j}, "a complex is not storable"),
    ],
)
def test_unstorable_values_are_named(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        encode(payload, created=0)


@pytest.mark.parametrize("created", [math.nan, math.inf, "now", None, True])
def test_created_must_be_a_finite_number(created: Any) -> None:
    with pytest.raises(CheckpointError, match="created must be"):
        encode({}, created=created)


def test_the_payload_must_be_a_mapping() -> None:
    with pytest.raises(CheckpointError, match="mapping, not list"):
        encode([1], created=0)  # type: ignore[arg-type]


def test_checkpoint_errors_are_streamlearn_errors() -> None:
    assert issubclass(CheckpointError, StreamlearnError)
