"""The common model of a learning group, as each member computes it from the records it
holds (:class:`GroupTable`) and its own share: the shares summed in the members' order,
the group's Delta, its calibration and the upper bound on the union of the windows'
margin. Members that hold the same records compute the same bits.

A member's learner is the common model plus its own progress since its last record
(:meth:`CommonModel.fold`); it answers with the common model alone
(:meth:`CommonModel.predictor`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from streamlearn.group.own_records import OwnRecords
from streamlearn.group.records import LabelShares, MemberRecord, WindowView
from streamlearn.group.table import GroupTable
from streamlearn.learn.answers import binary_answers
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.calibration import Platt
from streamlearn.learn.certificate import certificate
from streamlearn.learn.contribution import Contribution, GroupShares, summed
from streamlearn.learn.model import Examples, ModelLimits, Rows
from streamlearn.learn.predictor import BinaryPredictor
from streamlearn.types import Batch


def share_distance(a: Contribution, b: Contribution) -> float:
    """||a - b|| over (w, beta), in ``a``'s units."""
    b = b.at_exponent(a.exponent)
    n = max(a.n_features, b.n_features)
    diff = np.zeros(n)
    a.add_to(diff)
    diff[b.indices] -= b.values
    return math.sqrt(float(diff @ diff) + (a.beta - b.beta) ** 2)


def shares_in_model(table: GroupTable, own: Contribution) -> tuple[list[Contribution], int]:
    """The shares of the members in the model, in their order, with ``own`` as the local
    member's; and where the local member's stands among them."""
    members = table.in_model()
    shares = [own if m == table.me else table.records[m].share for m in members]
    return shares, members.index(table.me)


def group_delta(table: GroupTable, own_last: MemberRecord | None, own_delta: float) -> float:
    """The group's Delta: the largest of the records in the model (the local member's
    last record, ``own_last``, as it published it), which members holding the same
    records agree on; the local learner's own (``own_delta``) before any record has one.
    With ``--delta auto`` (or ``first``) each member settles Delta from its own first
    examples: the largest is R/10 over the first examples of them all."""
    deltas = [table.records[member].delta for member in table.in_model()
              if member != table.me and member in table.records]  # fmt: skip
    if own_last is not None:
        deltas.append(own_last.delta)
    return max(deltas, default=0.0) or own_delta


def group_calibration(table: GroupTable, own_last: MemberRecord | None) -> Platt:
    """The group's Platt scaling: the members' slopes, each fitted on its window when
    it last published (a fit at every fold of a record read cost milliseconds),
    averaged by the examples their windows then held, in the members' order: members
    that hold the same records hold the same calibration."""
    last = own_last
    own_examples, own_slope = (last.window.examples, last.window.slope) if last else (0, 1.0)
    total = weight = 0.0
    for member in table.in_model():
        if member == table.me:
            slope, examples = own_slope, own_examples
        else:
            window = table.records[member].window
            slope, examples = window.slope, window.examples
        total += slope * examples
        weight += examples
    return Platt(total / weight) if weight else Platt()


def union_upper_bound(
    table: GroupTable,
    own_bound: float,
    published: list[Contribution],
    scale_exponent: int,
    delta: float,
) -> float:
    """An upper bound on the maximum margin of the union of the windows in the common
    model: the smallest of the members' bounds on their own windows (``own_bound``: the
    local member's; the union has all of their examples), and ||h|| / s of the common
    model's dual combination (h = sum of the ``published`` shares, s = sum of their t,
    ``delta``: the group's Delta) while every share is a combination of its window alone
    (none holds evicted examples)."""
    bounds = [own_bound] if math.isfinite(own_bound) else []
    for member in table.in_model():
        if member != table.me and member in table.records:
            window = table.records[member].window
            if window.examples and window.bound > 0:
                bounds.append(window.bound)
    weights, (beta, updates, slack) = summed(published, scale_exponent)
    if updates > 0 and not any(share.evicted for share in published):
        delta_sq = delta**2
        hull = math.sqrt(float(weights @ weights) + beta * beta + delta_sq * slack)
        bounds.append(hull / updates)
    return min(bounds) if bounds else math.nan


