"""One example at a time: the engine's stream step for callers that hold a single example.

``learn_stream`` takes a batch; an online caller (the river adapter) holds one example
and pays numba's dispatch for every argument of every call. So these kernels take the
learner's state packed into two blocks, the example included:

- ``F`` (float64): the engine's ``scalars`` ``[beta, sqnorm, updates, scale]``, the two
  rule parameters, rho, Delta^2 and one cell of loose slack (the ``F_*`` offsets), then
  the buffer's ``slot_alpha`` and ``slot_sqnorm``, a workspace of values and the raw
  example ``[index_0 .. index_(n-1), value_0 .. value_(n-1)]`` (indices as floats, in
  any order, zeros and repeated indices allowed), which the caller writes in place;
- ``Z`` (int64): the buffer's ``ring``, the ``stats`` counters and a few more counts
  (the ``Z_*`` offsets), then the buffer's ``slot_start`` and ``slot_len`` and a
  workspace of indices.

Slices of the blocks are the learner's own arrays (views, see :func:`block_views`), so
the batch kernels (``replay_pass`` and the rest) work on the very same state. Each
example is put in canonical form first (zeros dropped, indices sorted, repeated indices
added up in their order of appearance, as ``canonicalize_rows`` does), then stored and
presented exactly as ``learn_stream`` does: weights, buffer and counters equal those of
the batch path bit for bit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn._kernels._jit import kernel, numba_module
from streamlearn._kernels.addresses import CELLS, AddressTable, array_at
from streamlearn._kernels.engine import (
    BETA,
    N_STATS,
    SCALE,
    count_new,
    forget_evicted,
    present,
    sparse_dot,
)
from streamlearn._kernels.ring import UNBUFFERED as RING_UNBUFFERED
from streamlearn._kernels.ring import WRITE_POS, ring_append
from streamlearn._kernels.rows import (
    insert_sorted,
    merge_repeats,
    sum_of_squares,
    within_norm_bound,
)
from streamlearn.types import RowStatus

#: ``F`` header: engine scalars at 0..3, then these
F_RULE, F_RHO, F_DELTA_SQ, F_LOOSE = 4, 6, 7, 8
F_HEAD = 9
#: ``Z`` header: ring at 0..4, stats at 5 .. 5 + N_STATS - 1, then these
Z_RING = 0
Z_STATS = 5
Z_CODE = Z_STATS + N_STATS
#: arena capacity in nonzeros (the buffer's ``max_nnz``)
Z_MAX_NNZ = Z_CODE + 1
#: examples presented so far
Z_EXAMPLES = Z_MAX_NNZ + 1
#: one more than the largest index of a presented example
Z_N_FEATURES = Z_EXAMPLES + 1
#: set to 1 by an update (the caller clears it)
Z_CHANGED = Z_N_FEATURES + 1
#: slots of the buffer
Z_CAPACITY = Z_CHANGED + 1
#: room of the workspaces, in nonzeros
Z_WORK = Z_CAPACITY + 1
#: the entry of the raw example that stopped the last call (or the nonzeros wanted)
Z_WHERE = Z_WORK + 1
#: nonzeros of the example in the workspaces
Z_LAST = Z_WHERE + 1
#: why the last call returned NaN
Z_STATUS = Z_LAST + 1
#: 1 when evicting an example takes its contribution out of the model (``forget='window'``)
Z_FORGET = Z_STATUS + 1
#: the evictions numbered below it (the examples the last replay saw) stay in the model
#: until the next replay (see ``forget_evicted``)
Z_DEFER_UNTIL = Z_FORGET + 1
Z_HEAD = Z_DEFER_UNTIL + 1

#: what the per-example kernels take: ``(w, F, Z, slot_label, arena_idx, arena_val)``
State = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

#: :class:`~streamlearn.types.RowStatus` codes as plain ints (numba compiles them in as
#: constants); the kernels return them negated
OK = int(RowStatus.OK)
NOT_FINITE = int(RowStatus.NOT_FINITE)
BAD_INDEX = int(RowStatus.BAD_INDEX)
NO_WORKSPACE = int(RowStatus.NO_WORKSPACE)
NEED_ARENA = int(RowStatus.NEED_ARENA)
UNBUFFERED = int(RowStatus.UNBUFFERED)
TOO_LARGE = int(RowStatus.TOO_LARGE)


def block_sizes(capacity: int, work: int) -> tuple[int, int]:
    """Lengths of ``F`` and ``Z`` for a buffer of ``capacity`` slots and examples of up
    to ``work`` entries."""
    return F_HEAD + 2 * capacity + 3 * work, Z_HEAD + 2 * capacity + work


def raw_offset(capacity: int, work: int) -> int:
    """Where the raw example starts in ``F``."""
    return F_HEAD + 2 * capacity + work


def block_views(F: np.ndarray, Z: np.ndarray) -> dict[str, np.ndarray]:
    """The named arrays that live in the blocks (views, not copies)."""
    cap = int(Z[Z_CAPACITY])
    work = int(Z[Z_WORK])
    return {
        "scalars": F[0:4],
        "slot_alpha": F[F_HEAD : F_HEAD + cap],
        "slot_sqnorm": F[F_HEAD + cap : F_HEAD + 2 * cap],
        "work_values": F[F_HEAD + 2 * cap : F_HEAD + 2 * cap + work],
        "raw": F[F_HEAD + 2 * cap + work : F_HEAD + 2 * cap + 3 * work],
        "ring": Z[Z_RING : Z_RING + 5],
        "stats": Z[Z_STATS : Z_STATS + N_STATS],
        "slot_start": Z[Z_HEAD : Z_HEAD + cap],
        "slot_len": Z[Z_HEAD + cap : Z_HEAD + 2 * cap],
        "work_indices": Z[Z_HEAD + 2 * cap : Z_HEAD + 2 * cap + work],
    }


@kernel(inline=True)
def _canonical(n: int, n_weights: int, F: np.ndarray, Z: np.ndarray) -> int:
    """Write the canonical form of the raw example of ``n`` entries to the workspaces
    (its nonzeros to ``Z[Z_LAST]``); return the nonzeros, or a negated status code
    with the offending entry in ``Z[Z_WHERE]`` (-1 for ``TOO_LARGE``: the squares of
    the values add up to more than ``rows.MAX_ROW_SQNORM``)."""
    cap = Z[Z_CAPACITY]
    work = Z[Z_WORK]
    if n > work:
        return -NO_WORKSPACE
    idx = Z[Z_HEAD + 2 * cap : Z_HEAD + 2 * cap + work]
    val = F[F_HEAD + 2 * cap : F_HEAD + 2 * cap + work]
    ex = F[F_HEAD + 2 * cap + work : F_HEAD + 2 * cap + 3 * work]
    m = 0
    for j in range(n):
        v = ex[n + j]
        if not math.isfinite(v):
            Z[Z_WHERE] = j
            return -NOT_FINITE
        if v == 0.0:
            continue
        k = ex[j]
        if not (0.0 <= k < n_weights) or k != math.floor(k):
            Z[Z_WHERE] = j
            return -BAD_INDEX
        insert_sorted(idx, val, m, int(k), v)
        m += 1
    out = merge_repeats(idx, val, m)
    if not within_norm_bound(sum_of_squares(val, 0, out)):  # NaN and inf included
        Z[Z_WHERE] = -1
        return -TOO_LARGE
    Z[Z_LAST] = out
    return out


@kernel(inline=True)
def _dot(n: int, w: np.ndarray, F: np.ndarray, Z: np.ndarray, weights: np.ndarray) -> float:
    """``weights . x`` of the raw example of ``n`` entries, checked and canonicalized
    against the live weights ``w`` (``weights`` is at least as long); NaN when the example
    is rejected, with the status in ``Z[Z_STATUS]``."""
    m = _canonical(n, w.shape[0], F, Z)
    if m < 0:
        Z[Z_STATUS] = -m
        return math.nan
    cap = Z[Z_CAPACITY]
    idx = Z[Z_HEAD + 2 * cap : Z_HEAD + 2 * cap + m]
    val = F[F_HEAD + 2 * cap : F_HEAD + 2 * cap + m]
    return sparse_dot(idx, val, 0, m, weights)


@kernel(inline=True)
def _decide(n: int, w: np.ndarray, F: np.ndarray, Z: np.ndarray) -> float:
    return F[SCALE] * (_dot(n, w, F, Z, w) + F[F_RHO] * F[BETA])


@kernel(inline=True)
def _decide_averaged(
    n: int, w: np.ndarray, F: np.ndarray, Z: np.ndarray, average: np.ndarray, bias: float
) -> float:
    """``average . x + bias`` of the raw example of ``n`` entries (see :func:`_dot`)."""
    return _dot(n, w, F, Z, average) + bias


@kernel(inline=True)
def _workspace(F: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, float]:
    """The canonical example in the workspaces: (indices, values, nonzeros, ||x||^2)."""
    m = Z[Z_LAST]
    cap = Z[Z_CAPACITY]
    idx = Z[Z_HEAD + 2 * cap : Z_HEAD + 2 * cap + m]
    val = F[F_HEAD + 2 * cap : F_HEAD + 2 * cap + m]
    return idx, val, m, sum_of_squares(val, 0, m)


@kernel(inline=True)
def _rule(F: np.ndarray, Z: np.ndarray) -> tuple[int, np.ndarray, float, float, bool, bool]:
    """The engine's rule tuple, from the blocks."""
    return (int(Z[Z_CODE]), F[F_RULE : F_RULE + 2], F[F_RHO], F[F_DELTA_SQ], False, False)


