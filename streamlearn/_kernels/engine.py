"""The one engine behind every learner: presenting examples and updating the weights.

The learner's state lives in arrays the caller owns:

- ``w``: dense float64 weights over the feature indices seen so far;
- ``scalars``: float64 ``[beta, sqnorm, updates, scale]`` with ``beta`` the weight of
  the augmented coordinate, ``sqnorm`` = ||a||^2 (kept incrementally, the slack of
  evicted examples still in a included), ``updates`` = t and ``scale`` the factor that
  multiplies ``w``, ``beta`` and the slack counts (1 except for Kozinec's convex
  combinations);
- ``buffer``: the tuple ``(slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm,
  arena_idx, arena_val)`` of :mod:`streamlearn._kernels.ring`; ``slot_alpha`` holds each
  buffered example's slack coordinate alpha_k.

The update rule travels as ``rule = (code, rule_params, rho, delta_sq, multi, unit)``;
``unit`` says that every value of every example presented is 1.0 (binary features),
so the kernels skip loading and multiplying them: the sums and updates are the same,
bit for bit, only faster.

``learn_stream`` presents new examples once, in order, storing each in the buffer first.
``replay_pass`` runs one full epoch over the buffer in a given order followed by the
three nested active-set rounds of the PDM paper.

The inner loops index with unsigned integers (``np.uint64`` positions, ``np.uint32``
feature indices). numba gives every signed index Python's wraparound, a compare and a
select per load that cost as much as the arithmetic of these loops: unsigned, a replay
on Adult runs about 1.6 times faster. Positions and indices are never negative here.

``present`` and its sparse loops are inlined into their callers by numba (a call per
example would cost more than the example); the cycles over a set of examples are kernels
of their own, called once per mini-epoch, which keeps the first compilation short: numba
inlines by copying the callee's code into every caller. The rules' small helpers
(``threshold``, ``multiplicity``) are not inlined by numba: they compile once, and LLVM
inlines them into each caller when it links them, which replays as fast.

The kernels compile without numba's reference counting (``_nrt=False``): passing arrays
to the per-example helpers would otherwise cost more than the arithmetic. So they never
allocate; the caller hands in every workspace array. ``learn_stream`` and
``replay_pass`` release the GIL, so a source's I/O thread keeps fetching while they
run; no other thread may touch the learner's arrays meanwhile.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.ring import EVICTED, FIRST, UNBUFFERED, evictions_for, ring_append
from streamlearn._kernels.rows import dot_within
from streamlearn._kernels.rules import RULE_KOZINEC, multiplicity, threshold

BETA, SQNORM, UPDATES, SCALE = 0, 1, 2, 3
#: unsigned steps for positions (see the module docstring)
_U1, _U2, _U3, _U4 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
#: ``stats`` counters filled by the kernels
STAT_UPDATE_EVENTS, STAT_PRESENTATIONS, STAT_MINI_EPOCHS, STAT_STREAM_MISTAKES = 0, 1, 2, 3
#: ``stats`` entries that are sizes, not counters: the examples each active-set level
#: held when the last replay pass collected it (levels 1, 2, 3)
STAT_LEVEL1, STAT_LEVEL2, STAT_LEVEL3 = 4, 5, 6
#: length of the ``stats`` array
N_STATS = 7
#: below this the Kozinec scale is folded back into the weights
_MIN_SCALE = 1e-100

BufferArrays = tuple[Any, ...]
#: (beta, sqnorm, updates, scale): ``scalars`` as values, while a kernel runs
State = tuple[float, float, float, float]
Rule = tuple[int, np.ndarray, float, float, bool, bool]
#: an example's slot: a Python int, or an unsigned numpy integer inside the kernels
Slot = int | np.integer[Any]
#: a set of examples copied contiguously: (indptr int64[n + 1] with indptr[0] = 0,
#: indices int32, values float64 (left unwritten for unit rules), labels int8[n],
#: sqnorms float64[n], slots int64[n])
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
    k: Slot,
    p: float,
    q: float,
    w: np.ndarray,
    scalars: np.ndarray,
    slot_alpha: np.ndarray,
    rho: float,
    unit: bool,
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
    if unit:
        unit_scatter_add(idx, start, stop, step, w)
    else:
        scatter_add(idx, val, start, stop, step, w)
    scalars[BETA] += step * rho
    alpha[k] += step * label
    scalars[UPDATES] += 1.0
    if scalars[SCALE] < _MIN_SCALE:
        _rescale(w, scalars, slot_alpha)


@kernel(inline=True)
def _store_state(state: State, scalars: np.ndarray) -> None:
    scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE] = state


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
    j = np.uint64(start)
    end = np.uint64(stop)
    while j + _U3 < end:
        s0 += w[np.uint32(idx[j])] * val[j]
        s1 += w[np.uint32(idx[j + _U1])] * val[j + _U1]
        s2 += w[np.uint32(idx[j + _U2])] * val[j + _U2]
        s3 += w[np.uint32(idx[j + _U3])] * val[j + _U3]
        j += _U4
    while j < end:
        s0 += w[np.uint32(idx[j])] * val[j]
        j += _U1
    return (s0 + s1) + (s2 + s3)


@kernel(inline=True)
def unit_sparse_sum(idx: np.ndarray, start: int, stop: int, w: np.ndarray) -> float:
    """:func:`sparse_dot` when every value is 1.0: the same partial sums, same order."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    j = np.uint64(start)
    end = np.uint64(stop)
    while j + _U3 < end:
        s0 += w[np.uint32(idx[j])]
        s1 += w[np.uint32(idx[j + _U1])]
        s2 += w[np.uint32(idx[j + _U2])]
        s3 += w[np.uint32(idx[j + _U3])]
        j += _U4
    while j < end:
        s0 += w[np.uint32(idx[j])]
        j += _U1
    return (s0 + s1) + (s2 + s3)


