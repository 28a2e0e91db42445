"""Kernels of a one-vs-rest model bank: one binary learner per label over one shared buffer.

The bank's buffer stores each example's features once (``slot_start``, ``slot_len``,
``slot_sqnorm``, ``arena_idx``, ``arena_val``, ``ring``, as in
:mod:`streamlearn._kernels.ring`); every learner ``l`` has its own row of signs
``signs[l]`` (+1 where label l is in the example's label set, -1 elsewhere) and of slack
counts ``alphas[l]``, aligned with the slots, and its own rows ``weights[l]``,
``scalars[l]``, ``stats[l]`` and rule parameters ``rule_params[l]``. The presentation of
an example to a learner is the engine's own :func:`~streamlearn._kernels.engine.present`,
so a learner of the bank computes exactly what a standalone learner would.

Replay passes of one learner use :func:`~streamlearn._kernels.engine.replay_pass`
directly, with the buffer tuple ``(slot_start, slot_len, signs[l], alphas[l],
slot_sqnorm, arena_idx, arena_val)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.engine import (
    BETA,
    SCALE,
    SQNORM,
    UPDATES,
    count_new,
    forget_example,
    present,
    sparse_dot,
)
from streamlearn._kernels.ring import EVICTED, FIRST, UNBUFFERED, evictions_for, ring_append

#: what the stream kernels read and write of the bank's learners, travelling together:
#: ``(alphas, weights, scalars, rule_code, rule_params, rho, delta_sq, stats,
#: progressive)``, the per-learner arrays indexed by learner first (see the module
#: docstring) and ``progressive`` the bank's two multi-class counters
Learners = tuple[Any, ...]


@kernel(inline=True)
def _present_to_labels(
    i: int,
    src_idx: np.ndarray,
    src_val: np.ndarray,
    start: int,
    stop: int,
    alpha_table: np.ndarray,
    k: int,
    example_signs: np.ndarray,
    x_sqnorm: float,
    learners: Learners,
    candidates: int,
    learn: bool,
) -> None:
    """Present the new example ``i`` (nonzeros ``src_idx[start:stop]``, learner l's slack
    in ``alpha_table[l, k]``) to every learner with its sign, and judge it (see
    :func:`bank_learn_stream`); without ``learn``, judge and count it only."""
    alphas, weights, scalars, rule_code, rule_params, rho, delta_sq, stats, progressive = learners
    best = -np.inf
    best_sign = -1.0
    labelled = False
    for lab in range(example_signs.shape[1]):
        sign = float(example_signs[i, lab])
        row_scalars = scalars[lab]
        if learn:
            rule = (rule_code, rule_params[lab], rho, delta_sq, False, False)
            state = (row_scalars[BETA], row_scalars[SQNORM], row_scalars[UPDATES],
                     row_scalars[SCALE])  # fmt: skip
            lam, p, _, state = present(
                src_idx, src_val, start, stop, sign, alpha_table[lab], k, x_sqnorm,
                weights[lab], state, row_scalars, alphas[lab], rule,
            )  # fmt: skip
            row_scalars[BETA], row_scalars[SQNORM], row_scalars[UPDATES], row_scalars[SCALE] = state
        else:
            lam = 0.0
            dot = sparse_dot(src_idx, src_val, start, stop, weights[lab])
            p = sign * row_scalars[SCALE] * (dot + rho * row_scalars[BETA])
        count_new(stats[lab], lam, p)
        if sign > 0.0:
            labelled = True
        if lab < candidates and sign * p > best:
            best = sign * p
            best_sign = sign
    if labelled:
        progressive[0] += 1
        if best_sign < 0.0:
            progressive[1] += 1


@kernel()
def _forget_evicted(
    evicted: int,
    slot_start: np.ndarray,
    slot_len: np.ndarray,
    slot_sqnorm: np.ndarray,
    arena_idx: np.ndarray,
    arena_val: np.ndarray,
    ring: np.ndarray,
    signs: np.ndarray,
    n_labels: int,
    learners: Learners,
    defer_until: np.ndarray,
) -> None:
    """Take the ``evicted`` oldest examples out of every learner's a, as a standalone
    learner does (:func:`~streamlearn._kernels.engine.forget_evicted`): for learner l,
    all but the evictions numbered below ``defer_until[l]``."""
    alphas, weights, scalars, rule_code, _, rho, delta_sq, _, _ = learners
    capacity = slot_start.shape[0]
    for e in range(evicted):
        k = (ring[FIRST] + e) % capacity
        start = slot_start[k]
        for lab in range(n_labels):
            if ring[EVICTED] + e < defer_until[lab]:
                continue  # the learner's last replay saw it: it leaves at the next one
            row = scalars[lab]
            state = (row[BETA], row[SQNORM], row[UPDATES], row[SCALE])
            state = forget_example(
                arena_idx, arena_val, start, start + slot_len[k], float(signs[lab, k]),
                alphas[lab], k, slot_sqnorm[k], weights[lab], state, rule_code, rho, delta_sq,
            )  # fmt: skip
            row[BETA], row[SQNORM], row[UPDATES], row[SCALE] = state


@kernel()
def bank_learn_stream(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    example_signs: np.ndarray,
    x_sqnorms: np.ndarray,
    slot_start: np.ndarray,
    slot_len: np.ndarray,
    slot_sqnorm: np.ndarray,
    arena_idx: np.ndarray,
    arena_val: np.ndarray,
    ring: np.ndarray,
    max_nnz: int,
    signs: np.ndarray,
    learners: Learners,
    first_candidates: int,
    first: int,
    forget: bool,
    defer_until: np.ndarray,
) -> int:
    """Store each example of the batch from position ``first`` on once in the shared
    buffer, then present it to every learner ``l < example_signs.shape[1]`` with its sign
    ``example_signs[i, l]``. With ``forget``, the examples the buffer evicts to make room
    leave every learner first (:func:`_forget_evicted`), but those learner l's last replay
    saw (evictions numbered below ``defer_until[l]``).

    Stops before an example too large for the arena and returns its position (the
    number of examples at the end): :func:`bank_present_unbuffered` presents it from the
    batch, as ``learn_stream`` does.

    Progressive multi-class judgement, at no extra dot product: of the examples with at
    least one label, ``progressive[0]`` counts them and ``progressive[1]`` those whose
    argmax label just before learning (the largest ``sign * p``, ties to the lowest label
    id) is not one of theirs. The first example's candidates are the labels below
    ``first_candidates`` (those known before it, when it brings new ones); the other
    examples' are all the labels.
    """
    alphas = learners[0]
    n = indptr.shape[0] - 1
    for i in range(first, n):
        lo = indptr[i]
        hi = indptr[i + 1]
        if hi - lo > max_nnz:
            return i
        buffer = (slot_start, slot_len, signs[0], alphas[0], slot_sqnorm, arena_idx, arena_val)
        if forget:
            evicted = evictions_for(max(hi - lo, 1), slot_start, arena_idx.shape[0], ring)
            _forget_evicted(evicted, slot_start, slot_len, slot_sqnorm, arena_idx, arena_val,
                            ring, signs, example_signs.shape[1], learners, defer_until)  # fmt: skip
        slot = ring_append(indices, values, lo, hi, 1.0, x_sqnorms[i], buffer, ring)
        for lab in range(example_signs.shape[1]):
            signs[lab, slot] = example_signs[i, lab]
            alphas[lab, slot] = 0.0
        start = slot_start[slot]
        _present_to_labels(
            i, arena_idx, arena_val, start, start + hi - lo, alphas, slot, example_signs,
            x_sqnorms[i], learners, first_candidates if i == 0 else example_signs.shape[1], True,
        )  # fmt: skip
    return n


@kernel()
def bank_present_unbuffered(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    example_signs: np.ndarray,
    x_sqnorms: np.ndarray,
    i: int,
    ring: np.ndarray,
    learners: Learners,
    first_candidates: int,
    loose: np.ndarray,
    forget: bool,
) -> None:
    """Present example ``i`` of the batch to every learner from the batch itself, without
    storing it (it has more nonzeros than the arena); ``loose[l, 0]`` holds learner l's
    slack meanwhile. Judged and counted as :func:`bank_learn_stream` does. With
    ``forget`` it is judged but not learned: it could never be in the buffer."""
    for lab in range(loose.shape[0]):
        loose[lab, 0] = 0.0
    ring[UNBUFFERED] += 1
    _present_to_labels(
        i, indices, values, indptr[i], indptr[i + 1], loose, 0, example_signs, x_sqnorms[i],
        learners, first_candidates if i == 0 else example_signs.shape[1], not forget,
    )  # fmt: skip


@kernel()
def present_history(
    slots: np.ndarray,
    slot_start: np.ndarray,
    slot_len: np.ndarray,
    slot_sqnorm: np.ndarray,
    arena_idx: np.ndarray,
    arena_val: np.ndarray,
    sign: int,
    sign_row: np.ndarray,
    alpha_row: np.ndarray,
    w: np.ndarray,
    scalars: np.ndarray,
    rule_code: int,
    rule_params: np.ndarray,
    rho: float,
    delta_sq: float,
    stats: np.ndarray,
) -> None:
    """Present the buffered ``slots`` once, in order, to one (new) learner, all with the
    same ``sign``: they become its examples with fresh slack, counted as new examples."""
    rule = (rule_code, rule_params, rho, delta_sq, False, False)
    state = (scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE])
    for i in range(slots.shape[0]):
        k = slots[i]
        sign_row[k] = sign
        alpha_row[k] = 0.0
        start = slot_start[k]
        lam, p, _, state = present(
            arena_idx, arena_val, start, start + slot_len[k], float(sign), alpha_row, k,
            slot_sqnorm[k], w, state, scalars, alpha_row, rule,
        )  # fmt: skip
        count_new(stats, lam, p)
    scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE] = state
