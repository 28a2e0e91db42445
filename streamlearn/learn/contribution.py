"""A share of a linear model in the dual: what a set of examples contributes to it.

Under window semantics a learner's model is a combination of the examples its buffer
holds: w = sum alpha_k y_k x_k, beta = rho sum alpha_k y_k, t = sum alpha_k and
||a||^2 = ||w||^2 + beta^2 + Delta^2 sum alpha_k^2. A :class:`Contribution` is that
combination for some set of examples, without the examples. The members of a learning
group each learn their own window and exchange contributions; the sum of all of them is
the common model, itself a combination of the union of the windows, so PDM's upper bound
on the maximum margin, computed from it, holds for that union.

A learner of a group holds the sum of every share in its state: its own (what its
buffer's alpha_k make) plus the others' (:class:`GroupShares`). Its kernels learn and
replay on that sum, changing only its own alpha_k; :meth:`GroupShares.own` takes the
others' part back out.

>>> from streamlearn import PDM
>>> learner = PDM(delta=1.0).learn(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, -1]))
>>> shares = GroupShares(learner)
>>> mine = shares.own()
>>> theirs = Contribution.of(np.array([0.5, 0.0, 0.25]), beta=0.5, updates=1.0, slack=1.0)
>>> shares.adopt([theirs, mine], own_at=1)
>>> learner.state.updates == mine.updates + 1.0, np.allclose(shares.own().values, mine.values)
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.learn.state import BETA, SCALE_DOWN_FACTOR, SQNORM, UPDATES

if TYPE_CHECKING:
    from streamlearn.learn.base import LinearLearner
    from streamlearn.learn.model import Model
    from streamlearn.learn.state import LearnerState

__all__ = ["Contribution", "GroupShares", "shareable"]

#: log2 of the factor one scale-down divides by (``SCALE_DOWN_FACTOR`` is 2^-20)
SCALE_DOWN_BITS = 1 - math.frexp(SCALE_DOWN_FACTOR)[1]
#: the largest exponent a share may have: a state scales down once t grows 2^20-fold,
#: so no stream reaches it, and every member's state can be brought to it exactly
MAX_EXPONENT = 1 << 16
#: the largest norm of (w, beta), t and sum alpha_k^2 (its square root) a share may have:
#: the sum of a million such shares still has a finite squared norm
MAX_MAGNITUDE = 2.0**480
#: a share may name features up to this index at any size ...
DENSE_FREE_FEATURES = 1 << 20
#: ... and beyond it, up to this many features per entry it holds: the dense weights a
#: reader grows for a share cost at most 8 * 256 / 16 = 128 times the share's bytes
FEATURES_PER_ENTRY = 256


def _float(value: Any, name: str) -> float:
    """``value`` as a finite float: a number (not a bool, not a text) is needed."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateError(f"contribution: {name} is not a number ({type(value).__name__})")
    try:
        number = float(value)
    except OverflowError as exc:  # an int beyond the floats
        raise StateError(f"contribution: {name} is out of range") from exc
    if not math.isfinite(number):
        raise StateError(f"contribution: {name} is not finite ({number})")
    return number