@kernel(inline=True)
def scatter_add(
    idx: np.ndarray, val: np.ndarray, start: int, stop: int, step: float, w: np.ndarray
) -> None:
    """w[idx[j]] += step val[j] over ``start:stop``."""
    j = np.uint64(start)
    end = np.uint64(stop)
    while j < end:
        w[np.uint32(idx[j])] += step * val[j]
        j += _U1


@kernel(inline=True)
def unit_scatter_add(idx: np.ndarray, start: int, stop: int, step: float, w: np.ndarray) -> None:
    """:func:`scatter_add` when every value is 1.0."""
    j = np.uint64(start)
    end = np.uint64(stop)
    while j < end:
        w[np.uint32(idx[j])] += step
        j += _U1


@kernel(inline=True)
def present(
    idx: np.ndarray,
    val: np.ndarray,
    start: int,
    stop: int,
    label: float,
    alpha: np.ndarray,
    k: Slot,
    x_sqnorm: float,
    w: np.ndarray,
    state: State,
    scalars: np.ndarray,
    slot_alpha: np.ndarray,
    rule: Rule,
) -> tuple[float, float, float, State]:
    """Present one example; update if the rule says so.

    The example is ``idx[start:stop]``, ``val[start:stop]`` with its slack count in
    ``alpha[k]``; ``state`` is ``(beta, sqnorm, updates, scale)``, passed by value so
    that a cycle keeps it in registers. Returns (how many times the example was added,
    its a . y and the rule's threshold before the update, the new state). ``scalars`` is
    only used to hand the state to Kozinec's update.
    """
    code, rule_params, rho, delta_sq, multi, unit = rule
    beta, sqnorm, t, scale = state
    # the augmented and slack terms are added last, as one offset: it is ready before the
    # sum is, so the sum's wait is followed by one multiplication and one addition
    offset = label * (rho * beta) + delta_sq * alpha[np.uint64(k)]
    dot = unit_sparse_sum(idx, start, stop, w) if unit else sparse_dot(idx, val, start, stop, w)
    p = label * dot + offset
    if code == RULE_KOZINEC:  # the only rule whose scale is not 1
        p *= scale
    thr = threshold(code, rule_params, label, sqnorm, t)
    if p > thr:
        return 0.0, p, thr, state
    q = x_sqnorm + rho * rho + delta_sq
    if code == RULE_KOZINEC:
        scalars[BETA] = beta
        scalars[SQNORM] = sqnorm
        scalars[UPDATES] = t
        scalars[SCALE] = scale
        _kozinec_update(  # the same argument types from every caller: compiled once
            idx, val, int(start), int(stop), label, alpha, np.uint64(k), p, q, w, scalars,
            slot_alpha, rho, bool(unit),
        )  # fmt: skip
        return 1.0, p, thr, (scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE])
    lam = multiplicity(code, rule_params, p, q, sqnorm, t) if multi else 1.0
    step = lam * label
    if unit:
        unit_scatter_add(idx, start, stop, step, w)
    else:
        scatter_add(idx, val, start, stop, step, w)
    alpha[np.uint64(k)] += lam
    new_state = (beta + step * rho, sqnorm + 2.0 * lam * p + lam * lam * q, t + lam, scale)
    return lam, p, thr, new_state