@kernel(inline=True)
def _count_learned(lam: float, p: float, idx: np.ndarray, m: int, Z: np.ndarray) -> None:
    """The counts after a new example's presentation, as ``learn_stream`` keeps them."""
    count_new(Z[Z_STATS : Z_STATS + N_STATS], lam, p)
    if lam > 0.0:
        Z[Z_CHANGED] = 1
    Z[Z_EXAMPLES] += 1
    if m > 0 and idx[m - 1] + 1 > Z[Z_N_FEATURES]:
        Z[Z_N_FEATURES] = idx[m - 1] + 1


@kernel()  # not inlined: three kernels call it, and inlining compiles it for each
def _learn_last(
    label: float,
    w: np.ndarray,
    F: np.ndarray,
    Z: np.ndarray,
    slot_label: np.ndarray,
    arena_idx: np.ndarray,
    arena_val: np.ndarray,
) -> int:
    """Store the example in the workspaces in the buffer (evicting the oldest) and present
    it, as ``learn_stream`` does for each example of a batch. Returns 0, or with nothing
    changed ``-NEED_ARENA`` (the caller grows the arena as
    ``ReplayBuffer.reserve_for(Z[Z_WHERE] + 1)`` does and calls again) or ``-UNBUFFERED``
    (the example has more nonzeros than the buffer can ever hold: the caller learns it
    with :func:`learn_last_unbuffered`)."""
    idx, val, m, x_sqnorm = _workspace(F, Z)
    max_nnz = Z[Z_MAX_NNZ]
    size = arena_idx.shape[0]
    if size < max_nnz and Z[Z_RING + WRITE_POS] + m + 2 > size:
        Z[Z_WHERE] = m
        return -NEED_ARENA
    if m > max_nnz:
        return -UNBUFFERED
    cap = Z[Z_CAPACITY]
    slot_start = Z[Z_HEAD : Z_HEAD + cap]
    slot_len = Z[Z_HEAD + cap : Z_HEAD + 2 * cap]
    slot_alpha = F[F_HEAD : F_HEAD + cap]
    slot_sqnorm = F[F_HEAD + cap : F_HEAD + 2 * cap]
    ring = Z[Z_RING : Z_RING + 5]
    buffer = (slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm, arena_idx, arena_val)
    rule = _rule(F, Z)
    state = (F[0], F[1], F[2], F[3])
    if Z[Z_FORGET]:
        state = forget_evicted(max(m, 1), buffer, ring, w, state, rule, Z[Z_DEFER_UNTIL])
        if state[1] != F[1] or state[3] != F[3]:
            Z[Z_CHANGED] = 1
    slot = ring_append(idx, val, 0, m, label, x_sqnorm, buffer, ring)
    start = slot_start[slot]
    lam, p, _, state = present(
        arena_idx, arena_val, start, start + m, label, slot_alpha, slot, x_sqnorm, w,
        state, F, slot_alpha, rule,
    )  # fmt: skip
    F[0], F[1], F[2], F[3] = state
    _count_learned(lam, p, idx, m, Z)
    return OK