def _int(value: Any, name: str, low: int, high: int) -> int:
    """``value`` as an int within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise StateError(f"contribution: {name} is not an integer ({type(value).__name__})")
    if not low <= value <= high:
        raise StateError(f"contribution: {name} {value} is outside [{low}, {high}]")
    return int(value)


def features_reachable(entries: int) -> int:
    """How many features a share of ``entries`` entries may span (its largest index
    plus one): the dense weights it makes a reader grow must be paid for by its size.

    >>> features_reachable(3), features_reachable(10_000)
    (1048576, 2560000)
    """
    return max(DENSE_FREE_FEATURES, FEATURES_PER_ENTRY * entries)


def _scaled(value: float, steps: int) -> float:
    """``value`` scaled down ``steps`` times (up when negative), exactly (a power of two;
    underflows to 0, overflows to inf, never raises)."""
    return float(np.ldexp(value, -SCALE_DOWN_BITS * steps))


@dataclass(frozen=True, eq=False)
class Contribution:
    """w (its nonzeros), beta, t and sum alpha_k^2 of some examples, scaled by
    ``SCALE_DOWN_FACTOR ** exponent`` (a learner that scaled its state down that many
    times writes its shares in its own units; :meth:`at_exponent` converts exactly).

    ``evicted``: examples its learner's buffer has evicted whose part of w, beta and t
    it still holds (those its last replay saw: the next takes them out; their slack is
    not in ``slack``); at least 1 when it holds a part outside the window that damping
    left (:meth:`GroupShares.damp`).
    Such a share is a combination of more than the window, so no bound on the window's
    margin comes from it."""

    indices: npt.NDArray[np.int64]
    values: npt.NDArray[np.float64]
    beta: float
    updates: float
    slack: float
    exponent: int = 0
    evicted: int = 0

    @classmethod
    def of(
        cls,
        weights: npt.NDArray[np.float64],
        *,
        beta: float,
        updates: float,
        slack: float,
        exponent: int = 0,
        evicted: int = 0,
    ) -> Contribution:
        """The share whose w is the dense ``weights``."""
        indices = np.flatnonzero(weights).astype(np.int64)
        values = weights[indices].astype(np.float64)
        return cls(indices, values, beta, updates, slack, exponent, evicted)

    @classmethod
    def zero(cls, exponent: int = 0) -> Contribution:
        """The share of no example."""
        return cls(np.zeros(0, np.int64), np.zeros(0), 0.0, 0.0, 0.0, exponent)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Contribution):
            return NotImplemented
        return (
            np.array_equal(self.indices, other.indices)
            and np.array_equal(self.values, other.values)
            and (self.beta, self.updates, self.slack, self.exponent, self.evicted)
            == (other.beta, other.updates, other.slack, other.exponent, other.evicted)
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def n_features(self) -> int:
        """One more than the largest feature index with a nonzero weight."""
        return int(self.indices[-1]) + 1 if self.indices.shape[0] else 0

    def at_exponent(self, exponent: int) -> Contribution:
        """The same share in the units of a state scaled down ``exponent`` times (exact:
        the factor is a power of two)."""
        if exponent == self.exponent:
            return self
        steps = exponent - self.exponent
        return Contribution(
            self.indices, np.ldexp(self.values, -SCALE_DOWN_BITS * steps),
            _scaled(self.beta, steps), _scaled(self.updates, steps),
            _scaled(self.slack, 2 * steps), exponent, self.evicted,
        )  # fmt: skip

    def add_to(self, weights: npt.NDArray[np.float64]) -> None:
        """Add w into ``weights`` (long enough for :attr:`n_features`)."""
        weights[self.indices] += self.values

    def to_plain(self, span: int = 0) -> dict[str, Any]:
        """Plain values a msgpack record stores (arrays as little-endian bytes), with
        zero weights added where a share spans more features than its entries pay for
        (:func:`features_reachable`), so that every reader takes it; with a ``span``,
        every ``FEATURES_PER_ENTRY`` features below it too (a bank's record, whose
        labels' entries pay for the features of them all).

        >>> sparse = Contribution(np.array([5_000_000]), np.array([1.0]), 0.0, 1.0, 1.0)
        >>> back = Contribution.from_plain(sparse.to_plain(), max_features=1 << 26)
        >>> back.indices.shape[0], back.n_features, float(back.values.sum())
        (19533, 5000001, 1.0)
        """
        indices, values = self._padded(span)
        return {
            "indices": indices.astype("<i8").tobytes(),
            "values": values.astype("<f8").tobytes(),
            "beta": self.beta,
            "updates": self.updates,
            "slack": self.slack,
            "exponent": self.exponent,
            "evicted": self.evicted,
        }

    def _padded(self, span: int = 0) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The entries, with zero weights every ``FEATURES_PER_ENTRY`` features (below
        ``span`` when given) when the share spans more features than its entries pay
        for, or a ``span`` is given."""
        n = self.n_features
        if not span and n <= features_reachable(self.indices.shape[0]):
            return self.indices, self.values
        n = max(n, span)
        indices = np.union1d(self.indices, np.arange(0, n, FEATURES_PER_ENTRY, dtype=np.int64))
        values = np.zeros(indices.shape[0])
        values[np.searchsorted(indices, self.indices)] = self.values
        return indices, values

    @classmethod
    def from_plain(
        cls, plain: Mapping[str, Any], max_features: int, max_exponent: int = MAX_EXPONENT
    ) -> Contribution:
        """The share :meth:`to_plain` wrote; :class:`StateError` for anything else,
        checked before anything is copied or allocated: arrays that are not whole
        little-endian numbers of one length, indices not increasing or at
        ``max_features`` and above, more features than the entries pay for
        (:func:`features_reachable`), a weight or scalar not finite or beyond
        ``MAX_MAGNITUDE``, an exponent outside [0, ``max_exponent``] (0 for rules that
        never scale their state)."""
        if not isinstance(plain, Mapping):
            raise StateError("contribution: not a map")
        try:
            raw_indices, raw_values = plain["indices"], plain["values"]
            beta, updates = _float(plain["beta"], "beta"), _float(plain["updates"], "updates")
            slack = _float(plain["slack"], "slack")
            exponent = _int(plain["exponent"], "exponent", 0, max_exponent)
            evicted = _int(plain.get("evicted", 0), "evicted", 0, 1 << 62)
        except KeyError as exc:
            raise StateError(f"contribution: {exc} is missing") from exc
        if not isinstance(raw_indices, bytes) or not isinstance(raw_values, bytes):
            raise StateError("contribution: indices and values must be bytes")
        if len(raw_indices) % 8 or len(raw_indices) != len(raw_values):
            raise StateError("contribution: as many 8-byte indices as 8-byte values are needed")
        indices = np.frombuffer(raw_indices, dtype="<i8")  # views: nothing allocated yet
        values = np.frombuffer(raw_values, dtype="<f8")
        if indices.shape[0]:
            if indices[0] < 0 or indices[-1] >= max_features or np.any(indices[1:] <= indices[:-1]):
                raise StateError(
                    f"contribution: feature indices must increase within [0, {max_features})"
                )
            if int(indices[-1]) + 1 > features_reachable(indices.shape[0]):
                raise StateError(
                    f"contribution: feature {int(indices[-1])} is beyond what "
                    f"{indices.shape[0]} entries may span ({features_reachable(indices.shape[0])})"
                )
        if not np.all(np.isfinite(values)):
            raise StateError("contribution: a weight is not finite")
        if updates < 0 or slack < 0:
            raise StateError("contribution: t and the slack sum cannot be negative")
        _check_magnitude(values, beta, updates, slack)
        return cls(
            indices.astype(np.int64), values.astype(np.float64), beta, updates, slack,
            exponent, evicted,
        )  # fmt: skip


def _check_magnitude(
    values: npt.NDArray[np.float64], beta: float, updates: float, slack: float
) -> None:
    """:class:`StateError` when a share's (w, beta), t or sqrt(slack) is beyond
    ``MAX_MAGNITUDE`` (norms scaled first, so that nothing overflows on the way)."""
    largest = float(np.max(np.abs(values), initial=abs(beta)))
    if largest > MAX_MAGNITUDE:
        raise StateError("contribution: a weight is beyond the magnitudes a model holds")
    if largest > 0.0:
        scaled = values / largest
        norm = largest * math.sqrt(float(scaled @ scaled) + (beta / largest) ** 2)
        if norm > MAX_MAGNITUDE:
            raise StateError("contribution: the norm of w is beyond the magnitudes a model holds")
    if updates > MAX_MAGNITUDE or math.sqrt(slack) > MAX_MAGNITUDE:
        raise StateError("contribution: t or the slack sum is beyond the magnitudes a model holds")


def summed(shares: Sequence[Contribution], exponent: int) -> tuple[npt.NDArray[np.float64], ...]:
    """w, and [beta, t, slack] of the sum of ``shares`` (in this order, so that every
    process that sums the same shares gets the same bits), in a state's units."""
    converted = [share.at_exponent(exponent) for share in shares]
    n = max((share.n_features for share in converted), default=0)
    weights = np.zeros(n, dtype=np.float64)
    scalars = np.zeros(3, dtype=np.float64)
    for share in converted:
        share.add_to(weights)
        scalars += (share.beta, share.updates, share.slack)
    return weights, scalars


def shareable(model: Model) -> LinearLearner:
    """``model`` if a learning group can learn it by exchanging shares: a binary learner
    with window semantics whose model is a sum (:class:`InvalidParameterError` saying
    why not otherwise)."""
    from streamlearn.learn.base import LinearLearner

    if not isinstance(model, LinearLearner):
        raise InvalidParameterError(
            "a learning group learns one binary model, not a one-vs-rest bank: its "
            "members exchange the shares of one binary model"
        )
    if model.forget != "window":
        raise InvalidParameterError(
            "a learning group needs window semantics (forget='window'): with 'never' "
            "a member's share would not be the combination of the examples its window holds"
        )
    if model.entry.convex_combination:
        raise InvalidParameterError(
            f"{model.algorithm} keeps a convex combination, which shares cannot sum"
        )
    return model


class GroupShares:
    """A learner of a learning group: its state holds every member's share, its buffer
    only its own examples. Only for window semantics (the model is then exactly the
    combination of the buffer) and rules whose scale is 1 (not Kozinec)."""

    def __init__(self, model: Model) -> None:
        self.learner: LinearLearner = shareable(model)
        learner = self.learner
        #: whether the learner's rule lets its state be scaled (shares then carry the
        #: exponent; the others' are all at exponent 0)
        self.scales = learner.entry.scale_free
        #: the others' share, as last adopted (in the state's units then)
        self.external = Contribution.zero()
        #: the window's alpha_k when this learner last damped (oldest first), the
        #: evictions before them, and the state's exponent then
        self._damped_alpha = np.zeros(0)
        self._damped_first = 0
        self._damped_exponent = 0
        #: this learner's share (without slack) when it last damped
        self._damped_share = Contribution.zero()

    def damp(self, keep: float) -> None:
        """Keep ``keep`` of what this learner's share changed since it last damped: the
        share becomes s' + keep (s - s'), s' its share then (:meth:`own`), and the state
        with it (its model moves back by the rest).

        Within the window this is exact in the dual: alpha_k <- alpha_k' + keep
        (alpha_k - alpha_k') for every buffered example (alpha_k' as it was then, 0 for
        one that arrived since), and w, beta, t and ||a||^2 with them. Examples evicted
        since, or evicted earlier and still in the model (the last replay saw them, see
        :meth:`LearnerState.begin_replay`), have no row left to scale: what the share
        still owes them to reach s' + keep (s - s') is added to w, beta and t as a
        part outside the window, which the next replay takes out with them
        (``outside_window``). Replays give old examples large alpha_k whose sum
        nearly cancels: a share that kept their change whole beside a window damped to
        1/K leaned towards the labels of the evicted ones.

        With ``keep`` = 1/K for K members learning at once, their published shares add
        up to the mean of their models, as model averaging takes it (McDonald et al.,
        Kamp et al.), not to K times every correction they made concurrently. A member
        damps what it publishes, once per change: a record that fails is written again
        as it is.

        >>> from streamlearn import PDM
        >>> learner = PDM(delta=1.0).learn(np.array([[1.0, 0.0]]), np.array([1]))
        >>> shares = GroupShares(learner)
        >>> shares.damp(1.0)  # the first example kept as it is
        >>> _ = learner.learn(np.array([[0.0, 1.0]]), np.array([-1]))
        >>> shares.damp(0.5)
        >>> learner.buffer.alpha().tolist()
        [1.0, 0.5]
        """
        state, buffer = self.learner.state, self.learner.buffer
        beyond_window = (
            buffer.evicted != self._damped_first or state.evictions_pending or state.outside_window
        )
        share_before = self._damped_share.at_exponent(state.scale_exponent)
        share_now = self.own(slack=False) if beyond_window else None
        slots = buffer.live_slots()
        alpha = buffer.slot_alpha[slots]
        marked = np.ldexp(
            self._damped_alpha, -SCALE_DOWN_BITS * (state.scale_exponent - self._damped_exponent)
        )
        before = np.zeros_like(alpha)
        still_there = marked[buffer.evicted - self._damped_first :][: alpha.shape[0]]
        before[: still_there.shape[0]] = still_there
        cut = (1.0 - keep) * (alpha - before)
        moved = np.flatnonzero(cut)
        if moved.shape[0]:
            self._take_back(slots[moved], cut[moved])
        if share_now is not None:
            self._settle_outside(share_before, share_now, keep)
        self._damped_alpha = buffer.alpha()
        self._damped_first = buffer.evicted
        self._damped_exponent = state.scale_exponent
        self._damped_share = self.own(slack=False)

    def _settle_outside(self, before: Contribution, now: Contribution, keep: float) -> None:
        """After the window's alpha_k are damped: add to the state what the share still
        needs to be ``before + keep (now - before)`` (the evicted examples' part)."""
        state = self.learner.state
        reached = self.own(slack=False)
        n = max(before.n_features, now.n_features, reached.n_features)
        owed = np.zeros(n)
        before.add_to(owed)
        owed *= 1.0 - keep
        now_w = np.zeros(n)
        now.add_to(now_w)
        owed += keep * now_w
        owed[reached.indices] -= reached.values
        owed_beta = (1.0 - keep) * before.beta + keep * now.beta - reached.beta
        owed_updates = (1.0 - keep) * before.updates + keep * now.updates - reached.updates
        state.grow_weights(n)
        state.weights[:n] += owed
        state.scalars[BETA] += owed_beta
        state.scalars[UPDATES] += owed_updates
        state.recompute_sqnorm()
        state.outside_window = True
        state.converged = False

    def _take_back(self, slots: npt.NDArray[np.int64], cut: npt.NDArray[np.float64]) -> None:
        """alpha_k -= cut for the examples in ``slots``, and the state with them."""
        state, buffer = self.learner.state, self.learner.buffer
        signed = cut * buffer.slot_label[slots]
        buffer.add_rows(slots, -signed, state.weights)
        buffer.slot_alpha[slots] -= cut
        state.scalars[BETA] -= self.learner.rho * float(signed.sum())
        state.scalars[UPDATES] -= float(cut.sum())
        state.recompute_sqnorm()
        state.converged = False

    def own(self, slack: bool = True) -> Contribution:
        """This learner's share now: its state minus the others' (its slack sum exactly,
        from the buffer; 0 without ``slack``), in its state's units; with the evicted
        examples its last replay saw (see :attr:`Contribution.evicted`)."""
        state = self.learner.state
        external = self.external.at_exponent(state.scale_exponent)
        n = max(state.n_features, external.n_features)
        state.reserve_weights(n)
        weights = state.weights[:n].copy()
        weights[external.indices] -= external.values
        return Contribution.of(
            weights, beta=state.beta - external.beta, updates=state.updates - external.updates,
            slack=state.buffered_slack() if slack else 0.0, exponent=state.scale_exponent,
            evicted=max(state.evictions_pending, int(state.outside_window)),
        )  # fmt: skip

    def adopt(self, shares: Sequence[Contribution], own_at: int) -> None:
        """Make the state the sum of ``shares`` (in their order), ``shares[own_at]``
        being this learner's own (from :meth:`own`); the others become its external
        share. ||a||^2 is recomputed; the model counts as changed (not converged)."""
        state = self.learner.state
        top = max((share.exponent for share in shares), default=0)
        if top > state.scale_exponent:
            if not self.scales:
                raise StateError(f"{self.learner.algorithm} shares cannot be scaled")
            _scale_down(state, top - state.scale_exponent)
        exponent = state.scale_exponent
        weights, (beta, updates, _) = summed(shares, exponent)
        others = [share for i, share in enumerate(shares) if i != own_at]
        external_weights, (external_beta, external_updates, external_slack) = summed(
            others, exponent
        )
        n = max(state.n_features, weights.shape[0])
        state.grow_weights(n)
        state.weights[:] = 0.0
        state.weights[: weights.shape[0]] = weights
        state.scalars[BETA] = beta
        state.scalars[UPDATES] = updates
        state.external_slack = float(external_slack)
        state.external_indices = np.flatnonzero(external_weights).astype(np.int64)
        state.external_values = external_weights[state.external_indices]
        state.external_beta = float(external_beta)
        state.external_updates = float(external_updates)
        state.recompute_sqnorm()
        state.converged = False
        self.external = Contribution.of(
            external_weights, beta=float(external_beta), updates=float(external_updates),
            slack=float(external_slack), exponent=exponent,
        )  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint of a group's member holds beside its learner's state: the
        others' share as last adopted (and as the state holds it, in its units now), and
        the window's alpha_k and share when it last damped.

        >>> from streamlearn import PDM
        >>> learner = PDM(delta=1.0).learn(np.array([[1.0, 0.0]]), np.array([1]))
        >>> shares = GroupShares(learner)
        >>> theirs = Contribution.of(np.array([0.0, 0.5]), beta=0.5, updates=1.0, slack=1.0)
        >>> shares.adopt([shares.own(), theirs], own_at=0)
        >>> back = GroupShares(PDM.from_state(learner.state_dict()))
        >>> back.load(shares.state_dict(), max_features=2)
        >>> back.own() == shares.own(), back.learner.state.external_slack
        (True, 1.0)
        """
        state = self.learner.state
        return {
            # what the learner's own state does not keep: its units (the power of two
            # its scale-downs took), the part damping left outside the window, and
            # the Delta a group agreed on
            "learner": {
                "scale_exponent": state.scale_exponent,
                "outside_window": state.outside_window,
                "delta_floor": self.learner.delta_floor,
            },
            "external": self.external.to_plain(),
            "in_state": {
                "indices": state.external_indices.copy(),
                "values": state.external_values.copy(),
                "beta": state.external_beta,
                "updates": state.external_updates,
                "slack": state.external_slack,
            },
            "damped_alpha": self._damped_alpha.copy(),
            "damped_first": self._damped_first,
            "damped_exponent": self._damped_exponent,
            "damped_share": self._damped_share.to_plain(),
        }

    def load(self, state: Mapping[str, Any], max_features: int) -> None:
        """Go on from :meth:`state_dict`'s values, the learner restored from the state
        of the same moment; :class:`StateError` for values that are not such a state."""
        try:
            external = Contribution.from_plain(state["external"], max_features)
            damped_share = Contribution.from_plain(state["damped_share"], max_features)
            held = state["in_state"]
            indices = np.asarray(held["indices"], dtype=np.int64)
            values = np.asarray(held["values"], dtype=np.float64)
            scalars = [_float(held[name], name) for name in ("beta", "updates", "slack")]
            damped_alpha = np.asarray(state["damped_alpha"], dtype=np.float64)
            damped_first = _int(state["damped_first"], "damped_first", 0, 1 << 62)
            damped_exponent = _int(state["damped_exponent"], "damped_exponent", 0, MAX_EXPONENT)
            own = state["learner"]
            scale_exponent = _int(own["scale_exponent"], "scale_exponent", 0, MAX_EXPONENT)
            outside_window = own["outside_window"]
            delta_floor = _float(own["delta_floor"], "delta_floor")
            if not isinstance(outside_window, bool):
                raise StateError("group shares: outside_window is not a bool")
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"group shares: malformed state ({exc!r:.200})") from exc
        if indices.ndim != 1 or indices.shape != values.shape or damped_alpha.ndim != 1:
            raise StateError("group shares: the external weights do not match")
        if indices.shape[0] and (indices.min() < 0 or indices.max() >= max_features):
            raise StateError("group shares: an external weight is out of range")
        learner_state = self.learner.state
        learner_state.scale_exponent = scale_exponent
        learner_state.outside_window = outside_window
        self.learner.delta_floor = delta_floor
        learner_state.external_indices, learner_state.external_values = indices, values
        learner_state.external_beta, learner_state.external_updates = scalars[0], scalars[1]
        learner_state.external_slack = scalars[2]
        self.external = external
        self._damped_alpha = damped_alpha
        self._damped_first = damped_first
        self._damped_exponent = damped_exponent
        self._damped_share = damped_share


def _scale_down(state: LearnerState, steps: int) -> None:
    """Scale ``state`` down ``steps`` times at once, as :meth:`LearnerState.scale_down`
    does once: a share read from a member that scaled its state further must be summed
    in its units, never the other way round (a share brought up by 2^(20 k) can
    overflow; one brought down only loses what is below the smallest float)."""
    factor = -SCALE_DOWN_BITS * steps
    state.weights[:] = np.ldexp(state.weights, factor)
    state.buffer.slot_alpha[:] = np.ldexp(state.buffer.slot_alpha, factor)
    for index in (BETA, UPDATES):
        state.scalars[index] = _scaled(float(state.scalars[index]), steps)
    state.scalars[SQNORM] = _scaled(float(state.scalars[SQNORM]), 2 * steps)
    state.external_slack = _scaled(state.external_slack, 2 * steps)
    state.external_values = np.ldexp(state.external_values, factor)
    state.external_beta = _scaled(state.external_beta, steps)
    state.external_updates = _scaled(state.external_updates, steps)
    state.scale_exponent += steps