@kernel(inline=True)
def count_new(stats: np.ndarray, lam: float, p: float) -> None:
    """Count the presentation of a new example: ``stats`` also counts the examples the
    model got wrong just before learning them (progressive validation, at no extra
    cost: a new example's a . y is l f(x))."""
    stats[STAT_PRESENTATIONS] += 1
    if p <= 0.0:
        stats[STAT_STREAM_MISTAKES] += 1
    if lam > 0.0:
        stats[STAT_UPDATE_EVENTS] += 1


@kernel()
def forget_example(
    idx: np.ndarray,
    val: np.ndarray,
    start: int,
    stop: int,
    label: float,
    alpha: np.ndarray,
    k: Slot,
    x_sqnorm: float,
    w: np.ndarray,
    state: State,
    rule_code: int,
    rho: float,
    delta_sq: float,
) -> State:
    """Take example ``k`` (nonzeros ``idx[start:stop]``, slack count ``alpha[k]``) out of
    a: a -= alpha_k y_k, t -= alpha_k and ||a||^2 updated exactly; its slack count becomes
    0. For Kozinec, whose a is a convex combination, the rest is renormalised:
    a <- (a - lambda_k y_k) / (1 - lambda_k) with lambda_k its weight in the combination
    (nothing is left when a was y_k alone). Returns the new ``state``."""
    a_k = alpha[np.uint64(k)]
    if a_k == 0.0:
        return state
    beta, sqnorm, t, scale = state
    p = label * (sparse_dot(idx, val, start, stop, w) + rho * beta) + delta_sq * a_k
    q = x_sqnorm + rho * rho + delta_sq
    scatter_add(idx, val, start, stop, -a_k * label, w)
    alpha[np.uint64(k)] = 0.0
    beta -= a_k * label * rho
    if rule_code != RULE_KOZINEC:
        return beta, max(sqnorm - 2.0 * a_k * p + a_k * a_k * q, 0.0), t - a_k, scale
    weight = scale * a_k
    if weight >= 1.0:
        for i in range(w.shape[0]):
            w[i] = 0.0
        return 0.0, 0.0, t, 1.0
    p *= scale
    rest = 1.0 - weight
    sqnorm = (sqnorm - 2.0 * weight * p + weight * weight * q) / (rest * rest)
    return beta, max(sqnorm, 0.0), t, scale / rest


@kernel(inline=True)
def forget_evicted(
    reserve: int,
    buffer: BufferArrays,
    ring: np.ndarray,
    w: np.ndarray,
    state: State,
    rule: Rule,
    defer_until: int,
) -> State:
    """Take out of a the examples that storing one of ``reserve`` cells will evict (see
    :func:`~streamlearn._kernels.ring.evictions_for`), oldest first, but those the last
    replay saw: the evictions numbered below ``defer_until`` (counted as ``ring``
    counts them) stay in a until the learner takes them out at its next replay (see
    :meth:`~streamlearn.learn.state.LearnerState.begin_replay`)."""
    slot_start, slot_len, slot_label, slot_alpha, slot_sqnorm, arena_idx, arena_val = buffer
    capacity = slot_start.shape[0]
    evicted = evictions_for(reserve, slot_start, arena_idx.shape[0], ring)
    for e in range(max(defer_until - ring[EVICTED], 0), evicted):
        k = (ring[FIRST] + e) % capacity
        start = slot_start[k]
        state = forget_example(
            arena_idx, arena_val, start, start + slot_len[k], float(slot_label[k]), slot_alpha,
            k, slot_sqnorm[k], w, state, rule[0], rule[2], rule[3],
        )  # fmt: skip
    return state


