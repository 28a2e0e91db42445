"""The replay buffer's storage: a ring of example slots over a ring arena of nonzeros.

Slots (``slot_*`` arrays, one entry per example) hold where an example's nonzeros start
in the arena, how many there are, its label, its slack count alpha_k and ||x_k||^2.
``ring`` is int64 ``[first_slot, count, write_pos, evicted, unbuffered]``. Examples are
kept in arrival order; each reserves max(nnz, 1) contiguous arena cells, so arena
positions strictly increase from the oldest example to the newest, wrapping at most once.
Adding an example evicts the oldest ones until there is a free slot and a free
contiguous stretch of arena, so memory never exceeds what was allocated;
:func:`evictions_for` says beforehand which, so that a learner can take their
contributions out of its weights while their nonzeros are still there, and
:func:`add_combination` rebuilds weights from what the buffer holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamlearn._kernels._jit import kernel

FIRST, COUNT, WRITE_POS, EVICTED, UNBUFFERED = 0, 1, 2, 3, 4


@kernel(inline=True)
def _evict_oldest(ring: np.ndarray, capacity: int) -> None:
    ring[FIRST] = (ring[FIRST] + 1) % capacity
    ring[COUNT] -= 1
    ring[EVICTED] += 1


@kernel(inline=True)
def _free_at(
    reserve: int, slot_start: np.ndarray, arena_size: int, first: int, count: int, write_pos: int
) -> int:
    """Where ``reserve`` cells fit without eviction, or -1, for a ring whose oldest slot
    is ``first`` and which holds ``count`` examples."""
    capacity = slot_start.shape[0]
    if count == capacity:
        return -1
    if count == 0:
        return 0
    oldest = slot_start[first]
    newest = slot_start[(first + count - 1) % capacity]
    if newest < oldest:  # wrapped: the only free stretch is [write_pos, oldest)
        return write_pos if oldest - write_pos >= reserve else -1
    if arena_size - write_pos >= reserve:
        return write_pos
    return 0 if oldest >= reserve else -1


@kernel(inline=True)
def _free_position(reserve: int, slot_start: np.ndarray, arena_size: int, ring: np.ndarray) -> int:
    """Where ``reserve`` cells fit without eviction, or -1."""
    return _free_at(reserve, slot_start, arena_size, ring[FIRST], ring[COUNT], ring[WRITE_POS])


@kernel(inline=True)
def evictions_for(reserve: int, slot_start: np.ndarray, arena_size: int, ring: np.ndarray) -> int:
    """How many of the oldest examples :func:`ring_append` will evict to store one of
    ``reserve`` cells: they are slots ``ring[FIRST]``, ``ring[FIRST] + 1``, ... (modulo
    the capacity), still intact until then."""
    capacity = slot_start.shape[0]
    first = ring[FIRST]
    count = ring[COUNT]
    write_pos = ring[WRITE_POS]
    n = 0
    while _free_at(reserve, slot_start, arena_size, first, count, write_pos) < 0:
        first = (first + 1) % capacity
        count -= 1
        n += 1
    return n


@kernel(inline=True)
def ring_append(
    indices: np.ndarray,
    values: np.ndarray,
    lo: int,
    hi: int,
    label: float,
    x_sqnorm: float,
    buffer: tuple[Any, ...],
    ring: np.ndarray,
) -> int:
    """Copy example ``indices[lo:hi], values[lo:hi]`` into the buffer; return its slot.

    ``buffer`` is ``(slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm, arena_idx,
    arena_val)``. The caller guarantees ``max(hi - lo, 1) <= arena size``.
    """
    slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm, arena_idx, arena_val = buffer
    capacity = slot_start.shape[0]
    reserve = max(hi - lo, 1)
    pos = _free_position(reserve, slot_start, arena_idx.shape[0], ring)
    while pos < 0:
        _evict_oldest(ring, capacity)
        pos = _free_position(reserve, slot_start, arena_idx.shape[0], ring)
    slot = (ring[FIRST] + ring[COUNT]) % capacity
    ring[COUNT] += 1
    # unsigned positions skip numba's negative-index checks (engine.py)
    dst = np.uint64(pos)
    src = np.uint64(lo)
    end = np.uint64(hi)
    while src < end:
        arena_idx[dst] = indices[src]
        arena_val[dst] = values[src]
        dst += np.uint64(1)
        src += np.uint64(1)
    slot_start[slot] = pos
    slot_len[slot] = hi - lo
    slot_label[slot] = label
    slot_alpha[slot] = 0.0
    slot_sqnorm[slot] = x_sqnorm
    ring[WRITE_POS] = pos + reserve
    return slot


@kernel()
def values_all_one(
    slots: np.ndarray, slot_start: np.ndarray, slot_len: np.ndarray, arena_val: np.ndarray
) -> bool:
    """Whether every stored value of the examples in ``slots`` is 1.0 (binary features)."""
    for i in range(slots.shape[0]):
        start = slot_start[slots[i]]
        for j in range(start, start + slot_len[slots[i]]):
            if arena_val[j] != 1.0:
                return False
    return True


@kernel()
def add_combination(
    slots: np.ndarray,
    coef: np.ndarray,
    slot_start: np.ndarray,
    slot_len: np.ndarray,
    arena_idx: np.ndarray,
    arena_val: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out += sum_i coef[i] x_(slots[i])``, example after example in the order of
    ``slots`` (``out`` long enough for every stored index): the weights of a combination
    of buffered examples."""
    for i in range(slots.shape[0]):
        k = np.uint64(slots[i])
        c = coef[i]
        # unsigned positions and indices skip numba's negative-index checks (engine.py)
        j = np.uint64(slot_start[k])
        end = j + np.uint64(slot_len[k])
        while j < end:
            out[np.uint32(arena_idx[j])] += c * arena_val[j]
            j += np.uint64(1)