@kernel()
def learn_last_unbuffered(label: float, state: State) -> None:
    """Present the example in the workspaces without storing it, for one with more
    nonzeros than the buffer can ever hold (``-UNBUFFERED`` from the other kernels);
    its slack lives in ``F[F_LOOSE]`` meanwhile. Counted as :func:`learn_last` counts.
    A kernel of its own, so it is compiled only when such an example comes."""
    w, F, Z = state[0], state[1], state[2]
    idx, val, m, x_sqnorm = _workspace(F, Z)
    Z[Z_RING + RING_UNBUFFERED] += 1
    if Z[Z_FORGET]:  # it could never be in the buffer: judged, not learned
        dot = sparse_dot(idx, val, 0, m, w)
        _count_learned(0.0, label * F[SCALE] * (dot + F[F_RHO] * F[BETA]), idx, m, Z)
        return
    cap = Z[Z_CAPACITY]
    slot_alpha = F[F_HEAD : F_HEAD + cap]
    loose = F[F_LOOSE : F_LOOSE + 1]
    loose[0] = 0.0
    lam, p, _, new_state = present(
        idx, val, 0, m, label, loose, 0, x_sqnorm, w, (F[0], F[1], F[2], F[3]), F,
        slot_alpha, _rule(F, Z),
    )  # fmt: skip
    F[0], F[1], F[2], F[3] = new_state
    _count_learned(lam, p, idx, m, Z)


