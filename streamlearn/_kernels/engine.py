"""The one engine behind every learner: presenting examples and updating the weights.

The learner's state lives in arrays the caller owns:

- ``w``: dense float64 weights over the feature indices seen so far;
- ``scalars``: float64 ``[beta, sqnorm, updates, scale]`` with ``beta`` the weight of
  the augmented coordinate, ``sqnorm`` = ||a||^2 (kept incrementally, evicted examples'
  slack included), ``updates`` = t and ``scale`` the factor that multiplies ``w``,
  ``beta`` and the slack counts (1 except for Kozinec's convex combinations);
- ``buffer``: the tuple ``(slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm,
  arena_idx, arena_val)`` of :mod:`streamlearn._kernels.ring`; ``slot_alpha`` holds each
  buffered example's slack coordinate alpha_k.

The update rule travels as ``rule = (code, rule_params, rho, delta_sq, multi)``.

``learn_stream`` presents new examples once, in order, storing each in the buffer first.
``replay_pass`` runs one full epoch over the buffer in a given order followed by the
three nested active-set rounds of the PDM paper.

The kernels compile without numba's reference counting (``_nrt=False``): passing arrays
to the per-example helpers would otherwise cost more than the arithmetic. So they never
allocate; the caller hands in every workspace array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.ring import ring_append
from streamlearn._kernels.rules import RULE_KOZINEC, multiplicity, threshold

BETA, SQNORM, UPDATES, SCALE = 0, 1, 2, 3
#: ``stats`` counters filled by the kernels
STAT_UPDATE_EVENTS, STAT_PRESENTATIONS, STAT_MINI_EPOCHS = 0, 1, 2
#: below this the Kozinec scale is folded back into the weights
_MIN_SCALE = 1e-100

BufferArrays = tuple[Any, ...]
Rule = tuple[int, np.ndarray, float, float, bool]
#: a set of examples copied contiguously: (indptr int64[n + 1] with indptr[0] = 0,
#: indices int32, values float64, labels int8[n], sqnorms float64[n], slots int64[n])
CompactSet = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@kernel()
def _rescale(w: np.ndarray, scalars: np.ndarray, slot_alpha: np.ndarray) -> None:
    s = scalars[SCALE]
    for i in range(w.shape[0]):
        w[i] *= s
    for i in range(slot_alpha.shape[0]):
        slot_alpha[i] *= s
    scalars[BETA] *= s
    scalars[SCALE] = 1.0


@kernel()
def _kozinec_update(
    idx: np.ndarray,
    val: np.ndarray,
    start: int,
    stop: int,
    label: float,
    alpha: np.ndarray,
    k: int,
    p: float,
    q: float,
    w: np.ndarray,
    scalars: np.ndarray,
    slot_alpha: np.ndarray,
    rho: float,
) -> None:
    """a <- (1 - c) a + c y with c = clip(a.(a - y) / ||a - y||^2, 0, 1)."""
    sqnorm = scalars[SQNORM]
    denom = sqnorm - 2.0 * p + q
    c = 1.0 if sqnorm <= 0.0 or denom <= 0.0 else min(max((sqnorm - p) / denom, 0.0), 1.0)
    if c >= 1.0:
        # a becomes y itself: forget everything else, evicted slack included
        for i in range(w.shape[0]):
            w[i] = 0.0
        for i in range(slot_alpha.shape[0]):
            slot_alpha[i] = 0.0
        alpha[k] = 0.0
        scalars[BETA] = 0.0
        scalars[SCALE] = 1.0
        step = label
        scalars[SQNORM] = q
    else:
        new_scale = scalars[SCALE] * (1.0 - c)
        step = label * c / new_scale
        scalars[SCALE] = new_scale
        scalars[SQNORM] = (1.0 - c) ** 2 * sqnorm + 2.0 * c * (1.0 - c) * p + c * c * q
    for j in range(start, stop):
        w[idx[j]] += step * val[j]
    scalars[BETA] += step * rho
    alpha[k] += step * label
    scalars[UPDATES] += 1.0
    if scalars[SCALE] < _MIN_SCALE:
        _rescale(w, scalars, slot_alpha)


@kernel(inline=True)
def sparse_dot(idx: np.ndarray, val: np.ndarray, start: int, stop: int, w: np.ndarray) -> float:
    """sum_j w[idx[j]] val[j] over ``start:stop``, in four interleaved partial sums.

    Independent partial sums let the processor overlap the additions; their fixed order
    keeps results reproducible (the reference twins add in the same order).
    """
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    j = start
    while j + 3 < stop:
        s0 += w[idx[j]] * val[j]
        s1 += w[idx[j + 1]] * val[j + 1]
        s2 += w[idx[j + 2]] * val[j + 2]
        s3 += w[idx[j + 3]] * val[j + 3]
        j += 4
    while j < stop:
        s0 += w[idx[j]] * val[j]
        j += 1
    return (s0 + s1) + (s2 + s3)


@kernel(inline=True)
def present(
    idx: np.ndarray,
    val: np.ndarray,
    start: int,
    stop: int,
    label: float,
    alpha: np.ndarray,
    k: int,
    x_sqnorm: float,
    w: np.ndarray,
    scalars: np.ndarray,
    slot_alpha: np.ndarray,
    rule: Rule,
    collect_factor: float,
) -> tuple[float, bool]:
    """Present one example; update if the rule says so.

    The example is ``idx[start:stop]``, ``val[start:stop]`` with its slack count in
    ``alpha[k]``. Returns (how many times it was added, whether it belongs to the active
    set built with ``collect_factor``: a . y <= thr + (collect_factor - 1) |thr|).
    """
    code, rule_params, rho, delta_sq, multi = rule
    dot = sparse_dot(idx, val, start, stop, w)
    sqnorm = scalars[SQNORM]
    t = scalars[UPDATES]
    p = scalars[SCALE] * (label * (dot + rho * scalars[BETA]) + delta_sq * alpha[k])
    thr = threshold(code, rule_params, label, sqnorm, t)
    collected = p <= thr + (collect_factor - 1.0) * abs(thr)
    if p > thr:
        return 0.0, collected
    q = x_sqnorm + rho * rho + delta_sq
    if code == RULE_KOZINEC:
        _kozinec_update(idx, val, start, stop, label, alpha, k, p, q, w, scalars, slot_alpha, rho)
        return 1.0, collected
    lam = multiplicity(code, rule_params, p, q, sqnorm, t) if multi else 1.0
    step = lam * label
    for j in range(start, stop):
        w[idx[j]] += step * val[j]
    scalars[BETA] += step * rho
    alpha[k] += lam
    scalars[SQNORM] = sqnorm + 2.0 * lam * p + lam * lam * q
    scalars[UPDATES] = t + lam
    return lam, collected


@kernel()
def learn_stream(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    labels: np.ndarray,
    x_sqnorms: np.ndarray,
    buffer: BufferArrays,
    ring: np.ndarray,
    max_nnz: int,
    w: np.ndarray,
    scalars: np.ndarray,
    rule: Rule,
    stats: np.ndarray,
    loose: np.ndarray,
) -> None:
    """Store each example of the batch in the buffer (evicting the oldest), then present it.

    An example with more nonzeros than the buffer can ever hold is presented from the
    batch itself and not stored; ``loose`` (one float64) holds its slack meanwhile.
    """
    slot_start, slot_alpha, arena_idx, arena_val = buffer[0], buffer[3], buffer[5], buffer[6]
    for i in range(indptr.shape[0] - 1):
        lo = indptr[i]
        hi = indptr[i + 1]
        label = float(labels[i])
        if hi - lo <= max_nnz:
            slot = ring_append(indices, values, lo, hi, label, x_sqnorms[i], buffer, ring)
            start = slot_start[slot]
            lam, _ = present(
                arena_idx, arena_val, start, start + hi - lo, label, slot_alpha, slot,
                x_sqnorms[i], w, scalars, slot_alpha, rule, 1.0,
            )  # fmt: skip
        else:
            loose[0] = 0.0
            lam, _ = present(
                indices, values, lo, hi, label, loose, 0, x_sqnorms[i], w, scalars,
                slot_alpha, rule, 1.0,
            )  # fmt: skip
            ring[4] += 1
        stats[STAT_PRESENTATIONS] += 1
        if lam > 0.0:
            stats[STAT_UPDATE_EVENTS] += 1


@kernel(inline=True)
def _keep(
    dst: CompactSet,
    n: int,
    idx: np.ndarray,
    val: np.ndarray,
    start: int,
    stop: int,
    label: float,
    x_sqnorm: float,
    slot: int,
) -> None:
    """Copy an example to position ``n`` of a compact set."""
    ptr, dst_idx, dst_val, dst_label, dst_sqnorm, dst_slot = dst
    pos = ptr[n]
    for j in range(start, stop):
        dst_idx[pos] = idx[j]
        dst_val[pos] = val[j]
        pos += 1
    ptr[n + 1] = pos
    dst_label[n] = label
    dst_sqnorm[n] = x_sqnorm
    dst_slot[n] = slot


@kernel(inline=True)
def _cycle_slots(
    order: np.ndarray,
    n_order: int,
    out_slots: np.ndarray,
    out_set: CompactSet,
    to_set: bool,
    buffer: BufferArrays,
    w: np.ndarray,
    scalars: np.ndarray,
    rule: Rule,
    collect_factor: float,
    stats: np.ndarray,
) -> tuple[int, int]:
    """Present buffer slots ``order[:n_order]`` once.

    Collected examples go to ``out_set`` (copied) when ``to_set``, else their slot
    numbers go to ``out_slots``. Returns (update events, number collected).
    """
    slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm, arena_idx, arena_val = buffer
    events = 0
    n_collected = 0
    for i in range(n_order):
        k = order[i]
        start = slot_start[k]
        stop = start + slot_len[k]
        label = float(slot_label[k])
        lam, collected = present(
            arena_idx, arena_val, start, stop, label, slot_alpha, k, slot_sqnorm[k], w,
            scalars, slot_alpha, rule, collect_factor,
        )  # fmt: skip
        if lam > 0.0:
            events += 1
        if collected:
            if to_set:
                _keep(out_set, n_collected, arena_idx, arena_val, start, stop, label,
                      slot_sqnorm[k], k)  # fmt: skip
            else:
                out_slots[n_collected] = k
            n_collected += 1
    stats[STAT_UPDATE_EVENTS] += events
    stats[STAT_PRESENTATIONS] += n_order
    stats[STAT_MINI_EPOCHS] += 1
    return events, n_collected


@kernel(inline=True)
def _cycle_set(
    source: CompactSet,
    n_source: int,
    out_set: CompactSet,
    collect: bool,
    slot_alpha: np.ndarray,
    w: np.ndarray,
    scalars: np.ndarray,
    rule: Rule,
    stats: np.ndarray,
) -> tuple[int, int]:
    """Present a compact set once, collecting (factor 1) into ``out_set`` if ``collect``."""
    ptr, idx, val, labels, sqnorms, slots = source
    events = 0
    n_collected = 0
    for i in range(n_source):
        label = float(labels[i])
        lam, collected = present(
            idx, val, ptr[i], ptr[i + 1], label, slot_alpha, slots[i], sqnorms[i], w, scalars,
            slot_alpha, rule, 1.0,
        )  # fmt: skip
        if lam > 0.0:
            events += 1
        if collect and collected:
            _keep(out_set, n_collected, idx, val, ptr[i], ptr[i + 1], label, sqnorms[i],
                  slots[i])  # fmt: skip
            n_collected += 1
    stats[STAT_UPDATE_EVENTS] += events
    stats[STAT_PRESENTATIONS] += n_source
    stats[STAT_MINI_EPOCHS] += 1
    return events, n_collected


@kernel()
def replay_pass(
    order: np.ndarray,
    buffer: BufferArrays,
    w: np.ndarray,
    scalars: np.ndarray,
    rule: Rule,
    schedule: np.ndarray,
    stats: np.ndarray,
    level1: np.ndarray,
    level2: CompactSet,
    level3: CompactSet,
) -> int:
    """One full epoch over the buffer slots in ``order``, then its active-set rounds.

    ``schedule`` is float64 ``[use_active_sets, c1, c2, nep1, nep2, nep3]``. The full
    epoch collects level 1 (factor c1); each cycle over level 1 collects level 2 (c2);
    each cycle over level 2 collects level 3 (factor 1), presented up to nep3 times;
    level 2 is cycled up to nep2 times, level 1 up to nep1 times. A round stops early
    when it makes no update. Returns the number of update events of the full epoch:
    0 means the buffer has converged.

    Workspaces: ``level1`` int64 with room for every slot in ``order``; ``level2`` and
    ``level3`` compact sets (see :data:`CompactSet`) with room for all those examples:
    levels 2 and 3, cycled most, are copies laid out in presentation order, so their
    cycles read memory sequentially.
    """
    c1, c2 = schedule[1], schedule[2]
    nep1, nep2, nep3 = int(schedule[3]), int(schedule[4]), int(schedule[5])
    full_events, n1 = _cycle_slots(
        order, order.shape[0], level1, level2, False, buffer, w, scalars, rule, c1, stats
    )
    if full_events == 0 or schedule[0] == 0.0:
        return full_events
    slot_alpha = buffer[3]
    for _ in range(nep1):
        events, n2 = _cycle_slots(
            level1, n1, level1, level2, True, buffer, w, scalars, rule, c2, stats
        )
        if events == 0:
            break
        for _ in range(nep2):
            events, n3 = _cycle_set(level2, n2, level3, True, slot_alpha, w, scalars, rule, stats)
            if events == 0:
                break
            for _ in range(nep3):
                events, _ = _cycle_set(
                    level3, n3, level3, False, slot_alpha, w, scalars, rule, stats
                )
                if events == 0:
                    break
    return full_events