@kernel(releases_gil=True)
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
    first: int,
    forget: bool,
    defer_until: int,
) -> int:
    """Store each example of the batch from position ``first`` on in the buffer (evicting
    the oldest, whose contributions leave a first when ``forget``, but those of the
    evictions numbered below ``defer_until``: see :func:`forget_evicted`), then present it.

    Stops before an example with more nonzeros than the buffer can ever hold and returns
    its position, or the number of examples at the end of the batch. Such an example
    goes to :func:`present_unbuffered`, and the caller carries on after it: kept out of
    this loop, its code is compiled only when an example needs it.
    """
    state = (scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE])
    n = indptr.shape[0] - 1
    for i in range(first, n):
        if indptr[i + 1] - indptr[i] > max_nnz:
            _store_state(state, scalars)
            return i
        state = store_and_present(
            i, indptr, indices, values, labels, x_sqnorms, buffer, ring, w, state, scalars,
            rule, stats, forget, defer_until,
        )  # fmt: skip
    _store_state(state, scalars)
    return n


@kernel(inline=True)
def store_and_present(
    i: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    labels: np.ndarray,
    x_sqnorms: np.ndarray,
    buffer: BufferArrays,
    ring: np.ndarray,
    w: np.ndarray,
    state: State,
    scalars: np.ndarray,
    rule: Rule,
    stats: np.ndarray,
    forget: bool,
    defer_until: int,
) -> State:
    """Store example ``i`` of the batch in the buffer (evicting the oldest, whose
    contributions leave a first when ``forget``, see :func:`forget_evicted`), present it
    and count it; returns the new ``state``."""
    slot_start, slot_alpha, arena_idx, arena_val = buffer[0], buffer[3], buffer[5], buffer[6]
    lo = indptr[i]
    hi = indptr[i + 1]
    label = float(labels[i])
    if forget:
        state = forget_evicted(max(hi - lo, 1), buffer, ring, w, state, rule, defer_until)
    slot = ring_append(indices, values, lo, hi, label, x_sqnorms[i], buffer, ring)
    start = slot_start[slot]
    lam, p, _, state = present(
        arena_idx, arena_val, start, start + hi - lo, label, slot_alpha, slot,
        x_sqnorms[i], w, state, scalars, slot_alpha, rule,
    )  # fmt: skip
    count_new(stats, lam, p)
    return state


@kernel(releases_gil=True)
def learn_stream_answering(
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
    forget: bool,
    defer_until: int,
    before: np.ndarray,
    q_indptr: np.ndarray,
    q_indices: np.ndarray,
    q_values: np.ndarray,
    factor: float,
    scores: np.ndarray,
    cursor: np.ndarray,
) -> bool:
    """:func:`learn_stream` from row ``cursor[0]`` on, scoring question ``q`` (from
    ``cursor[1]`` on) just before row ``before[q]`` is presented (after the last row when
    it is the number of rows): ``scores[q]`` = factor * scale * (w . x_q + rho * beta),
    features beyond ``w`` weighing 0.

    Stops before an example with more nonzeros than the buffer can ever hold, its
    questions answered, and returns False with ``cursor`` at it; True at the end.
    """
    rho = rule[2]
    state = (scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE])
    n = indptr.shape[0] - 1
    n_questions = before.shape[0]
    i = cursor[0]
    q = cursor[1]
    while True:
        while q < n_questions and before[q] == i:
            dot = dot_within(q_indices, q_values, q_indptr[q], q_indptr[q + 1], w, 0.0)
            out = factor * state[3]
            scores[q] = dot * out + rho * state[0] * out
            q += 1
        if i >= n:
            break
        if indptr[i + 1] - indptr[i] > max_nnz:
            _store_state(state, scalars)
            cursor[0] = i
            cursor[1] = q
            return False
        state = store_and_present(
            i, indptr, indices, values, labels, x_sqnorms, buffer, ring, w, state, scalars,
            rule, stats, forget, defer_until,
        )  # fmt: skip
        i += 1
    _store_state(state, scalars)
    cursor[0] = n
    cursor[1] = q
    return True


