"""What every learner of the perceptron family shares: state, learning, replay, certificate.

A learner is a thin class over one engine (:mod:`streamlearn._kernels.engine`). Its
hyperparameters are exactly its ``__init__`` arguments, stored under the same names; it
maps them to the kernel's rule code and parameters and owns the weights, the bias
weight beta, the update count t, ||a||^2 and the replay buffer.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import (
    all_ones,
    buffer_certificate,
    check_rows,
    decision_values,
    learn_stream,
    present_unbuffered,
    row_sqnorms,
    values_all_one,
)
from streamlearn._kernels.engine import N_STATS, STAT_LEVEL1, CompactSet, replay_kernel
from streamlearn._kernels.rows import ROW_NOT_CANONICAL, ROW_OK
from streamlearn.errors import (
    DivergenceError,
    InvalidParameterError,
    StateError,
    check_state_header,
)
from streamlearn.learn.inputs import as_batch, as_rows
from streamlearn.replay import ActiveSetSchedule, ReplayBuffer, ReplaySchedule, pass_permutation
from streamlearn.types import Batch, features_spanned

STATE_FORMAT = "streamlearn.learner"
STATE_VERSION = 1
#: examples that fix Delta when ``delta='auto'`` (capped by the buffer size)
AUTO_DELTA_WINDOW = 1000
#: parameters a learner's state is built with (Delta, the augmentation rho, the buffer's
#: capacities): a learned state cannot go on under other values of them, where it can
#: under new values of the rule's own (eps, tau, ...)
STATE_BUILT_WITH = ("delta", "rho", "buffer_size", "buffer_nnz")
_BETA, _SQNORM, _UPDATES, _SCALE = range(4)


class LinearLearner:
    """Base class: a linear classifier learned by a perceptron-family update rule.

    Subclasses set ``algorithm`` and ``rule`` and implement :meth:`_rule_params`.
    Common parameters (keyword-only in every subclass):

    rho
        Augmentation: each x becomes [x, rho]; the bias is rho * beta. Default 1.
    delta
        2-norm soft-margin extension Delta >= 0, or ``'auto'`` (default): the first
        min(1000, buffer_size) examples fix Delta = R/10 with R their largest
        ||[x, rho]||; learning starts once they have arrived (or at :meth:`replay`).
        ``delta=0`` is the hard margin.
    buffer_size, buffer_nnz
        Replay buffer capacity in examples and in stored nonzeros (12 bytes each).
    seed
        Fixes the order of every replay pass.
    active_sets
        The nested active-set schedule of replay passes.
    max_passes
        Default bound on full replay passes per :meth:`replay` call.
    """

    algorithm: ClassVar[str] = ""
    rule: ClassVar[int] = -1
    #: multiple updates at once (PDM, PFM) are available to this rule
    supports_multiple_updates: ClassVar[bool] = False

    def __init__(
        self,
        *,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.rho = _positive("rho", rho)
        if delta != "auto":
            delta = _non_negative("delta", delta)
        self.delta = delta
        self.buffer_size = _count("buffer_size", buffer_size)
        self.buffer_nnz = _count("buffer_nnz", buffer_nnz)
        if not isinstance(seed, int | np.integer) or not 0 <= seed < 2**64:
            raise InvalidParameterError(
                f"seed must be an integer in [0, 2^64) (checkpoints hold 64 bits), got {seed!r}"
            )
        self.seed = int(seed)
        if active_sets is not None and not isinstance(active_sets, ActiveSetSchedule):
            raise InvalidParameterError("active_sets must be an ActiveSetSchedule")
        self.active_sets = active_sets
        self.max_passes = _count("max_passes", max_passes)
        self._reset_state()

    # -- hyperparameters ---------------------------------------------------------------

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def get_params(self) -> dict[str, Any]:
        """The hyperparameters, as passed to ``__init__``."""
        return {name: getattr(self, name) for name in self._param_names()}

    def plain_params(self) -> dict[str, Any]:
        """:meth:`get_params` with the active-set schedule as a plain dict (or None)."""
        params = self.get_params()
        if self.active_sets is not None:
            params["active_sets"] = self.active_sets.to_dict()
        return params

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def _rule_params(self) -> npt.NDArray[np.float64]:
        """The kernel's float64 rule parameters for the current state."""
        raise NotImplementedError

    def _kernel_rule(
        self, multi: bool, unit: bool
    ) -> tuple[int, npt.NDArray[np.float64], float, float, bool, bool]:
        """The engine's ``(code, rule_params, rho, delta_sq, multi, unit)``; ``unit``: every
        value of the examples to present is 1.0."""
        return (self.rule, self._rule_params(), self.rho, self._delta_sq, multi, unit)

    def _buffer_values_all_one(self, slots: npt.NDArray[np.int64]) -> bool:
        buf = self._buffer
        return bool(values_all_one(slots, buf.slot_start, buf.slot_len, buf.arena_val))

    def _multiple_updates(self) -> bool:
        return bool(self.supports_multiple_updates and getattr(self, "multiple_updates", False))

    @property
    def _schedule(self) -> ActiveSetSchedule:
        return self.active_sets if self.active_sets is not None else ActiveSetSchedule()

    # -- state ---------------------------------------------------------------------------

    def _reset_state(self) -> None:
        self._buffer = ReplayBuffer(self.buffer_size, self.buffer_nnz)
        self._w = np.zeros(16, dtype=np.float64)
        self._scalars = np.array([0.0, 0.0, 0.0, 1.0])
        self._stats = np.zeros(N_STATS, dtype=np.int64)
        self._n_features = 0
        self._passes = 0
        self._converged = False
        self._examples_seen = 0
        self._delta_value: float | None = None if self.delta == "auto" else float(self.delta)
        self._pending: list[Batch] = []
        self._window_seen = 0
        self._window_max_sqnorm = 0.0

    @property
    def delta_(self) -> float | None:
        """The Delta in use; None while ``delta='auto'`` still waits for its examples."""
        return self._delta_value

    @property
    def n_features_in_(self) -> int:
        """One more than the largest feature index seen."""
        return self._n_features

    def features_to_learn(self) -> int:
        """One more than the largest feature index the learner has weights for or will
        have them for: those of the examples ``delta='auto'`` still holds too.

        >>> from streamlearn import PDM
        >>> model = PDM(eps=0.1).learn(np.eye(3), [1, -1, 1])
        >>> model.n_features_in_, model.features_to_learn()
        (0, 3)
        """
        return max([self._n_features, *(features_spanned(b.indices) for b in self._pending)])

    @property
    def updates(self) -> float:
        """t, the number of updates (a multiple update of lambda counts lambda)."""
        return float(self._scalars[_UPDATES])

    @property
    def examples_presented(self) -> int:
        """New examples presented so far (not those ``delta='auto'`` still holds)."""
        return self._examples_seen

    @property
    def stream_mistakes(self) -> int:
        """New examples the model got wrong just before learning them (progressive)."""
        return int(self._stats[3])

    @property
    def _output_scale(self) -> float:
        """Factor from the engine's weights to the reported ones (PAUM's learning rate)."""
        return float(self._scalars[_SCALE])

    @property
    def coef_(self) -> npt.NDArray[np.float64]:
        """Dense weights w over features ``0 .. n_features_in_ - 1``."""
        return self._w[: self._n_features] * self._output_scale

    @property
    def intercept_(self) -> float:
        """The bias rho * beta."""
        return float(self.rho * self._scalars[_BETA] * self._output_scale)

    @property
    def alpha_(self) -> npt.NDArray[np.float64]:
        """Slack coordinates alpha_k of the buffered examples, oldest first, in the units of
        ``coef_`` (a . y_k = l_k (w . x_k + b) + Delta^2 alpha_k)."""
        return self._buffer.alpha() * self._output_scale

    @property
    def buffer(self) -> ReplayBuffer:
        """The replay buffer (read it, do not modify it)."""
        return self._buffer

    # -- learning ------------------------------------------------------------------------

    def learn(self, X: Any, y: Any) -> Self:
        """Present each example once, in order, storing it in the replay buffer.

        X is a scipy sparse matrix, a ``(indptr, indices, values)`` triple or a dense
        2-D array; y holds +1/-1 (or 0/1, or booleans).
        """
        self.learn_batch(as_batch(X, y))
        return self

    def learn_batch(self, batch: Batch) -> None:
        """:meth:`learn` for a batch that is already checked (from the parser)."""
        if self._delta_value is None:
            batch = self._hold_for_auto_delta(batch)
            if self._delta_value is None:
                return
        self._present_stream(batch)

    def replay(self, max_passes: int | None = None) -> Self:
        """Cycle the buffer with the active sets until a full pass makes no update.

        At most ``max_passes`` full passes (default: the ``max_passes`` parameter);
        :attr:`converged` says whether the last full pass made no update.
        """
        self._flush_pending()
        budget = self.max_passes if max_passes is None else _count("max_passes", max_passes)
        self._run_passes(budget)
        return self

    def learn_on_schedule(self, batch: Batch, schedule: ReplaySchedule, examples_seen: int) -> int:
        """:meth:`learn_batch`, replaying wherever ``schedule`` says once
        ``examples_seen`` stream examples came before; returns the new count."""
        start = 0
        for size in schedule.split(examples_seen, batch.n_examples):
            self.learn_batch(batch.slice(start, start + size))
            passes = schedule.replays_after(examples_seen, size)
            examples_seen += size
            start += size
            if passes:
                self.replay(max_passes=passes)
        return examples_seen

    def flush(self) -> Self:
        """Start learning the examples held back while ``delta='auto'`` waits for its
        window: Delta is fixed from those that arrived. :meth:`replay` does this too."""
        self._flush_pending()
        return self

    def epoch_pass(self) -> bool:
        """One plain pass over the buffer in arrival order: no permutation, no active
        sets, no multiple updates (an epoch of the online algorithm). Returns whether it
        made no update."""
        self._flush_pending()
        slots = self._buffer.live_slots()
        if slots.shape[0] == 0:
            return True
        level1, level2, level3 = _level_workspaces(slots.shape[0], self._buffer.nnz)
        rule = self._kernel_rule(False, self._buffer_values_all_one(slots))
        events = replay_kernel(rule)(
            slots, self._buffer.arrays(), self._w, self._scalars, rule,
            ActiveSetSchedule(enabled=False).as_array(first_pass=False), self._stats,
            level1, level2, level3,
        )  # fmt: skip
        self._passes += 1
        self._converged = events == 0
        return self._converged

    def fit(self, X: Any, y: Any) -> Self:
        """Learn X, y once and replay to convergence: batch use, as in the papers."""
        return self.learn(X, y).replay()

    def _run_passes(self, budget: int) -> int:
        """Up to ``budget`` full replay passes; stops at convergence. Returns passes run."""
        slots = self._buffer.live_slots()
        if slots.shape[0] == 0:
            self._converged = True
            return 0
        buf = self._buffer
        multi = self._multiple_updates()
        level1, level2, level3 = _level_workspaces(slots.shape[0], buf.nnz)
        rule = self._kernel_rule(multi, self._buffer_values_all_one(slots))
        replay = replay_kernel(rule)
        for done in range(budget):
            order = slots[pass_permutation(self.seed, self._passes, slots.shape[0])]
            schedule = self._schedule.as_array(first_pass=self._passes == 0)
            events = replay(
                order, buf.arrays(), self._w, self._scalars, rule, schedule, self._stats,
                level1, level2, level3,
            )  # fmt: skip
            self._passes += 1
            if not math.isfinite(self._scalars[_SQNORM]):
                raise DivergenceError(
                    f"{self.algorithm}: the weights overflowed during replay pass "
                    f"{self._passes}; {self._divergence_hint()}"
                )
            if events == 0:
                self._converged = True
                return done + 1
            self._converged = False
        return budget

    def _divergence_hint(self) -> str:
        return "check the parameters"

    @property
    def _delta_sq(self) -> float:
        delta = self._delta_value or 0.0
        return delta * delta

    def _hold_for_auto_delta(self, batch: Batch) -> Batch:
        """Keep examples until the auto-Delta window is full; then return all of them."""
        window = min(AUTO_DELTA_WINDOW, self.buffer_size)
        take = min(window - self._window_seen, batch.n_examples)
        if take > 0:
            head = batch.slice(0, take)
            sqnorms = row_sqnorms(head.indptr, head.values)
            self._window_max_sqnorm = max(self._window_max_sqnorm, float(sqnorms.max()))
            self._window_seen += take
        self._pending.append(Batch.concatenate([batch]))  # a copy: the caller may reuse arrays
        if self._window_seen < window:
            return Batch.concatenate([])
        return self._release_pending()

    def _release_pending(self) -> Batch:
        radius = math.sqrt(self._window_max_sqnorm + self.rho * self.rho)
        self._delta_value = radius / 10.0
        held = Batch.concatenate(self._pending)
        self._pending = []
        return held

    def _flush_pending(self) -> None:
        if self._delta_value is None and self._window_seen > 0:
            self._present_stream(self._release_pending())

    def _present_stream(self, batch: Batch) -> None:
        if batch.n_examples == 0:
            return
        self._grow_weights(batch.max_index + 1)
        buf = self._buffer
        buf.reserve_for(batch.nnz + batch.n_examples)
        updates_before = self._scalars[_UPDATES]
        sqnorms = row_sqnorms(batch.indptr, batch.values)
        rule = self._kernel_rule(False, bool(all_ones(batch.values)))
        first = 0
        while first < batch.n_examples:
            first = learn_stream(
                batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, buf.arrays(),
                buf.ring, buf.max_nnz, self._w, self._scalars, rule, self._stats, first,
            )  # fmt: skip
            if first < batch.n_examples:  # more nonzeros than the buffer can ever hold
                present_unbuffered(
                    batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, first,
                    buf.ring, buf.slot_alpha, self._w, self._scalars, rule, self._stats,
                    np.zeros(1),
                )  # fmt: skip
                first += 1
        self._examples_seen += batch.n_examples
        if self._scalars[_UPDATES] != updates_before:
            self._converged = False

    def _grow_weights(self, n_features: int) -> None:
        if n_features > self._w.shape[0]:
            grown = np.zeros(max(2 * self._w.shape[0], n_features), dtype=np.float64)
            grown[: self._w.shape[0]] = self._w
            self._w = grown
        self._n_features = max(self._n_features, n_features)

    # -- prediction ----------------------------------------------------------------------

    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:
        """w . x + rho * beta for every row of X (features never seen weigh 0)."""
        indptr, indices, values = as_rows(X)
        return decision_values(
            indptr, indices, values, self._w * self._output_scale, self.intercept_
        )

    def predict(self, X: Any) -> npt.NDArray[np.int64]:
        """+1 where the decision value is positive, -1 elsewhere."""
        return np.where(self.decision_function(X) > 0.0, 1, -1).astype(np.int64)

    # -- certificate ---------------------------------------------------------------------

    def _certificate(self) -> tuple[float, float, float, float, float]:
        """The figures behind the certificate, from one pass over the buffered examples.

        Returns ``(||a||, ||h||, s, min_neg, min_pos)``: ``a`` restricted to the
        coordinates the buffered examples live in (w, beta and their own slack
        coordinates); the sum ``h = sum_k alpha_k y_k`` over the buffered examples with
        ``s = sum_k alpha_k``; and the smallest a . y_k over the buffered negatives and
        positives (+inf for a class with none). ``h / s`` lies in the convex hull of the
        buffer, so ||h|| / s bounds the buffer's maximum margin from above even after
        older examples were evicted (their contributions stay in the weights). Without
        eviction ``h = a`` and ``s = t``.
        """
        buf = self._buffer
        slots = buf.live_slots()
        alpha = buf.slot_alpha[slots]
        scale = float(self._scalars[_SCALE])
        beta = float(self._scalars[_BETA])
        slack_sq = self._delta_sq * float(alpha @ alpha)
        weights = self._w[: self._n_features]
        own = scale * math.sqrt(float(weights @ weights) + beta * beta + slack_sq)
        coef = alpha * buf.slot_label[slots]
        lowest = np.empty(2)
        hull_w = np.zeros(self._n_features)
        buffer_certificate(
            slots, buf.slot_start, buf.slot_len, buf.slot_label, buf.slot_alpha, buf.arena_idx,
            buf.arena_val, self._w, self._scalars, self.rho, self._delta_sq, coef, lowest, hull_w,
        )  # fmt: skip
        hull_beta = self.rho * float(coef.sum())
        hull = math.sqrt(float(hull_w @ hull_w) + hull_beta * hull_beta + slack_sq)
        return own, hull, float(alpha.sum()), float(lowest[0]), float(lowest[1])

    def margin_upper_bound(self) -> float:
        """An upper bound on the buffer's maximum directional margin.

        ||a|| / t for a run of perceptron updates without eviction; in general
        ||h|| / s with h the buffered examples' share of a (see :meth:`_certificate`).
        """
        _, hull, total, _, _ = self._certificate()
        return hull / total if total > 0 else math.inf

    def class_margins(self) -> tuple[float, float]:
        """min a . y_k / ||a|| over the buffered negatives and positives (inf if none)."""
        own, _, _, negative, positive = self._certificate()
        return _per_norm(negative, positive, own)

    @property
    def converged(self) -> bool:
        """True when the last full replay pass made no update and nothing changed since."""
        return self._converged

    def summary(self) -> dict[str, Any]:
        """Counts and the margin certificate of the current solution on the buffer.

        ``margin_achieved`` is gamma_d' = min_k a . y_k / ||a|| over the buffer,
        ``margin_upper_bound`` bounds the buffer's maximum margin from above and
        ``certified_gap`` = 1 - margin_achieved / margin_upper_bound bounds how far the
        solution is from the maximum margin, relatively: it lies in [0, 1] while the
        achieved margin is positive (up to rounding), and exceeds 1 while some buffered
        example is still on the wrong side. All three are about the buffered examples;
        they stay valid after eviction (see :meth:`_certificate`).
        """
        own, hull, total, lowest_negative, lowest_positive = self._certificate()
        negative, positive = _per_norm(lowest_negative, lowest_positive, own)
        achieved = min(negative, positive) if len(self._buffer) else math.nan
        bound = hull / total if total > 0 else math.inf
        gap = 1.0 - achieved / bound if math.isfinite(bound) and bound > 0 else math.nan
        return {
            "algorithm": self.algorithm,
            "examples": self._examples_seen,
            "updates": self.updates,
            "update_events": int(self._stats[0]),
            "presentations": int(self._stats[1]),
            "mini_epochs": int(self._stats[2]),
            "stream_mistakes": int(self._stats[3]),
            "active_set_examples": {
                level: int(self._stats[STAT_LEVEL1 + level - 1]) for level in (1, 2, 3)
            },
            "passes": self._passes,
            "converged": self._converged,
            "margin_achieved": achieved,
            "margin_negative": negative,
            "margin_positive": positive,
            "margin_upper_bound": bound,
            "certified_gap": gap,
            "weight_norm": float(np.linalg.norm(self.coef_)),
            "delta": self._delta_value,
            "n_features": self._n_features,
            "buffer_examples": len(self._buffer),
            "buffer_nnz": self._buffer.nnz,
            "buffer_evicted": self._buffer.evicted,
            "pending_examples": sum(b.n_examples for b in self._pending),
        }

    # -- state dictionaries --------------------------------------------------------------

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        del state

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: plain numbers, strings and numpy arrays."""
        params = self.plain_params()
        pending = Batch.concatenate(self._pending)
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "algorithm": self.algorithm,
            "params": params,
            "delta_value": math.nan if self._delta_value is None else self._delta_value,
            "weights": self._w[: self._n_features].copy(),
            "scalars": self._scalars.copy(),
            "stats": self._stats.copy(),
            "passes": self._passes,
            "converged": self._converged,
            "examples_seen": self._examples_seen,
            "window_seen": self._window_seen,
            "window_max_sqnorm": self._window_max_sqnorm,
            "pending": {
                "indptr": pending.indptr,
                "indices": pending.indices,
                "values": pending.values,
                "labels": pending.labels,
            },
            "buffer": self._buffer.state_dict(),
            "extra": self._extra_state(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """A learner that continues exactly where the one that made ``state`` stopped."""
        check_state_header(state, STATE_FORMAT, STATE_VERSION, "learner")
        if state.get("algorithm") != cls.algorithm:
            raise StateError(
                f"state is for algorithm {state.get('algorithm')!r}, not {cls.algorithm!r}"
            )
        try:
            params = dict(state["params"])
            if params.get("active_sets") is not None:
                params["active_sets"] = ActiveSetSchedule.from_dict(params["active_sets"])
            learner = cls(**params)
            learner._load_state(state)
        except StateError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise StateError(f"incomplete or malformed learner state: {exc}") from exc
        return learner

    def _load_state(self, state: dict[str, Any]) -> None:
        delta_value = float(state["delta_value"])
        self._delta_value = None if math.isnan(delta_value) else delta_value
        weights = np.asarray(state["weights"], dtype=np.float64)
        if weights.ndim != 1:
            raise StateError(f"weights must be one row, got shape {weights.shape}")
        self._w = np.zeros(max(16, weights.shape[0]), dtype=np.float64)
        self._w[: weights.shape[0]] = weights
        self._n_features = int(weights.shape[0])
        self._scalars = np.array(state["scalars"], dtype=np.float64)
        stats = np.asarray(state["stats"], dtype=np.int64)
        self._stats = np.zeros(N_STATS, dtype=np.int64)
        self._stats[: stats.shape[0]] = stats  # states from before the level sizes: zeros
        self._passes = int(state["passes"])
        self._converged = bool(state["converged"])
        self._examples_seen = int(state["examples_seen"])
        self._window_seen = int(state["window_seen"])
        self._window_max_sqnorm = float(state["window_max_sqnorm"])
        pending = state["pending"]
        held = Batch.from_csr(
            pending["indptr"], pending["indices"], pending["values"], pending["labels"]
        )
        self._pending = [held] if held.n_examples else []
        self._buffer = ReplayBuffer.from_state(state["buffer"])
        if self._buffer.max_examples != self.buffer_size or self._buffer.max_nnz != self.buffer_nnz:
            raise StateError("replay buffer capacity in the state differs from the parameters")
        if self._scalars.shape != (4,):
            raise StateError("scalars must hold beta, ||a||^2, t and the scale")
        check_state_rows(state["buffer"]["indices"], self._n_features, held)
        self._load_extra_state(state["extra"])


def check_state_rows(buffer_indices: Any, n_features: int, pending: Any) -> None:
    """Refuse a state whose parts disagree where the kernels would read outside the
    weights: buffered examples with features beyond them, or pending examples (anything
    with CSR ``indptr``, ``indices``, ``values``) with a negative index or a value that
    is not finite.

    >>> check_state_rows(np.array([0, 4]), 4, Batch.from_csr([0], [], [], []))
    Traceback (most recent call last):
    ...
    streamlearn.errors.StateError: the replay buffer holds feature indices beyond the weights
    """
    stored = np.asarray(buffer_indices)
    if stored.shape[0] and int(stored.max()) >= n_features:
        raise StateError("the replay buffer holds feature indices beyond the weights")
    if pending.indptr.shape[0] == 1:
        return
    code, _ = check_rows(pending.indptr, pending.indices, pending.values)
    if code not in (ROW_OK, ROW_NOT_CANONICAL):
        raise StateError("the pending examples hold a negative index or a non-finite value")


def _level_workspaces(n_examples: int, nnz: int) -> tuple[CompactSet, CompactSet, CompactSet]:
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


def _flag(name: str, value: Any) -> bool:
    """A boolean parameter: True or False (numpy's too), not any value that has a truth.

    >>> _flag("multiple_updates", "no")
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: multiple_updates must be True or False, got 'no'
    """
    if not isinstance(value, bool | np.bool_):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _positive(name: str, value: Any) -> float:
    number = _finite(name, value)
    if number <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {value!r}")
    return number


def _non_negative(name: str, value: Any) -> float:
    number = _finite(name, value)
    if number < 0:
        raise InvalidParameterError(f"{name} must be >= 0, got {value!r}")
    return number


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidParameterError(f"{name} must be finite, got {value!r}")
    return number


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _per_norm(negative: float, positive: float, norm: float) -> tuple[float, float]:
    """Smallest a . y_k per class over ||a|| (NaN when a = 0)."""
    if norm == 0.0:
        return (math.nan, math.nan)
    return (negative / norm, positive / norm)
