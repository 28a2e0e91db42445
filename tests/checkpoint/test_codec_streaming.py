"""The checkpoint codec streams: the same version-1 bytes as the whole-in-memory writer,
arrays written from their own memory and read straight into the arrays returned, the
same payloads and refusals as the whole-in-memory reader, and no copy of the checkpoint
in memory on either way."""

from __future__ import annotations

import io
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
import v1_reference as reference
from memory import peak_allocated

from streamlearn import PDM, ModelBank
from streamlearn.checkpoint import store as store_module
from streamlearn.checkpoint.codec import (
    ARRAY_EXT,
    CHUNK_BYTES,
    FORMAT,
    VERSION,
    decode,
    decode_stream,
    encode,
    encode_pieces,
)
from streamlearn.checkpoint.store import read_checkpoint, write_checkpoint
from streamlearn.errors import CheckpointError


def same(a: Any, b: Any) -> bool:
    """Equal payloads: same types, arrays with the same dtype, shape and bytes."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return bool(a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes())
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return bool(np.float64(a).tobytes() == np.float64(b).tobytes())
    return bool(a == b)


def bank_state() -> dict[str, Any]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 5))
    bank = ModelBank(PDM(eps=0.1, delta=1.0, buffer_size=50))
    bank.learn(X, rng.integers(0, 4, size=80))
    return bank.state_dict()


def payloads() -> Iterator[tuple[str, dict[str, Any]]]:
    """Payloads whose headers cross every msgpack size boundary."""
    yield "a bank", {"kind": "streamlearn.daemon", "learner": bank_state(), "n": 3}
    for n in [*range(0, 40), 200, 255, 256, 1000, 65_535, 65_536, 70_000, 300_000]:
        yield f"u1[{n}]", {"a": np.arange(n, dtype=np.uint8)}
    for n in (0, 1, 3, 7, 15, 16, 17, 100, 65_536):
        yield (
            f"{n} items",
            {"t": tuple(range(n)), "l": list(range(n)), "m": {str(i): i for i in range(n)}},
        )
    for n in (31, 32, 255, 256, 65_535, 65_536, 70_000, 200_000):
        yield f"str/bytes of {n}", {"s": "x" * n, "b": b"y" * n, "t": (b"z" * n,)}
    yield (
        "arrays in tuples",
        {"t": (np.arange(5.0), (np.ones((2, 3), dtype=">i4"), [np.array(1.5)]))},
    )
    yield (
        "odd arrays",
        {
            "f": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
            "s": np.arange(20.0)[::3],
            "e": np.empty((0, 4), dtype=bool),
            "c": np.arange(4, dtype=np.complex64),
            "big": np.arange(100_000, dtype=">f8"),
        },
    )


PAYLOADS = dict(payloads())


@pytest.mark.parametrize("name", list(PAYLOADS))
@pytest.mark.parametrize("writer", [None, "streamlearn 0.1.0"])
def test_the_pieces_are_the_bytes_of_the_whole_writer(name: str, writer: str | None) -> None:
    payload = PAYLOADS[name]
    expected = reference.encode(payload, created=12.5, writer=writer)
    encoded = encode_pieces(payload, created=12.5, writer=writer)
    assert b"".join(encoded.pieces) == expected
    assert encoded.size == len(expected)
    assert b"".join(encoded.chunks(1000)) == expected
    assert all(len(chunk) <= 1000 for chunk in encoded.chunks(1000))
    assert encode(payload, created=12.5, writer=writer) == expected


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_what_the_whole_writer_wrote_reads_back_the_same(name: str) -> None:
    data = reference.encode(PAYLOADS[name], created=1.0)
    assert same(decode(data).payload, reference.decode(data).payload)
    assert decode(data).created == 1.0


def test_native_arrays_are_written_from_their_own_memory() -> None:
    weights = np.arange(50_000.0)
    alphas = np.ones((3, 40_000))
    swapped = np.arange(30_000, dtype=">f8")
    pieces = encode_pieces({"w": weights, "a": alphas, "s": swapped}, created=0).pieces
    views = [np.frombuffer(piece, dtype=np.uint8) for piece in pieces if len(piece) > 100_000]
    assert any(np.shares_memory(view, weights) for view in views)
    assert any(np.shares_memory(view, alphas) for view in views)
    assert not any(np.shares_memory(view, swapped) for view in views)  # converted: a copy


def test_arrays_read_back_own_writable_native_memory() -> None:
    data = encode({"a": np.arange(100_000, dtype=">i8").reshape(100, 1000)}, created=0)
    back = decode(data).payload["a"]
    assert back.dtype == np.dtype("=i8") and back.flags.writeable and back.flags.c_contiguous
    assert back.base is None or back.base.base is None  # its own memory, not the input's
    back[0, 0] = -1


class Trickle(io.RawIOBase):
    """A stream that hands out at most ``step`` bytes a call, as a pipe or socket may."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = memoryview(data)
        self._at = 0
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self._step, len(self._data) - self._at)
        memoryview(buffer).cast("B")[:n] = self._data[self._at : self._at + n]
        self._at += n
        return n


