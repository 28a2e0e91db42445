"""What a learner has learned, as one public object: weights, scalars, counters, buffer.

:class:`LearnerState` is the one place that says what a learner's state is. The learner
runs the engine's kernels on its arrays; a one-vs-rest bank makes each label's state of
rows of its own matrices (:meth:`LearnerState.borrow`); the per-example path of the river
adapters moves the small arrays into two packed blocks (:meth:`LearnerState.pack`).
Nothing else reaches into a learner.

>>> state = LearnerState.empty(buffer_size=4, buffer_nnz=100, delta=1.0)
>>> state.updates, state.delta_sq, state.weights.shape
(0.0, 1.0, (16,))
>>> state.grow_weights(40)
>>> state.n_features, state.weights.shape
(40, (40,))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.engine import BETA, N_STATS, SCALE, SQNORM, UPDATES
from streamlearn._kernels.single import block_views, empty_blocks, raw_offset
from streamlearn.errors import StateError
from streamlearn.replay import ReplayBuffer

#: room for weights a new state starts with
FIRST_WEIGHTS = 16
#: t above which :meth:`LearnerState.scale_down` scales a state down
SCALE_DOWN_ABOVE = 2.0**40
#: the factor it scales by: a power of two, so that every scaled value is exact
SCALE_DOWN_FACTOR = 2.0**-20

__all__ = [
    "BETA",
    "FIRST_WEIGHTS",
    "SCALE",
    "SCALE_DOWN_ABOVE",
    "SCALE_DOWN_FACTOR",
    "SQNORM",
    "UPDATES",
    "LearnerState",
    "PackedBlocks",
    "defer_until",
    "evictions_forgotten",
    "grown_weights",
    "stopped_by",
]


def packed_weights(weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64] | dict[str, Any]:
    """Weights as a state stores them: the array when most weights are nonzero, else
    ``{"shape", "indices", "values"}`` of its nonzeros (flat, row-major), so that a state's
    size follows its nonzeros, not its largest feature index (one example with index 6e7
    made a 512 MB model file).

    >>> packed_weights(np.array([0.0, 2.0, 0.0, 0.0]))
    {'shape': [4], 'indices': array([1]), 'values': array([2.])}
    >>> unpacked_weights(packed_weights(np.array([0.0, 2.0, 0.0, 0.0]))).tolist()
    [0.0, 2.0, 0.0, 0.0]
    """
    nonzero = np.flatnonzero(weights)
    if 2 * nonzero.shape[0] >= weights.size:
        return weights.copy()
    return {
        "shape": list(weights.shape),
        "indices": nonzero.astype(np.int64),
        "values": weights.ravel()[nonzero],
    }


def unpacked_weights(stored: Any) -> npt.NDArray[np.float64]:
    """The weights :func:`packed_weights` stored (an array, or its nonzeros)."""
    if not isinstance(stored, dict):
        return np.asarray(stored, dtype=np.float64)
    shape = tuple(int(n) for n in stored["shape"])
    if not 1 <= len(shape) <= 2 or min(shape) < 0:
        raise StateError(f"weights: a shape of one or two sizes, got {shape}")
    indices = np.asarray(stored["indices"], dtype=np.int64)
    values = np.asarray(stored["values"], dtype=np.float64)
    size = math.prod(shape)
    if indices.ndim != 1 or values.shape != indices.shape:
        raise StateError("weights: as many values as indices")
    if indices.shape[0] and (
        int(indices[0]) < 0 or int(indices[-1]) >= size or np.any(np.diff(indices) <= 0)
    ):
        raise StateError(f"weights: indices increasing, within the {size} weights")
    weights = np.zeros(size, dtype=np.float64)  # untouched zeros cost no memory
    weights[indices] = values
    return weights.reshape(shape)


def grown_weights(weights: npt.NDArray[np.float64], n_features: int) -> npt.NDArray[np.float64]:
    """``weights`` with room for ``n_features`` along its last axis: the array itself when
    it has room, else a copy of max(twice its room, ``n_features``) columns, zero beyond
    the old ones. Every weight array grows this way (a learner's row, a bank's matrix).

    >>> grown_weights(np.ones((2, 3)), 4).shape, grown_weights(np.ones(8), 9).shape
    ((2, 6), (16,))
    """
    columns = weights.shape[-1]
    if n_features <= columns:
        return weights
    grown = np.zeros((*weights.shape[:-1], max(2 * columns, n_features)), dtype=np.float64)
    grown[..., :columns] = weights
    return grown


@dataclass(eq=False)
class PackedBlocks:
    """A learner's small arrays packed into the two blocks of the per-example kernels
    (:mod:`streamlearn._kernels.single`): ``F`` (float64) and ``Z`` (int64) hold the
    scalars, the counters, the buffer's ring and slot arrays, and workspaces for one
    example of up to ``work`` entries; ``raw_offset`` is the byte offset in ``F`` where
    a caller writes the raw example ``[indices..., values...]``."""

    F: npt.NDArray[np.float64]
    Z: npt.NDArray[np.int64]
    work: int
    raw_offset: int
    work_indices: npt.NDArray[np.int64]
    work_values: npt.NDArray[np.float64]


class LearnerState:
    """Everything a learner learns, in arrays the engine's kernels update in place.

    weights
        float64 weights w, with room for at least ``n_features`` (grown by
        :func:`grown_weights`); in the engine's units (see ``scale``).
    scalars
        float64 ``[beta, ||a||^2, t, scale]``: the augmented coordinate's weight, the
        squared norm of the extended vector a, the update count and the factor that
        multiplies w, beta and the slack counts (1 except for Kozinec).
    stats
        int64 counters of the kernels (update events, presentations, mini-epochs, stream
        mistakes, then the sizes of the last pass's active-set levels).
    buffer
        The replay buffer, whose ``slot_alpha`` holds each buffered example's slack.
    n_features, examples_seen, passes, converged
        One more than the largest feature index learned; stream examples presented;
        full replay passes run; whether the last replay converged (and nothing changed
        since).
    stopped_by
        What ended the last replay that converged: ``'no update'`` (a full pass made no
        update) or ``'certified gap'`` (the certificate reached the learner's target).
    delta
        The Delta in use; None while ``delta='auto'`` waits for its examples.
    evictions_forgotten, defer_until
        Under window semantics (see :meth:`begin_replay`): how many of the buffer's
        evictions had happened when the last replay began, and how many there will have
        been once every example that replay saw is evicted. The evictions numbered from
        ``evictions_forgotten`` to ``defer_until`` still count in w, beta and t.
    """

    def __init__(
        self,
        buffer: ReplayBuffer,
        *,
        weights: npt.NDArray[np.float64],
        scalars: npt.NDArray[np.float64],
        stats: npt.NDArray[np.int64],
        delta: float | None,
        n_features: int = 0,
        examples_seen: int = 0,
        passes: int = 0,
        converged: bool = False,
        stopped_by: str | None = None,
        evictions_forgotten: int = 0,
        defer_until: int = 0,
    ) -> None:
        self.buffer = buffer
        self.weights = weights
        self.scalars = scalars
        self.stats = stats
        self.delta = delta
        self.n_features = n_features
        self.examples_seen = examples_seen
        self.passes = passes
        self.converged = converged
        self.stopped_by = stopped_by
        self.evictions_forgotten = evictions_forgotten
        self.defer_until = defer_until
        #: sum of alpha_k^2 over examples whose share of ``weights`` came from elsewhere
        #: (the other members of a learning group, :mod:`streamlearn.learn.contribution`):
        #: their slack coordinates are part of ||a||^2, their alpha_k are not in the buffer
        self.external_slack = 0.0
        #: that share's w (as feature indices and values), beta and t: :meth:`begin_replay`
        #: rebuilds the model from the buffer and it
        self.external_indices = np.zeros(0, dtype=np.int64)
        self.external_values = np.zeros(0, dtype=np.float64)
        self.external_beta = 0.0
        self.external_updates = 0.0
        #: w, beta and t hold a part no buffered example accounts for (what a learning
        #: group's member kept of evicted examples when it damped its share): the next
        #: replay rebuilds them from the buffer, as it does for evictions pending
        self.outside_window = False
        #: how many times :meth:`scale_down` scaled this state (the group's shares carry it)
        self.scale_exponent = 0

    @classmethod
    def empty(cls, buffer_size: int, buffer_nnz: int, delta: float | None) -> LearnerState:
        """A state that has learned nothing."""
        return cls(
            ReplayBuffer(buffer_size, buffer_nnz),
            weights=np.zeros(FIRST_WEIGHTS, dtype=np.float64),
            scalars=np.array([0.0, 0.0, 0.0, 1.0]),
            stats=np.zeros(N_STATS, dtype=np.int64),
            delta=delta,
        )

    # -- named scalars ---------------------------------------------------------------

    @property
    def beta(self) -> float:
        """The augmented coordinate's weight (engine units)."""
        return float(self.scalars[BETA])

    @property
    def sqnorm(self) -> float:
        """||a||^2 of the extended vector (engine units, evicted examples' slack included)."""
        return float(self.scalars[SQNORM])

    @property
    def updates(self) -> float:
        """t, the number of updates (a multiple update of lambda counts lambda)."""
        return float(self.scalars[UPDATES])

    @property
    def scale(self) -> float:
        """The factor from the engine's weights to w (1 except for Kozinec)."""
        return float(self.scalars[SCALE])

    @property
    def delta_sq(self) -> float:
        """Delta^2 (0 while Delta is not fixed)."""
        delta = self.delta or 0.0
        return delta * delta

    # -- changes -----------------------------------------------------------------------

    def grow_weights(self, n_features: int) -> None:
        """Room for ``n_features`` weights, and count them as learned."""
        self.reserve_weights(n_features)
        self.n_features = max(self.n_features, n_features)

    def reserve_weights(self, n_features: int) -> None:
        """Room for ``n_features`` weights, not counted as learned yet."""
        self.weights = grown_weights(self.weights, n_features)

    def buffered_slack(self) -> float:
        """sum alpha_k^2 over the buffered examples (their slack coordinates carry
        Delta^2 times it into ||a||^2)."""
        return self.buffer.alpha_sqsum()

    @property
    def evictions_pending(self) -> int:
        """Examples evicted from the buffer that are still in the model: seen by the last
        replay, evicted since (window semantics)."""
        return max(min(self.buffer.evicted, self.defer_until) - self.evictions_forgotten, 0)

    def begin_replay(self, rho: float, convex: bool = False) -> bool:
        """Under window semantics, the start of a replay: take the evicted examples still
        in the model out (w, beta and t become the combination of the buffered examples
        again, plus the external share, and ||a||^2 is recomputed; returns whether there
        were any), and note that this replay sees every buffered example.

        Replays give the examples they see large slack counts. With Delta > 0 on data
        that no direction separates, each of their alpha_k y_k is then far larger than w,
        which is what is left of their sum: taking even a few out leaves the others
        unbalanced, a poor model until a replay has rebalanced them. So when such an
        example is evicted its contribution stays until the next replay begins. An
        example learned since the last replay began has a slack count of 0 or 1, and
        leaves as it is evicted (the kernels' ``forget_evicted``).

        ``convex`` (Kozinec): a is a convex combination, so the buffered examples' weights
        are renormalised to sum to 1 (nothing is left when none holds any) and t, a count
        of updates, stays.

        >>> state = LearnerState.empty(buffer_size=1, buffer_nnz=8, delta=1.0)
        >>> state.weights[:2] = [3.0, 0.0]; state.scalars[:3] = [2.0, 17.0, 2.0]
        >>> state.buffer.slot_alpha[0] = 1.0; state.buffer.ring[1] = 1  # x = (1, 0), l = +1
        >>> state.buffer.slot_label[0] = 1; state.buffer.slot_len[0] = 1
        >>> state.buffer.arena_val[0] = 1.0; state.buffer.ring[3] = 1  # one evicted
        >>> state.defer_until = 1  # the last replay saw it
        >>> state.begin_replay(rho=1.0), state.weights[:2].tolist(), state.scalars[:3].tolist()
        (True, [1.0, 0.0], [1.0, 3.0, 1.0])
        >>> state.begin_replay(rho=1.0), state.evictions_forgotten, state.defer_until
        (False, 1, 2)
        """
        buf = self.buffer
        pending = self.evictions_pending > 0 or self.outside_window
        self.outside_window = False
        self.evictions_forgotten = buf.evicted
        self.defer_until = buf.evicted + len(buf)
        if not pending:
            return False
        slots = buf.live_slots()
        alpha = buf.slot_alpha[slots]
        coef = alpha * buf.slot_label[slots]
        w = self.weights
        w[:] = 0.0  # in place: a bank's rows and the per-example blocks hold this array
        buf.add_rows(slots, coef, w)
        beta = rho * float(coef.sum())
        total = float(alpha.sum())
        if convex:
            if total > 0.0:
                self.scalars[SCALE] = 1.0 / total
            else:
                beta = 0.0
                self.scalars[SCALE] = 1.0
        else:
            w[self.external_indices] += self.external_values
            beta += self.external_beta
            self.scalars[UPDATES] = total + self.external_updates
        self.scalars[BETA] = beta
        self.recompute_sqnorm()
        return True

    def recompute_sqnorm(self) -> None:
        """Set ||a||^2 from w, beta and the slack counts, the buffered examples' and the
        external ones (rounding would otherwise drift in the incremental updates)."""
        w = self.weights
        nonzero = np.flatnonzero(w)
        # up to the last nonzero weight: the same sum whatever room the array has (a
        # restored state has none beyond its features, a grown one up to twice that)
        w = w[: int(nonzero[-1]) + 1] if nonzero.shape[0] else w[:0]
        beta = self.beta
        slack = self.buffered_slack() + self.external_slack
        own = float(w @ w) + beta * beta + self.delta_sq * slack
        self.scalars[SQNORM] = self.scale * self.scale * own

    def scale_down(self) -> bool:
        """Multiply w, beta, the slack counts and t by ``SCALE_DOWN_FACTOR`` (and ||a||^2
        by its square) once t is above ``SCALE_DOWN_ABOVE``; returns whether it did.

        Only for the rules no common factor changes (``RuleFacts.scale_free``): every
        margin, ||a|| / t and the certificate stay exactly what they were, since the
        factor is a power of two. Without it t can grow geometrically on an endless
        stream under window semantics (each replay after an eviction adds updates in
        proportion to t) until it overflows.

        >>> state = LearnerState.empty(4, 16, delta=1.0)
        >>> state.weights[:2] = [3.0, 4.0]; state.scalars[:3] = [1.0, 26.0, 2.0**41]
        >>> state.scale_down(), state.weights[:2].tolist(), state.updates == 2.0**21
        (True, [2.86102294921875e-06, 3.814697265625e-06], True)
        >>> state.scale_down()
        False
        """
        if not self.updates > SCALE_DOWN_ABOVE:
            return False
        factor = SCALE_DOWN_FACTOR
        self.weights *= factor
        self.buffer.slot_alpha *= factor
        self.scalars[BETA] *= factor
        self.scalars[SQNORM] *= factor * factor
        self.scalars[UPDATES] *= factor
        self.external_slack *= factor * factor
        self.external_values = self.external_values * factor
        self.external_beta *= factor
        self.external_updates *= factor
        self.scale_exponent += 1
        return True

    def borrow(
        self,
        *,
        weights: npt.NDArray[np.float64],
        scalars: npt.NDArray[np.float64],
        stats: npt.NDArray[np.int64],
        buffer: ReplayBuffer,
    ) -> None:
        """Work on these arrays from now on (a bank's rows for one label, with a view of
        its shared buffer): their owner keeps them, this state reads and updates them."""
        self.weights = weights
        self.scalars = scalars
        self.stats = stats
        self.buffer = buffer

    def pack(self, work: int) -> PackedBlocks:
        """Move the scalars, the counters and the buffer's ring and slot arrays into new
        blocks for the per-example kernels, with workspaces for ``work`` entries; from
        then on this state's arrays are views into them."""
        buf = self.buffer
        buf.reserve_slots(buf.max_examples)  # the blocks hold every slot: the ring unrolled
        F, Z = empty_blocks(buf.max_examples, work)
        views = block_views(F, Z)
        for name, source in self._packed_arrays().items():
            views[name][: source.shape[0]] = source
        self.scalars = views["scalars"]
        self.stats = views["stats"]
        buf.ring = views["ring"]
        buf.slot_start = views["slot_start"]
        buf.slot_len = views["slot_len"]
        buf.slot_alpha = views["slot_alpha"]
        buf.slot_sqnorm = views["slot_sqnorm"]
        return PackedBlocks(
            F,
            Z,
            work,
            8 * raw_offset(buf.max_examples, work),
            views["work_indices"],
            views["work_values"],
        )

    def packed_in(self, blocks: PackedBlocks) -> bool:
        """Whether the arrays :meth:`pack` moved are still views into ``blocks`` (a state
        loaded or reset since has arrays of its own)."""
        F, Z = blocks.F, blocks.Z
        homes = {"scalars": F, "stats": Z, "ring": Z, "slot_start": Z, "slot_len": Z,
                 "slot_alpha": F, "slot_sqnorm": F}  # fmt: skip
        arrays = self._packed_arrays()
        return all(arrays[name].base is block for name, block in homes.items())

    def _packed_arrays(self) -> dict[str, npt.NDArray[Any]]:
        buf = self.buffer
        return {
            "scalars": self.scalars,
            "stats": self.stats,
            "ring": buf.ring,
            "slot_start": buf.slot_start,
            "slot_len": buf.slot_len,
            "slot_alpha": buf.slot_alpha,
            "slot_sqnorm": buf.slot_sqnorm,
        }

    # -- state dictionaries ------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The learned values as plain numbers and arrays (the buffer's included)."""
        return {
            "delta_value": math.nan if self.delta is None else self.delta,
            "weights": packed_weights(self.weights[: self.n_features]),
            "scalars": self.scalars.copy(),
            "stats": self.stats.copy(),
            "passes": self.passes,
            "converged": self.converged,
            "stopped_by": self.stopped_by,
            "examples_seen": self.examples_seen,
            "evictions_forgotten": self.evictions_forgotten,
            "defer_until": self.defer_until,
            "buffer": self.buffer.state_dict(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LearnerState:
        """The state :meth:`state_dict` wrote (KeyError, TypeError or ValueError on a
        malformed one; :class:`StateError` on arrays of the wrong shape)."""
        delta_value = float(state["delta_value"])
        weights = unpacked_weights(state["weights"])
        if weights.ndim != 1:
            raise StateError(f"weights must be one row, got shape {weights.shape}")
        require_finite("weights", weights)
        if weights.shape[0] >= FIRST_WEIGHTS:
            room = weights  # its own array: unpacked or converted
            if room is state["weights"]:
                room = room.copy()
        else:
            room = np.zeros(FIRST_WEIGHTS, dtype=np.float64)
            room[: weights.shape[0]] = weights
        scalars = np.array(state["scalars"], dtype=np.float64)
        if scalars.shape != (4,):
            raise StateError("scalars must hold beta, ||a||^2, t and the scale")
        require_finite("scalars", scalars)
        if not math.isnan(delta_value):
            require_finite("Delta", np.array([delta_value]))
        saved = np.asarray(state["stats"], dtype=np.int64)
        stats = np.zeros(N_STATS, dtype=np.int64)
        stats[: saved.shape[0]] = saved  # states from before the level sizes: zeros
        buffer = ReplayBuffer.from_state(state["buffer"])
        return cls(
            buffer,
            weights=room,
            scalars=scalars,
            stats=stats,
            delta=None if math.isnan(delta_value) else delta_value,
            n_features=int(weights.shape[0]),
            examples_seen=int(state["examples_seen"]),
            passes=int(state["passes"]),
            converged=bool(state["converged"]),
            stopped_by=stopped_by(state.get("stopped_by")),
            evictions_forgotten=evictions_forgotten(state.get("evictions_forgotten"), buffer),
            defer_until=defer_until(state.get("defer_until"), buffer),
        )


def require_finite(name: str, values: npt.NDArray[np.float64]) -> None:
    """Refuse a state whose ``values`` hold NaN or an infinity: a model that loaded one
    would answer ``nan`` (a checksum only says the file is as written, not that what was
    written is a model).

    >>> require_finite("weights", np.array([1.0, np.nan]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamlearn.errors.StateError: the state's weights hold a value that is not finite ...
    """
    if not bool(np.all(np.isfinite(values))):
        raise StateError(
            f"the state's {name} hold a value that is not finite (NaN or infinite): the "
            "file is not a model streamlearn wrote, or was changed since"
        )


def evictions_forgotten(value: Any, buffer: ReplayBuffer) -> int:
    """A state's ``evictions_forgotten``: at most the buffer's evictions (states written
    before it took each evicted example out at once: all of them)."""
    if value is None:
        return buffer.evicted
    forgotten = int(value)
    if not 0 <= forgotten <= buffer.evicted:
        raise StateError(
            f"evictions_forgotten must be in [0, {buffer.evicted}] (the buffer's evictions), "
            f"got {forgotten}"
        )
    return forgotten


def defer_until(value: Any, buffer: ReplayBuffer) -> int:
    """A state's ``defer_until``: at most the evictions once every buffered example is
    evicted (states written before it deferred none: 0)."""
    if value is None:
        return 0
    until = int(value)
    if not 0 <= until <= buffer.evicted + len(buffer):
        raise StateError(
            f"defer_until must be in [0, {buffer.evicted + len(buffer)}] (evictions once "
            f"the buffer is evicted), got {until}"
        )
    return until


def stopped_by(value: Any) -> str | None:
    """A state's ``stopped_by`` (states written before it have none)."""
    if value is None:
        return None
    if value not in ("no update", "certified gap"):
        raise StateError(f"stopped_by must be 'no update' or 'certified gap', got {value!r}")
    return str(value)