class CommonModel:
    """The common model of the records in ``table``, the local member's own share as its
    last record (``own``) holds it."""

    def __init__(self, table: GroupTable, own: OwnRecords) -> None:
        self.table = table
        self.own = own
        #: the common model's frozen copy, made again after each fold
        self._frozen: BinaryPredictor | None = None

    @property
    def published(self) -> Contribution:
        """The local member's share as its last record holds it (nothing before one)."""
        return self.own.last.share if self.own.last else Contribution.zero()

    def delta(self, learner: LinearLearner) -> float:
        """The group's Delta (:func:`group_delta`), ``learner``'s own before any record's."""
        return group_delta(self.table, self.own.last, float(learner.state.delta or 0.0))

    def fold(self, shares: GroupShares, own: Contribution, *, idle: bool) -> None:
        """Make ``shares``' learner the sum of the shares, the local member's own being
        ``own``, under the group's Delta and calibration; while the stream is ``idle``,
        see whether its window still needs replays (:meth:`settle`)."""
        in_model, own_at = shares_in_model(self.table, own)
        shares.adopt(in_model, own_at)
        learner = shares.learner
        learner.agree_delta(self.delta(learner))
        learner.fix_calibration(group_calibration(self.table, self.own.last))
        self._frozen = None
        if idle:
            self.settle(learner)

    def settle(self, learner: LinearLearner) -> None:
        """Whether ``learner``'s window needs replays under the common model just folded
        (or just changed by a replay pass that its own test did not stop): not if the
        model's margin on it is within the learner's target gap of the group's upper
        bound (:meth:`upper_bound`, which holds for the union of the windows).
        A window's own bound would not do: a smaller window has a larger maximum
        margin, each member replayed towards its own, every change it published set
        the others replaying, and a group never went quiet after its stream ended."""
        target = learner.target_gap()
        if target is None or not len(learner.buffer):
            return
        found = certificate(learner.state, learner.rho)
        bound = self.upper_bound(learner, found.upper_bound)
        if found.achieved >= (1.0 - target) * bound:
            learner.state.converged, learner.state.stopped_by = True, "certified gap"

    def predictor(self, learner: LinearLearner) -> BinaryPredictor:
        """The common model, frozen: the sum of the records last published, the local
        member's own as it published it, with the group's calibration, as ``learner``'s
        kind of predictor."""
        if self._frozen is None:
            shares, _ = shares_in_model(self.table, self.published)
            weights, (beta, updates, slack) = summed(shares, learner.state.scale_exponent)
            self._frozen = learner.predictor_of(
                weights, beta=float(beta), updates=float(updates), slack=float(slack),
                calibration=group_calibration(self.table, self.own.last),
                delta=self.delta(learner),
            )  # fmt: skip
        return self._frozen

    def upper_bound(self, learner: LinearLearner, own_bound: float) -> float:
        """:func:`union_upper_bound`, the local member's own share as it published it
        (``own_bound``: the bound on its window, ``learner``'s)."""
        published = shares_in_model(self.table, self.published)[0]
        exponent = learner.state.scale_exponent
        return union_upper_bound(self.table, own_bound, published, exponent, self.delta(learner))

    def own_delta(self, learner: LinearLearner) -> float:
        """The Delta ``learner`` learns under (0: none yet)."""
        return float(learner.state.delta or 0.0)

    def watch_replays(self, shares: GroupShares, callback: Callable[[], None]) -> None:
        """Call ``callback`` before each replay of ``shares``' learner."""
        shares.learner.before_replay(callback)

    def limits(self, learner: LinearLearner, limits: ModelLimits) -> ModelLimits:
        """``limits`` as they are (they bound a bank's labels)."""
        return limits

    def answers(self, learner: LinearLearner, rows: Rows) -> list[bytes]:
        """Each row's prediction by the common model, as one model's daemon sends it."""
        return binary_answers(self.predictor(learner).scores(rows))

    def mistakes(self, learner: LinearLearner, batch: Examples, rows: Rows) -> int:
        """Examples of ``batch`` (their features ``rows``) whose label the common model
        misses (+1 for a positive score, else -1)."""
        assert isinstance(batch, Batch)
        scores = self.predictor(learner).scores(rows)
        return int(np.count_nonzero((scores > 0.0) != (batch.labels > 0)))

    def window(self, learner: LinearLearner) -> WindowView:
        """What a record says of the local window (:func:`window_view`)."""
        return window_view(learner)

    def drift(self, shares: GroupShares) -> tuple[float, float]:
        """How far the local share moved from the one last published, over (w, beta),
        and the norm of the local model's (w, beta)."""
        own = shares.own(slack=False)  # the distance is over (w, beta) alone
        state = shares.learner.state
        weights = state.weights[: state.n_features]
        norm = math.sqrt(float(weights @ weights) + state.beta**2)
        return share_distance(own, self.published), norm

    def record_shares(
        self, shares: GroupShares, own: Contribution
    ) -> tuple[Contribution, LabelShares | None]:
        """What a record holds of ``own``: the share itself, no labels."""
        return own, None

    def updates(self, learner: LinearLearner) -> float:
        """The learner's count of updates (a replay that made none left the share)."""
        return learner.state.updates


def window_view(learner: LinearLearner) -> WindowView:
    """What a record says of ``learner``'s window: its size, and the margin, bound and
    calibration slope of the learner's model on it (0, 0 and 1 when not finite)."""
    found = certificate(learner.state, learner.rho)
    slope = learner.window_calibration().slope
    return WindowView(
        examples=len(learner.buffer),
        capacity=learner.buffer.max_examples,
        margin=_finite(found.achieved),
        bound=_finite(found.upper_bound),
        slope=slope if math.isfinite(slope) else 1.0,
    )


def _finite(value: float) -> float:
    return float(value) if math.isfinite(value) else 0.0