@pytest.mark.parametrize("step", [1, 7, 4096])
def test_short_reads_are_read_on(step: int) -> None:
    payload = PAYLOADS["a bank"]
    data = encode(payload, created=0)
    assert same(decode_stream(Trickle(data, step)).payload, payload)
    with pytest.raises(CheckpointError, match="truncated"):
        decode_stream(Trickle(data[:-5], step))


def _outcome(read: Callable[[bytes], Any], data: bytes) -> Any:
    try:
        return read(data).payload
    except CheckpointError:
        return CheckpointError


def test_damaged_checkpoints_are_refused_or_read_as_the_whole_reader_does() -> None:
    """Flipped, inserted and dropped bytes anywhere, and truncations: both readers refuse
    the same files and read the same payloads from the others."""
    payload = {"w": np.arange(6.0), "t": (1, "x", [2.5, None]), "m": {"k": b"v", "n": -3}}
    data = encode(payload, created=5.0, writer="w")
    rng = np.random.default_rng(7)
    cases = [data[:end] for end in range(len(data))]
    for _ in range(3000):
        damaged = bytearray(data)
        at = int(rng.integers(0, len(data)))
        kind = rng.integers(0, 3)
        if kind == 0:
            damaged[at] = int(rng.integers(0, 256))
        elif kind == 1:
            damaged.insert(at, int(rng.integers(0, 256)))
        else:
            del damaged[at]
        cases.append(bytes(damaged))
    for case in cases:
        ours, theirs = _outcome(decode, case), _outcome(reference.decode, case)
        assert same(ours, theirs) or (ours is theirs is CheckpointError), case.hex()


def _content(value: Any) -> bytes:
    content = value if isinstance(value, bytes) else msgpack.packb(value, use_bin_type=True)
    envelope = {"format": FORMAT, "version": VERSION, "created": 0.0,
                "crc32": zlib.crc32(content), "payload": content}  # fmt: skip
    return bytes(msgpack.packb(envelope))


@pytest.mark.parametrize(
    "content",
    [
        {"a": msgpack.ExtType(ARRAY_EXT, b"")},
        {"a": msgpack.ExtType(ARRAY_EXT, msgpack.packb(["<f8", [2], b"\0" * 8]) + b"\0")},
        {"a": msgpack.ExtType(ARRAY_EXT, msgpack.packb(["<f8", [1]]))},
        {"a": msgpack.ExtType(2, b"")},
        {"a": msgpack.ExtType(2, msgpack.packb([1]) + b"\x01")},
        b"\x81\xa1a\xd6\xff\x00\x00\x00\x00",  # msgpack's timestamp (type -1): never written
        {b"bytes key": 1},
        {"a": [[[]]] * 3, "b": {"c": {"d": 1.5}}},
        {"u": "\u00e9", "f32": 0.0},
    ],
    ids=repr,
)
def test_odd_contents_as_the_whole_reader(content: Any) -> None:
    data = _content(content)
    ours, theirs = _outcome(decode, data), _outcome(reference.decode, data)
    if isinstance(content, bytes):  # msgpack's reader makes a Timestamp of it: ours refuses
        assert ours is CheckpointError
    else:
        assert same(ours, theirs) or (ours is theirs is CheckpointError)