@kernel()
def present_unbuffered(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    labels: np.ndarray,
    x_sqnorms: np.ndarray,
    i: int,
    ring: np.ndarray,
    slot_alpha: np.ndarray,
    w: np.ndarray,
    scalars: np.ndarray,
    rule: Rule,
    stats: np.ndarray,
    loose: np.ndarray,
    forget: bool,
) -> None:
    """Present example ``i`` of the batch from the batch itself, without storing it (it
    has more nonzeros than the buffer can ever hold); counted as :func:`learn_stream`
    counts, and in the ring's count of such examples. ``loose`` (one float64) holds its
    slack meanwhile. When ``forget`` (window semantics: replay makes a a combination of
    the buffered examples), it is judged but not learned: it could never be in the buffer."""
    ring[UNBUFFERED] += 1
    label = float(labels[i])
    if forget:
        rho = rule[2]
        dot = sparse_dot(indices, values, indptr[i], indptr[i + 1], w)
        count_new(stats, 0.0, label * scalars[SCALE] * (dot + rho * scalars[BETA]))
        return
    state = (scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE])
    loose[0] = 0.0
    lam, p, _, state = present(
        indices, values, indptr[i], indptr[i + 1], label, loose, 0, x_sqnorms[i],
        w, state, scalars, slot_alpha, rule,
    )  # fmt: skip
    _store_state(state, scalars)
    count_new(stats, lam, p)


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
    slot: Slot,
    unit: bool,
) -> None:
    """Copy an example to position ``n`` of a compact set.

    With ``unit`` (every value is 1.0) only the indices are copied: the kernels never
    read the values then, and writing them cost a seventh of a replay on Adult.
    """
    ptr, dst_idx, dst_val, dst_label, dst_sqnorm, dst_slot = dst
    pos = np.uint64(ptr[n])
    j = np.uint64(start)
    end = np.uint64(stop)
    if unit:
        while j < end:
            dst_idx[pos] = idx[j]
            pos += _U1
            j += _U1
    else:
        while j < end:
            dst_idx[pos] = idx[j]
            dst_val[pos] = val[j]
            pos += _U1
            j += _U1
    ptr[n + 1] = pos
    dst_label[n] = label
    dst_sqnorm[n] = x_sqnorm
    dst_slot[n] = slot


@kernel(inline=True)
def _within(p: float, thr: float, factor: float) -> bool:
    """Whether a . y = p lies within ``factor`` times the threshold (an active-set test).

    For a negative threshold "factor times" reads thr + (factor - 1) |thr|, so a level
    is always at least as loose as the update condition.
    """
    return p <= thr + (factor - 1.0) * abs(thr)


@kernel()
def gather(slots: np.ndarray, buffer: BufferArrays, dst: CompactSet, unit: bool) -> None:
    """Copy the buffer slots ``slots``, in that order, into the compact set ``dst``
    (only their indices when ``unit``): the full epoch reads this copy, so one cycle
    kernel serves it and every active-set level, and its presentations read memory
    sequentially."""
    slot_start, slot_len, slot_label, _, slot_sqnorm, arena_idx, arena_val = buffer
    for i in range(slots.shape[0]):
        k = np.uint64(slots[i])
        start = slot_start[k]
        _keep(dst, i, arena_idx, arena_val, start, start + slot_len[k], float(slot_label[k]),
              slot_sqnorm[k], k, unit)  # fmt: skip


