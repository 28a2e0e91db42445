"""Lazy arrays in a checkpoint payload: written as the arrays they stand for (the same
version-1 bytes) a block at a time, never whole, and refused when their blocks do not
add up or change between the checksum's pass and the file's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import v1_reference as reference
from memory import peak_allocated

from streamlearn.checkpoint.codec import (
    DeferredBytes,
    LazyArray,
    decode,
    encode,
    encode_pieces,
)
from streamlearn.checkpoint.store import (
    WRITER,
    CheckpointStore,
    read_checkpoint,
    write_checkpoint,
)
from streamlearn.errors import CheckpointError
from streamlearn.replay.shared import RingColumns


class Pieces:
    """An array given in blocks of ``step`` elements of its flat C-order data."""

    def __init__(self, array: np.ndarray, step: int) -> None:
        self.array = array
        self.step = step
        self.calls = 0

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.array.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def blocks(self) -> Iterator[np.ndarray]:
        self.calls += 1
        flat = np.ascontiguousarray(self.array).reshape(-1)
        for start in range(0, flat.shape[0], self.step):
            yield flat[start : start + self.step].copy()


ARRAYS = {
    "f8 2-d": np.arange(60.0).reshape(6, 10),
    "i1 3-d": np.arange(60, dtype=np.int8).reshape(3, 4, 5),
    "big-endian": np.arange(30, dtype=">i4"),
    "empty": np.zeros((0, 5)),
    "bool": np.arange(7) % 2 == 0,
    "complex": np.arange(6, dtype=np.complex128),
    "large": np.arange(300_000.0).reshape(3, 100_000),
}


@pytest.mark.parametrize("name", list(ARRAYS))
@pytest.mark.parametrize("step", [1, 7, 1 << 20])
def test_a_lazy_array_is_written_as_the_array_it_stands_for(name: str, step: int) -> None:
    array = ARRAYS[name]
    lazy = Pieces(array, step if array.size < 1000 else step * 1000)
    assert isinstance(lazy, LazyArray) and not isinstance(array, LazyArray)
    payload = {"a": lazy, "t": (1, [lazy]), "n": 3}
    expected = reference.encode({"a": array, "t": (1, [array]), "n": 3}, created=2.0)
    assert encode(payload, created=2.0) == expected
    encoded = encode_pieces(payload, created=2.0)
    assert encoded.size == len(expected)
    assert sum(isinstance(piece, DeferredBytes) for piece in encoded.pieces) == 2
    assert b"".join(encoded.chunks(1000)) == expected
    assert all(len(chunk) <= 1000 for chunk in encoded.chunks(1000))
    back = decode(expected).payload["a"]
    assert back.dtype == array.dtype.newbyteorder("=") and back.tolist() == array.tolist()


def test_ring_columns_are_a_lazy_array_written_as_their_gather(tmp_path: Path) -> None:
    rows = np.arange(4 * 300_000.0).reshape(4, 300_000)
    columns = RingColumns(rows, first=123_456, count=250_000)
    assert isinstance(columns, LazyArray)
    write_checkpoint(tmp_path / "c", {"alphas": columns}, created=0.0)
    expected = reference.encode({"alphas": columns.gather()}, created=0.0, writer=WRITER)
    assert (tmp_path / "c").read_bytes() == expected


def test_blocks_are_made_once_for_the_checksum_and_once_for_the_file(tmp_path: Path) -> None:
    lazy = Pieces(np.arange(1000.0), 100)
    write_checkpoint(tmp_path / "c", {"a": lazy})
    assert lazy.calls == 2


class Changing(Pieces):
    """Different data each time its blocks are asked for: a model that learned between
    the checksum's pass and the file's."""

    def blocks(self) -> Iterator[np.ndarray]:
        yield from super().blocks()
        self.array = self.array + 1


def test_data_that_change_during_a_write_fail_it_and_keep_the_last_checkpoint(
    tmp_path: Path,
) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    store.write({"a": np.arange(3.0)}, created=0.0)
    with pytest.raises(CheckpointError, match="changed while the checkpoint was written"):
        store.write({"a": Changing(np.arange(10_000.0), 1000)}, created=1.0)
    assert [path.name for path in tmp_path.iterdir() if path.name != ".lock"] == [
        "checkpoint-000000000001.ckpt"
    ]
    latest = store.latest()
    assert latest is not None and latest[1].payload["a"].tolist() == [0.0, 1.0, 2.0]


class Wrong(Pieces):
    def __init__(self, array: np.ndarray, blocks: list[np.ndarray]) -> None:
        super().__init__(array, 1)
        self._blocks = blocks

    def blocks(self) -> Iterator[np.ndarray]:
        yield from self._blocks


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ([np.zeros(3)], "fewer than the 32 bytes"),
        ([np.zeros(4), np.zeros(1)], "more than the 32 bytes"),
        ([np.zeros(4, dtype=np.float32)], "not an array of float64"),
        ([[0.0, 0.0, 0.0, 0.0]], "not an array of float64"),
    ],
)
def test_blocks_that_are_not_the_array_are_refused(blocks: list[Any], message: str) -> None:
    with pytest.raises(CheckpointError, match=message):
        encode({"a": Wrong(np.zeros(4), blocks)}, created=0.0)


class Unstorable(Pieces):
    @property
    def dtype(self) -> np.dtype[Any]:
        return np.dtype(object)


def test_a_lazy_array_of_a_dtype_that_cannot_be_stored_is_refused() -> None:
    with pytest.raises(CheckpointError, match=r"payload\['a'\]: arrays of dtype object"):
        encode({"a": Unstorable(np.zeros(2), 1)}, created=0.0)


def test_a_lazy_array_is_written_without_being_whole_in_memory(tmp_path: Path) -> None:
    rows = np.arange(64 * 100_000.0).reshape(64, 100_000)  # 51 MB
    columns = RingColumns(rows, first=40_000, count=100_000)
    peak, _ = peak_allocated(lambda: write_checkpoint(tmp_path / "c", {"alphas": columns}))
    assert peak < rows.nbytes / 10, f"{peak / 1e6:.1f} MB to write {rows.nbytes / 1e6:.0f} MB"
    np.testing.assert_array_equal(
        read_checkpoint(tmp_path / "c").payload["alphas"], columns.gather()
    )