def test_deep_nesting_is_refused_without_recursion() -> None:
    content = b"\x81\xa1a" + b"\x91" * 5000 + b"\x01"
    envelope = {"format": FORMAT, "version": VERSION, "created": 0.0,
                "crc32": zlib.crc32(content), "payload": content}  # fmt: skip
    with pytest.raises(CheckpointError, match=r"corrupt checkpoint payload: .*nested deeper"):
        decode(msgpack.packb(envelope))
    shallow = _content({"a": [[[[[[1]]]]]]})
    assert decode(shallow).payload == {"a": [[[[[[1]]]]]]}


def test_an_envelope_of_more_fields_is_read() -> None:
    content = msgpack.packb({"x": 1})
    envelope = {f"extra{i}": i for i in range(20)}
    envelope.update(format=FORMAT, version=VERSION, created=2.0, crc32=zlib.crc32(content),
                    payload=content)  # fmt: skip
    assert decode(msgpack.packb(envelope)).payload == {"x": 1}


def test_a_length_beyond_the_file_is_truncation_without_allocating_it(tmp_path: Path) -> None:
    head = b"".join(
        msgpack.packb(part)
        for part in ("format", FORMAT, "version", VERSION, "created", 0.0, "crc32", 0, "payload")
    )
    path = tmp_path / "lies.ckpt"
    path.write_bytes(b"\x85" + head + b"\xc6\xff\xff\xff\xf0" + b"\x00" * 100)
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match="truncated"):
            read_checkpoint(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


# -- memory ---------------------------------------------------------------------------------

BIG = 32 << 20  # bytes of the arrays below


def _big_payload() -> dict[str, Any]:
    return {"w": np.arange(BIG // 16, dtype=np.float64), "a": np.ones((4, BIG // 64)),
            "n": 7, "t": ("x", 1)}  # fmt: skip


def test_a_write_builds_nothing_the_size_of_the_checkpoint(tmp_path: Path) -> None:
    payload = _big_payload()
    peak, _ = peak_allocated(lambda: write_checkpoint(tmp_path / "c", payload))
    assert peak < BIG // 8, f"{peak / 1e6:.1f} MB allocated to write {BIG / 1e6:.0f} MB"
    assert same(read_checkpoint(tmp_path / "c").payload, payload)


def test_a_read_allocates_the_arrays_and_little_more(tmp_path: Path) -> None:
    payload = _big_payload()
    write_checkpoint(tmp_path / "c", payload)
    peak, checkpoint = peak_allocated(lambda: read_checkpoint(tmp_path / "c"))
    assert peak < BIG + BIG // 8, f"{peak / 1e6:.1f} MB allocated to read {BIG / 1e6:.0f} MB"
    assert same(checkpoint.payload, payload)


def test_the_store_hands_the_file_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real_fdopen = store_module.os.fdopen

    class Recording:
        def __init__(self, file: Any) -> None:
            self.file = file

        def __enter__(self) -> Recording:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: Any) -> int:
            sizes.append(len(data))
            written: int = self.file.write(data)
            return written

        def flush(self) -> None:
            self.file.flush()

        def fileno(self) -> int:
            fd: int = self.file.fileno()
            return fd

    monkeypatch.setattr(
        store_module.os, "fdopen", lambda fd, mode: Recording(real_fdopen(fd, mode))
    )
    payload = _big_payload()
    write_checkpoint(tmp_path / "c", payload)
    monkeypatch.undo()
    assert max(sizes) <= CHUNK_BYTES and sum(sizes) == (tmp_path / "c").stat().st_size
    assert same(read_checkpoint(tmp_path / "c").payload, payload)