@kernel()
def _cycle_set(
    source: CompactSet,
    n_source: int,
    shrink: bool,
    next_set: CompactSet,
    collect: bool,
    next_factor: float,
    slot_alpha: np.ndarray,
    w: np.ndarray,
    scalars: np.ndarray,
    rule: Rule,
    stats: np.ndarray,
) -> tuple[int, int, int]:
    """Present a compact set once.

    With ``collect``, the examples within ``next_factor`` of the threshold are copied
    into ``next_set``. With ``shrink``, ``source`` keeps in place only the examples that
    meet the update condition when presented (copying forward within the same arrays is
    safe: writes never pass reads). Returns (update events, size of the next set, size
    of ``source`` now).
    """
    ptr, idx, val, labels, sqnorms, slots = source
    unit = rule[5]
    state = (scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE])
    events = 0
    n_next = 0
    n_kept = 0
    for i in range(n_source):
        lo = ptr[i]
        hi = ptr[i + 1]
        label = float(labels[i])
        slot = slots[i]
        x_sqnorm = sqnorms[i]
        lam, p, thr, state = present(
            idx, val, lo, hi, label, slot_alpha, slot, x_sqnorm, w, state, scalars, slot_alpha,
            rule,
        )  # fmt: skip
        if lam > 0.0:
            events += 1
        if collect and _within(p, thr, next_factor):
            _keep(next_set, n_next, idx, val, lo, hi, label, x_sqnorm, slot, unit)
            n_next += 1
        if shrink and p <= thr:
            _keep(source, n_kept, idx, val, lo, hi, label, x_sqnorm, slot, unit)
            n_kept += 1
    _store_state(state, scalars)
    stats[STAT_UPDATE_EVENTS] += events
    stats[STAT_PRESENTATIONS] += n_source
    stats[STAT_MINI_EPOCHS] += 1
    return events, n_next, n_kept if shrink else n_source


@kernel(releases_gil=True)
def replay_pass(
    order: np.ndarray,
    buffer: BufferArrays,
    w: np.ndarray,
    scalars: np.ndarray,
    rule: Rule,
    schedule: np.ndarray,
    stats: np.ndarray,
    level1: CompactSet,
    level2: CompactSet,
    level3: CompactSet,
) -> int:
    """One full epoch over the buffer slots in ``order``, then its active-set rounds.

    ``schedule`` is float64 ``[use_active_sets, c1, c2, nep1, nep2, nep3, shrink,
    continuing]``. The full epoch collects level 1 (factor c1); each cycle over level 1
    collects level 2 (c2); each cycle over level 2 collects level 3 (factor 1), presented
    up to nep3 times; level 2 is cycled up to nep2 times, level 1 up to nep1 times. A
    round stops early when it makes no update. With ``shrink``, each cycle over level 3
    keeps in it only the examples that were updated. Returns the number of update events
    of the full epoch: 0 means the buffer has converged. The sizes of the levels as last
    collected go to ``stats[STAT_LEVEL1:STAT_LEVEL3 + 1]`` (0 for a level not reached).

    With ``continuing``, there is no epoch: up to nep1 more rounds go over the level 1
    that the last call collected (its size read from the stats), and the call returns
    the update events of the last level-1 cycle (0: level 1 no longer updates). A pass
    run as an epoch with nep1 = 0 and then one round per call is, bit for bit, the pass
    of one call; between the calls the caller may look at the certificate.

    Workspaces: ``level1``, ``level2`` and ``level3`` are compact sets (see
    :data:`CompactSet`) with room for every example in ``order``. Every cycle reads a
    copy laid out in presentation order, so it reads memory sequentially (presenting
    the buffer in a random order directly costs about three times as much): the full
    epoch first copies the buffer into ``level2``, which is free until level 1 is
    cycled, and a single cycle kernel, compiled once, serves the epoch and the levels.
    """
    use_levels = schedule[0] != 0.0
    c1, c2 = schedule[1], schedule[2]
    nep1, nep2, nep3 = int(schedule[3]), int(schedule[4]), int(schedule[5])
    shrink = schedule[6] != 0.0
    continuing = schedule[7] != 0.0
    # plain bools, not literals: numba compiles a kernel once for every set of argument
    # types, literal values included, and one _cycle_set serving all three levels is as
    # fast as one per level
    no, yes = bool(False), bool(True)  # noqa: UP018
    slot_alpha = buffer[3]
    full_events = 0
    if continuing:  # more rounds over the level 1 the last call collected
        n1 = stats[STAT_LEVEL1]
    else:
        gather(order, buffer, level2, rule[5])  # level 2 is free until level 1 is cycled
        full_events, n1, _ = _cycle_set(
            level2, order.shape[0], no, level1, use_levels, c1, slot_alpha, w, scalars, rule,
            stats,
        )  # fmt: skip
        stats[STAT_LEVEL1], stats[STAT_LEVEL2], stats[STAT_LEVEL3] = 0, 0, 0
        if full_events == 0 or not use_levels:
            return full_events
        stats[STAT_LEVEL1] = n1
    round_events = 0
    for _ in range(nep1):
        round_events, n2, _ = _cycle_set(
            level1, n1, no, level2, yes, c2, slot_alpha, w, scalars, rule, stats
        )
        events = round_events
        stats[STAT_LEVEL2] = n2
        if events == 0:
            break
        for _ in range(nep2):
            events, n3, _ = _cycle_set(
                level2, n2, no, level3, yes, 1.0, slot_alpha, w, scalars, rule, stats
            )
            stats[STAT_LEVEL3] = n3
            if events == 0:
                break
            for _ in range(nep3):
                events, _, n3 = _cycle_set(
                    level3, n3, shrink, level3, no, 1.0, slot_alpha, w, scalars, rule, stats
                )
                if events == 0:
                    break
    return round_events if continuing else full_events


