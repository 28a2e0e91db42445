"""The shared replay buffer's state: the live slots' signs and slack in order, gathered
once (``state_dict``) or lent as ring columns a block at a time (``state_to_write``), and
rebuilt with every label row allocated at once (``from_state``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from memory import peak_allocated

from streamlearn.errors import StateError
from streamlearn.replay.shared import RingColumns, SharedReplayBuffer


def ring(rows: int, width: int, dtype: Any = np.float64) -> np.ndarray:
    return np.arange(rows * width).astype(dtype).reshape(rows, width)


@pytest.mark.parametrize(("first", "count"), [(0, 0), (0, 7), (3, 7), (6, 1), (4, 3), (0, 3)])
def test_ring_columns_are_the_live_slots_in_order(first: int, count: int) -> None:
    rows = ring(5, 7)
    slots = (first + np.arange(count)) % 7
    columns = RingColumns(rows, first, count)
    expected = rows[:, slots]
    gathered = columns.gather()
    np.testing.assert_array_equal(gathered, expected)
    assert gathered.flags.c_contiguous and not np.shares_memory(gathered, rows)
    assert columns.shape == expected.shape and columns.dtype == rows.dtype
    assert columns.nbytes == expected.nbytes
    np.testing.assert_array_equal(np.asarray(columns, dtype=np.float32), expected)


@pytest.mark.parametrize("max_bytes", [1, 8, 20, 56, 100, 1 << 20])
def test_blocks_are_the_array_in_c_order_none_larger_than_asked(max_bytes: int) -> None:
    rows = ring(5, 7)
    columns = RingColumns(rows, first=4, count=6)
    blocks = list(columns.blocks(max_bytes=max_bytes))
    joined = b"".join(np.ascontiguousarray(block).tobytes() for block in blocks)
    assert joined == rows[:, (4 + np.arange(6)) % 7].tobytes()
    assert all(block.nbytes <= max(max_bytes, 8) for block in blocks)
    assert not any(np.shares_memory(block, rows) for block in blocks)


def test_ring_columns_refuse_slots_outside_the_ring() -> None:
    with pytest.raises(ValueError, match="live slots"):
        RingColumns(ring(2, 4), first=4, count=1)
    with pytest.raises(ValueError, match="live slots"):
        RingColumns(ring(2, 4), first=0, count=5)
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(RingColumns(ring(2, 4), 1, 3), copy=False)


def wrapped_buffer(labels: int = 3, width: int = 6, added: int = 9) -> SharedReplayBuffer:
    """A buffer of ``labels`` rows whose ring has wrapped (slot ``added % width`` oldest)."""
    shared = SharedReplayBuffer(max_examples=width, max_nnz=1000)
    shared.reserve_slots(width)  # every slot, as a buffer that has wrapped has
    for _ in range(labels):
        shared.add_label()
    shared.signs[:labels] = np.where(ring(labels, width) % 3 == 0, 1, -1)
    shared.alphas[:labels] = ring(labels, width) / 4
    first, count = added % width, min(added, width)
    shared.features.ring[:2] = [first, count]
    return shared


def test_state_to_write_lends_what_state_dict_copies() -> None:
    shared = wrapped_buffer()
    slots = shared.features.live_slots()
    assert slots.tolist() == [3, 4, 5, 0, 1, 2]
    copied, lent = shared.state_dict(), shared.state_to_write()
    for name in ("signs", "alphas"):
        expected = getattr(shared, name)[:3][:, slots]
        assert isinstance(copied[name], np.ndarray) and copied[name].flags.c_contiguous
        np.testing.assert_array_equal(copied[name], expected)
        assert not np.shares_memory(copied[name], getattr(shared, name))
        assert isinstance(lent[name], RingColumns)
        assert lent[name].rows.base is getattr(shared, name)
        np.testing.assert_array_equal(np.asarray(lent[name]), expected)


@pytest.mark.parametrize(
    "state_of", [SharedReplayBuffer.state_dict, SharedReplayBuffer.state_to_write]
)
def test_from_state_puts_back_the_rows_once_each(
    state_of: Callable[[SharedReplayBuffer], dict[str, Any]],
) -> None:
    shared = wrapped_buffer(labels=5)
    back = SharedReplayBuffer.from_state(state_of(shared))
    assert back.n_labels == 5 and back.signs.shape == back.alphas.shape == (5, 6)
    live = shared.features.live_slots()
    np.testing.assert_array_equal(back.signs[:, :6], shared.signs[:5][:, live])
    np.testing.assert_array_equal(back.alphas[:, :6], shared.alphas[:5][:, live])
    assert back.add_label() == 5 and back.signs.shape[0] == 10  # grows as before


LABELS, WIDTH = 300, 4000
ROWS_BYTES = LABELS * WIDTH * 9  # signs (1 byte) and slack (8 bytes) per label and slot


def test_state_dict_gathers_the_rows_in_one_copy() -> None:
    shared = wrapped_buffer(labels=LABELS, width=WIDTH, added=WIDTH + 1234)
    peak, _ = peak_allocated(shared.state_dict)
    assert peak < 1.2 * ROWS_BYTES, f"{peak / ROWS_BYTES:.2f}x the rows"


def test_state_to_write_copies_none_of_the_rows() -> None:
    shared = wrapped_buffer(labels=LABELS, width=WIDTH, added=WIDTH + 1234)
    peak, _ = peak_allocated(shared.state_to_write)
    assert peak < ROWS_BYTES / 20, f"{peak / ROWS_BYTES:.2f}x the rows"


def test_from_state_allocates_the_rows_once() -> None:
    state = wrapped_buffer(labels=LABELS, width=WIDTH, added=WIDTH + 1234).state_dict()
    peak, _ = peak_allocated(lambda: SharedReplayBuffer.from_state(state))
    # the rows themselves and small blocks: no doubling copies, no whole-size checks
    assert peak < 1.2 * ROWS_BYTES, f"{peak / ROWS_BYTES:.2f}x the rows"


@pytest.mark.parametrize(("name", "value"), [("signs", 0), ("signs", 2), ("alphas", np.nan)])
def test_from_state_refuses_bad_rows_in_any_block(name: str, value: float) -> None:
    state = wrapped_buffer(labels=LABELS, width=WIDTH, added=WIDTH + 1).state_dict()
    state[name][-1, -1] = value
    with pytest.raises(StateError, match="signs must be"):
        SharedReplayBuffer.from_state(state)