@kernel()
def canonical(n: int, n_weights: int, F: np.ndarray, Z: np.ndarray) -> int:
    """Put the raw example in canonical form in the workspaces; returns its nonzeros or
    a negated status."""
    return _canonical(n, n_weights, F, Z)


@kernel()
def decision(n: int, state: State) -> float:
    """The engine's decision value ``scale (w . x + rho beta)`` of the raw example of
    ``n`` entries, whose canonical form stays in the workspaces; NaN when the example
    is rejected, with the status in ``Z[Z_STATUS]``."""
    w, F, Z = state[0], state[1], state[2]
    return _decide(n, w, F, Z)


@kernel()
def learn_one(n: int, label: float, state: State) -> int:
    """Learn the raw example of ``n`` entries with ``label`` (+1 or -1): 0, or a negated
    status and nothing changed (see :func:`_learn_last` for ``-NEED_ARENA`` and
    ``-UNBUFFERED``)."""
    w, F, Z, slot_label, arena_idx, arena_val = state
    m = _canonical(n, w.shape[0], F, Z)
    if m < 0:
        return m
    return _learn_last(label, w, F, Z, slot_label, arena_idx, arena_val)


@kernel()
def learn_last(label: float, state: State) -> int:
    """Learn the example whose canonical form the last call left in the workspaces: 0, or
    ``-NEED_ARENA`` or ``-UNBUFFERED`` and nothing changed (see :func:`_learn_last`)."""
    w, F, Z, slot_label, arena_idx, arena_val = state
    return _learn_last(label, w, F, Z, slot_label, arena_idx, arena_val)


@kernel()
def learn_last_then_decide(label: float, n: int, state: State) -> float:
    """:func:`learn_last` then :func:`decision` in one call (an online caller learns an
    example it has just predicted, then predicts the next one). NaN on failure, with
    the status in ``Z[Z_STATUS]``: ``NEED_ARENA`` and ``UNBUFFERED`` mean that nothing was
    done, any other that the learning was."""
    w, F, Z, slot_label, arena_idx, arena_val = state
    status = _learn_last(label, w, F, Z, slot_label, arena_idx, arena_val)
    if status < 0:
        Z[Z_STATUS] = -status
        return math.nan
    return _decide(n, w, F, Z)