def replay_kernel(rule: Rule) -> Any:
    """The replay kernel for ``rule``: :func:`replay_pass` compiled with the rule's code
    and multiple-update flag as constants.

    The compiled cycles then leave out every other rule's branches: on Adult PDM's
    replay takes 0.85 of the time of one kernel serving every rule, PFM's 0.87 to 0.89,
    with the same results. Each (code, flag) compiles when a learner first uses it. With
    the kernels compiled ahead of time, the pairs listed in ``_exports.py`` have theirs,
    and every other pair runs :func:`replay_pass` compiled for any rule.

    >>> from streamlearn._kernels.rules import RULE_PDM
    >>> pdm = (RULE_PDM, np.zeros(2), 1.0, 1.0, True, True)
    >>> replay_kernel(pdm) is replay_kernel((RULE_PDM, np.ones(2), 2.0, 0.0, True, False))
    True
    >>> replay_kernel(pdm) is replay_kernel((RULE_PDM, np.zeros(2), 1.0, 1.0, False, True))
    False
    """
    made = _replay_for_rule(int(rule[0]), bool(rule[4]))
    if hasattr(replay_pass, "exports") and not hasattr(made, "exports"):
        # compiled ahead of time for every rule where this pair was not (the build
        # compiles the pairs the defaults use; each costs seconds of every install)
        return replay_pass
    return made


@functools.cache
def _replay_for_rule(code: int, multi: bool) -> Any:
    """:func:`replay_pass` for rules with this code and multiple-update flag; numba
    takes the closure's ``code`` and ``multi`` as constants (and caches each pair)."""

    @kernel(releases_gil=True)
    def replay_rule(
        order: np.ndarray,
        buffer: BufferArrays,
        w: np.ndarray,
        scalars: np.ndarray,
        rule: Rule,
        schedule: np.ndarray,
        stats: np.ndarray,
        level1: CompactSet,
        level2: CompactSet,
        level3: CompactSet,
    ) -> int:
        _, params, rho, delta_sq, _, unit = rule
        return replay_pass(
            order, buffer, w, scalars, (code, params, rho, delta_sq, multi, unit), schedule,
            stats, level1, level2, level3,
        )  # fmt: skip

    return replay_rule
