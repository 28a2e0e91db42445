"""The replay driver: full passes over a learner's buffer until it converges.

:meth:`LinearLearner.replay <streamlearn.learn.base.LinearLearner.replay>` decides how
many passes a replay may take (the caller's budget, the whole ``max_passes`` after
evictions) and runs them here: each pass is an epoch over the window in a fresh
permutation, then the active sets' level-1 rounds one kernel call at a time, so that a
learner with a target gap (PDM's eps) stops between two rounds as soon as its
certificate reaches it, and an ``interrupt`` (a daemon's bound on how long a replay keeps
the stream waiting) can end the pass there. :func:`epoch_pass` is one plain pass, the
online algorithm's epoch.

>>> import numpy as np
>>> from streamlearn import PDM
>>> learner = PDM(eps=0.1, delta=1.0).learn(np.eye(4), [1, -1, 1, -1])
>>> run_passes(learner, budget=50), learner.state.stopped_by
(1, 'no update')
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import values_all_one
from streamlearn._kernels.engine import CompactSet, Rule, replay_kernel
from streamlearn.errors import DivergenceError
from streamlearn.learn.certificate import certificate
from streamlearn.learn.state import LearnerState
from streamlearn.replay import ActiveSetSchedule, pass_permutation


class Replayed(Protocol):
    """What the driver needs of a learner (:class:`~streamlearn.learn.base.LinearLearner`)."""

    state: LearnerState
    seed: int
    rho: float

    @property
    def algorithm(self) -> str: ...
    def kernel_rule(self, multi: bool, unit: bool) -> Rule: ...
    def uses_multiple_updates(self) -> bool: ...
    def pass_schedule(self) -> ActiveSetSchedule: ...
    def renormalize(self) -> None: ...
    def keep_in_range(self) -> None: ...
    def target_gap(self) -> float | None: ...
    def divergence_hint(self) -> str: ...


def run_passes(learner: Replayed, budget: int, interrupt: Callable[[], bool] | None = None) -> int:
    """Up to ``budget`` full replay passes of ``learner``; stops at convergence (a pass
    without update, or the target gap certified: ``state.stopped_by`` says which) or when
    ``interrupt`` answers True after a round. Returns the passes run."""
    state = learner.state
    buf = state.buffer
    slots = buf.live_slots()
    if slots.shape[0] == 0:
        state.converged = True
        return 0
    multi = learner.uses_multiple_updates()
    learner.renormalize()
    levels = level_workspaces(slots.shape[0], buf.nnz)
    rule = learner.kernel_rule(multi, _buffer_values_all_one(state, slots))
    replay = replay_kernel(rule)
    target = learner.target_gap()
    for done in range(budget):
        learner.keep_in_range()
        order = slots[pass_permutation(learner.seed, state.passes, slots.shape[0])]
        schedule = learner.pass_schedule().as_array(first_pass=state.passes == 0)
        events, certified = _one_pass(
            learner, replay, order, rule, schedule, target, levels, interrupt
        )
        state.passes += 1
        if not math.isfinite(state.sqnorm):
            raise DivergenceError(
                f"{learner.algorithm}: the weights overflowed during replay pass "
                f"{state.passes}; {learner.divergence_hint()}"
            )
        if events == 0:
            state.converged, state.stopped_by = True, "no update"
            return done + 1
        if certified or (target is not None and _certified(learner, target)):
            state.converged, state.stopped_by = True, "certified gap"
            return done + 1
        state.converged = False
        if interrupt is not None and interrupt():
            return done + 1
    return budget


def epoch_pass(learner: Replayed) -> bool:
    """One plain pass over ``learner``'s buffer in arrival order: no permutation, no
    active sets, no multiple updates. Returns whether it made no update."""
    state = learner.state
    slots = state.buffer.live_slots()
    if slots.shape[0] == 0:
        return True
    level1, level2, level3 = level_workspaces(slots.shape[0], state.buffer.nnz)
    learner.renormalize()
    learner.keep_in_range()
    rule = learner.kernel_rule(False, _buffer_values_all_one(state, slots))
    events = replay_kernel(rule)(
        slots, state.buffer.arrays(), state.weights, state.scalars, rule,
        ActiveSetSchedule(enabled=False).as_array(first_pass=False), state.stats,
        level1, level2, level3,
    )  # fmt: skip
    state.passes += 1
    state.converged = events == 0
    state.stopped_by = "no update" if state.converged else None
    return state.converged


def _one_pass(
    learner: Replayed,
    replay: Any,
    order: npt.NDArray[np.int64],
    rule: Rule,
    schedule: npt.NDArray[np.float64],
    target: float | None,
    levels: tuple[CompactSet, CompactSet, CompactSet],
    interrupt: Callable[[], bool] | None,
) -> tuple[int, bool]:
    """One full replay pass: the epoch, then its level-1 rounds one kernel call each.
    Returns the epoch's update events and whether the certificate stopped the pass."""
    state = learner.state
    arrays = state.buffer.arrays()
    epoch = schedule.copy()
    epoch[3] = 0.0  # no rounds: they follow one call at a time
    events = replay(order, arrays, state.weights, state.scalars, rule, epoch, state.stats, *levels)
    if events == 0 or schedule[0] == 0.0:
        return int(events), False
    one_round = schedule.copy()
    one_round[3], one_round[7] = 1.0, 1.0
    for _ in range(int(schedule[3])):
        updated = replay(
            order, arrays, state.weights, state.scalars, rule, one_round, state.stats, *levels
        )
        if updated == 0:
            break
        if target is not None and _certified(learner, target):
            return int(events), True
        if interrupt is not None and interrupt():
            break
    return int(events), False


def _certified(learner: Replayed, target: float) -> bool:
    return certificate(learner.state, learner.rho).gap <= target


def _buffer_values_all_one(state: LearnerState, slots: npt.NDArray[np.int64]) -> bool:
    buf = state.buffer
    return bool(values_all_one(slots, buf.slot_start, buf.slot_len, buf.arena_val))


def level_workspaces(n_examples: int, nnz: int) -> tuple[CompactSet, CompactSet, CompactSet]:
    """Room for the three active-set levels of a replay pass, each a compact copy of up
    to ``n_examples`` examples and ``nnz`` nonzeros (so up to three times the buffer's
    nonzeros, for the length of a replay; the operating system commits only the pages
    a pass writes, and a pass without active sets writes only the second)."""

    def compact() -> CompactSet:
        return (
            np.zeros(n_examples + 1, dtype=np.int64),
            np.empty(nnz, dtype=np.int32),
            np.empty(nnz, dtype=np.float64),
            np.empty(n_examples, dtype=np.int8),
            np.empty(n_examples, dtype=np.float64),
            np.empty(n_examples, dtype=np.int64),
        )

    return compact(), compact(), compact()