@kernel()
def decision_averaged(n: int, state: State, average: np.ndarray, bias: float) -> float:
    """:func:`decision` with other weights: ``average . x + bias`` (an averaged model's,
    in its own units), the example checked and canonicalized as for the state's."""
    w, F, Z = state[0], state[1], state[2]
    return _decide_averaged(n, w, F, Z, average, bias)


@kernel()
def learn_last_then_decide_averaged(
    label: float, n: int, state: State, average: np.ndarray, bias: float
) -> float:
    """:func:`learn_last_then_decide` answered by other weights: learn the last example
    into the state, then :func:`decision_averaged` of the next (NaN and the status as
    there)."""
    w, F, Z, slot_label, arena_idx, arena_val = state
    status = _learn_last(label, w, F, Z, slot_label, arena_idx, arena_val)
    if status < 0:
        Z[Z_STATUS] = -status
        return math.nan
    return _decide_averaged(n, w, F, Z, average, bias)


#: cells of a state's :class:`~streamlearn._kernels.addresses.AddressTable` (see
#: :func:`state_table`): the six arrays of the state, the weights that answer, then 1
#: when they are averaged ones (0: the state's own answer) and the bits of their bias
T_ANSWER_WEIGHTS = 6 * CELLS
T_AVERAGED = 7 * CELLS
T_BIAS = T_AVERAGED + 1


def state_table(state: State, average: np.ndarray | None = None, bias: float = 0.0) -> AddressTable:
    """The address table of ``state`` for the ``*_at`` kernels, answering with the
    averaged weights ``average`` and ``bias`` (None: the state's own decision value).
    Made anew whenever one of these changes."""
    averaged = average is not None
    answer = average if average is not None else state[0]
    bits = int(np.float64(bias if averaged else 0.0).view(np.int64))
    return AddressTable((*state, answer), (*STATE_DTYPES, np.float64), (int(averaged), bits))


def set_table_bias(table: np.ndarray, bias: float) -> None:
    """Write a new bias of the averaged weights into a table of :func:`state_table` (the
    arrays the same: a new table costs microseconds, this a tenth of one)."""
    table.view(np.float64)[T_BIAS] = bias


@kernel(inline=True)
def _state_at(table: np.ndarray) -> tuple[np.ndarray, ...]:
    """The state's arrays ``(w, F, Z, slot_label, arena_idx, arena_val)`` from its table."""
    return (
        array_at(table[0], table[1], np.float64),
        array_at(table[2], table[3], np.float64),
        array_at(table[4], table[5], np.int64),
        array_at(table[6], table[7], np.int8),
        array_at(table[8], table[9], np.int32),
        array_at(table[10], table[11], np.float64),
    )


@kernel(inline=True)
def _answer_at(n: int, w: np.ndarray, F: np.ndarray, Z: np.ndarray, table: np.ndarray) -> float:
    """The decision value the table asks for: :func:`decision_averaged`'s with its
    averaged weights and bias, else :func:`decision`'s."""
    if table[T_AVERAGED]:
        average = array_at(table[T_ANSWER_WEIGHTS], table[T_ANSWER_WEIGHTS + 1], np.float64)
        return _decide_averaged(n, w, F, Z, average, table.view(np.float64)[T_BIAS])
    return _decide(n, w, F, Z)


@kernel()
def answer_at(label: float, n: int, table: np.ndarray) -> float:
    """The decision value of the raw example of ``n`` entries that the state's table asks
    for (see :func:`state_table`: :func:`decision_averaged`'s or :func:`decision`'s),
    after learning the example in the workspaces with ``label`` unless it is 0 (as
    :func:`learn_last_then_decide` does): one call whether or not an example waits. NaN
    and the status as there."""
    w, F, Z, slot_label, arena_idx, arena_val = _state_at(table)
    if label != 0.0:
        status = _learn_last(label, w, F, Z, slot_label, arena_idx, arena_val)
        if status < 0:
            Z[Z_STATUS] = -status
            return math.nan
    return _answer_at(n, w, F, Z, table)


@kernel()
def learn_one_at(n: int, label: float, table: np.ndarray) -> int:
    """:func:`learn_one` on the state of a table (see :func:`state_table`)."""
    w, F, Z, slot_label, arena_idx, arena_val = _state_at(table)
    m = _canonical(n, w.shape[0], F, Z)
    if m < 0:
        return m
    return _learn_last(label, w, F, Z, slot_label, arena_idx, arena_val)


@dataclass(frozen=True)
class HotKernels:
    """The per-example kernels an online caller runs at every example, each compiled for
    one set of argument types and called without numba's type dispatch (which costs about
    as much again as the call itself, with eight arguments)."""

    decision: Callable[[int, State], float]
    learn_one: Callable[[int, float, State], int]
    learn_last_then_decide: Callable[[float, int, State], float]
    decision_averaged: Callable[[int, State, np.ndarray, float], float]
    learn_last_then_decide_averaged: Callable[[float, int, State, np.ndarray, float], float]
    answer_at: Callable[[float, int, np.ndarray], float]
    learn_one_at: Callable[[int, float, np.ndarray], int]


#: dtypes of the kernels' arrays ``(w, F, Z, slot_label, arena_idx, arena_val)``; each is
#: one-dimensional, C-contiguous, aligned and writeable
STATE_DTYPES = (np.float64, np.float64, np.int64, np.int8, np.int32, np.float64)


@functools.cache
def hot_kernels() -> HotKernels:
    """:class:`HotKernels` for states of :data:`STATE_DTYPES` (made once). Only for such
    states, every time: an array of another dtype or layout would be misread, so callers
    check theirs first. Compiled ahead of time, they are the exported functions
    themselves (each has one signature, the states'), called without the checks of
    their wrappers."""
    kernels = (
        decision, learn_one, learn_last_then_decide, decision_averaged,
        learn_last_then_decide_averaged, answer_at, learn_one_at,
    )  # fmt: skip
    exported = [getattr(k, "exports", None) for k in kernels]
    if all(e is not None and len(e) == 1 for e in exported):
        return HotKernels(*(e[0] for e in exported if e is not None))
    numba = numba_module()
    types: Any = numba.types  # untyped: numba has no stubs
    state = types.Tuple([types.Array(numba.from_dtype(np.dtype(d)), 1, "C") for d in STATE_DTYPES])
    integer, real = numba.types.int64, numba.types.float64
    weights = types.Array(numba.types.float64, 1, "C")
    table = types.Array(numba.types.int64, 1, "C")
    return HotKernels(
        _compiled(decision, (integer, state)),
        _compiled(learn_one, (integer, real, state)),
        _compiled(learn_last_then_decide, (real, integer, state)),
        _compiled(decision_averaged, (integer, state, weights, real)),
        _compiled(learn_last_then_decide_averaged, (real, integer, state, weights, real)),
        _compiled(answer_at, (real, integer, table)),
        _compiled(learn_one_at, (integer, real, table)),
    )


def _compiled(dispatcher: Any, signature: tuple[Any, ...]) -> Callable[..., Any]:
    """The machine code of ``dispatcher`` for exactly ``signature``: what numba's public
    ``Dispatcher.compile`` returns, a function that skips the type dispatch; the
    dispatcher itself when compiling is off (``NUMBA_DISABLE_JIT``)."""
    compile_for = getattr(dispatcher, "compile", None)
    if compile_for is None:
        return dispatcher
    entry = compile_for(signature)
    return entry if callable(entry) else dispatcher


def empty_blocks(capacity: int, work: int) -> tuple[np.ndarray, np.ndarray]:
    """Zeroed blocks with their sizes recorded."""
    f_size, i_size = block_sizes(capacity, work)
    F = np.zeros(f_size, dtype=np.float64)
    Z = np.zeros(i_size, dtype=np.int64)
    Z[Z_CAPACITY] = capacity
    Z[Z_WORK] = work
    return F, Z
