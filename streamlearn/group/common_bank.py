"""The common model of a learning group whose members learn one-vs-rest banks: for
each label value, the sum of the members' shares of it (a member that has no such
label adds nothing), answered with as one bank answers
(:class:`~streamlearn.learn.predictor.BankPredictor`).

The common bank's labels are in order of first appearance over the members' records in
the members' order, each record's in its writer's order; every label's weights are
summed in the members' order. Members that hold the same records hold the same labels
in the same order and answer alike, bit for bit, whatever order each saw them in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace

import numpy as np

from streamlearn.group.bank_shares import BankShares
from streamlearn.group.common_model import group_delta, share_distance
from streamlearn.group.own_records import OwnRecords
from streamlearn.group.records import LabelShares, WindowView
from streamlearn.group.table import GroupTable
from streamlearn.learn.bank import ModelBank
from streamlearn.learn.bank_answers import bank_prediction, label_value
from streamlearn.learn.calibration import Platt
from streamlearn.learn.certificate import certificate
from streamlearn.learn.contribution import Contribution, summed
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.model import Examples, ModelLimits, Rows
from streamlearn.learn.predictor import BankPredictor

NO_SHARES = LabelShares()


def bank_shares_in_model(table: GroupTable, own: LabelShares) -> tuple[list[LabelShares], int]:
    """The bank shares of the members in the model, in their order, with ``own`` as the
    local member's; and where the local member's stands among them."""
    members = table.in_model()
    shares = [own if m == table.me else (table.records[m].labels or NO_SHARES) for m in members]
    return shares, members.index(table.me)


def common_labels(shares: Iterable[LabelShares]) -> list[float]:
    """Every label value of ``shares``, in order of first appearance."""
    found: dict[float, None] = {}
    for member in shares:
        for value in member.labels:
            found.setdefault(value, None)
    return list(found)


def label_upper_bound(own_bound: float, published: list[Contribution], delta: float) -> float:
    """An upper bound on the maximum margin of one label's union of windows: the local
    member's bound on its own window (``own_bound``), and ||h|| / s of the sum of the
    label's ``published`` shares while none holds evicted examples."""
    bounds = [own_bound] if math.isfinite(own_bound) else []
    exponent = max((share.exponent for share in published), default=0)
    weights, (beta, updates, slack) = summed(published, exponent)
    if updates > 0 and not any(share.evicted for share in published):
        hull = math.sqrt(float(weights @ weights) + beta * beta + delta * delta * slack)
        bounds.append(hull / updates)
    return min(bounds) if bounds else math.nan


class CommonBank:
    """The common bank of the records in ``table``, the local member's own shares as its
    last record (``own``) holds them (the bank counterpart of
    :class:`~streamlearn.group.common_model.CommonModel`)."""

    def __init__(self, table: GroupTable, own: OwnRecords) -> None:
        self.table = table
        self.own = own
        #: the common bank's frozen copy, made again after each fold
        self._frozen: BankPredictor | None = None

    @property
    def published(self) -> LabelShares:
        """The local member's shares as its last record holds them (none before one)."""
        last = self.own.last
        return last.labels if last is not None and last.labels is not None else NO_SHARES

    def delta(self, bank: ModelBank) -> float:
        """The group's Delta (:func:`group_delta`), ``bank``'s own before any record's."""
        return group_delta(self.table, self.own.last, float(bank.state.delta_value or 0.0))

    def own_delta(self, bank: ModelBank) -> float:
        """The Delta ``bank`` learns under (0: none yet)."""
        return float(bank.state.delta_value or 0.0)

    def watch_replays(self, shares: BankShares, callback: Callable[[], None]) -> None:
        """Call ``callback`` before each label's replay."""
        shares.before_replay(callback)

    def fold(self, shares: BankShares, own: LabelShares, *, idle: bool) -> None:
        """Make every label's learner the sum of the members' shares of it, the local
        member's own being ``own``, under the group's Delta and each label's calibration;
        while the stream is ``idle``, see whether the window still needs replays."""
        in_model, own_at = bank_shares_in_model(self.table, own)
        shares.adopt(in_model, own_at)
        bank = shares.learner
        bank.agree_delta(self.delta(bank))
        for value, label in shares.per_label():
            label.learner.fix_calibration(self.calibration(value))
        self._frozen = None
        if idle:
            self.settle(bank)

    def calibration(self, label: float) -> Platt:
        """``label``'s Platt scaling: the slopes of the members that have it, each fitted
        on its window when it last published, averaged by the examples their windows
        then held, in the members' order."""
        total = weight = 0.0
        for member in self.table.in_model():
            record = self.own.last if member == self.table.me else self.table.records[member]
            if record is None or record.labels is None:
                continue
            for value, _, slope in record.labels.shares:
                if value == label:
                    total += slope * record.window.examples
                    weight += record.window.examples
        return Platt(total / weight) if weight else Platt()

    def settle(self, bank: ModelBank) -> None:
        """Mark converged every label whose model's margin on the window is within the
        target gap of its upper bound (:func:`label_upper_bound`), as
        :meth:`CommonModel.settle` does for one model."""
        published, _ = bank_shares_in_model(self.table, self.published)
        delta = self.delta(bank)
        for value, learner in zip(bank.state.label_values, bank.learners(), strict=True):
            target = learner.target_gap()
            if target is None or not len(learner.buffer):
                continue
            found = certificate(learner.state, learner.rho)
            label_shares = [s for s in (m.get(value) for m in published) if s is not None]
            bound = label_upper_bound(found.upper_bound, label_shares, delta)
            if found.achieved >= (1.0 - target) * bound:
                learner.state.converged, learner.state.stopped_by = True, "certified gap"

    def predictor(self, bank: ModelBank) -> BankPredictor:
        """The common bank, frozen: every label's sum of the records last published,
        the local member's own as it published it, with each label's calibration."""
        if self._frozen is not None:
            return self._frozen
        published, _ = bank_shares_in_model(self.table, self.published)
        labels = common_labels(published)
        delta = self.delta(bank)
        frozen = []
        for value in labels:
            shares = [s for s in (m.get(value) for m in published) if s is not None]
            exponent = max(share.exponent for share in shares)
            weights, (beta, updates, slack) = summed(shares, exponent)
            one = bank.base.predictor_of(
                weights, beta=float(beta), updates=float(updates), slack=float(slack),
                calibration=self.calibration(value), delta=delta,
            )  # fmt: skip
            frozen.append(one)
        n = max((one.weights.shape[0] for one in frozen), default=0)
        matrix = np.zeros((len(frozen), n))
        for row, one in enumerate(frozen):
            matrix[row, : one.weights.shape[0]] = one.weights
        self._frozen = BankPredictor(
            labels=tuple(label_value(v) for v in labels),
            weights=matrix,
            scales=np.array([one.scale for one in frozen]),
            intercepts=np.array([one.intercept for one in frozen]),
            margin_factors=np.array([one.margin_factor for one in frozen]),
            calibrations=tuple(one.calibration for one in frozen),
        )
        return self._frozen

    def limits(self, bank: ModelBank, limits: ModelLimits) -> ModelLimits:
        """``limits`` with room for as many labels as the common bank leaves: the labels
        other members brought count against ``max_labels`` too, so that the common
        bank holds no more (but for labels two members first see at once)."""
        if limits.max_labels is None:
            return limits
        published, _ = bank_shares_in_model(self.table, self.published)
        local = set(bank.state.label_values)
        elsewhere = sum(1 for value in common_labels(published) if value not in local)
        room = max(limits.max_labels - elsewhere, len(local))
        return replace(limits, max_labels=room)

    def answers(self, bank: ModelBank, rows: Rows) -> list[bytes]:
        """Each row's prediction by the common bank, as one bank's daemon sends it."""
        predictor = self.predictor(bank)
        labels = list(predictor.labels)
        return [bank_prediction(labels, row) for row in predictor.scores(rows)]

    def mistakes(self, bank: ModelBank, batch: Examples, rows: Rows) -> int:
        """Of ``batch``'s examples (their features ``rows``) with at least one label,
        those whose argmax label by the common bank (ties to the label first in its
        order) is none of theirs, as a bank's progressive judgement counts them."""
        assert isinstance(batch, LabelledRows)
        predictor = self.predictor(bank)
        scores = predictor.scores(rows)
        labels = np.array([float(v) for v in predictor.labels])
        mistakes = 0
        for i in range(batch.n_examples):
            own = batch.labels[batch.label_ptr[i] : batch.label_ptr[i + 1]]
            if own.shape[0] and (
                not labels.shape[0] or labels[int(np.argmax(scores[i]))] not in own
            ):
                mistakes += 1
        return mistakes

    def upper_bound(self, bank: ModelBank, own_bound: float) -> float:
        """The smallest of the labels' :func:`label_upper_bound` (``own_bound``: the
        bound on the local window the daemon reports)."""
        published, _ = bank_shares_in_model(self.table, self.published)
        delta = self.delta(bank)
        bounds = [
            label_upper_bound(
                own_bound, [s for s in (m.get(value) for m in published) if s is not None], delta
            )
            for value in common_labels(published)
        ]
        finite = [bound for bound in bounds if math.isfinite(bound)]
        return min(finite) if finite else own_bound

    def window(self, bank: ModelBank) -> WindowView:
        """What a record says of the local window: its size, and the margin and bound
        of the label whose margin on it is smallest (per-label slopes go with the
        shares)."""
        margin = bound = math.inf
        for learner in bank.learners():
            found = certificate(learner.state, learner.rho)
            if found.achieved < margin:
                margin, bound = found.achieved, found.upper_bound
        return WindowView(
            examples=len(bank.buffer),
            capacity=bank.buffer.max_examples,
            margin=_finite(margin),
            bound=_finite(bound),
        )

    def drift(self, shares: BankShares) -> tuple[float, float]:
        """How far the local shares moved from those last published, over every label's
        (w, beta), and the norm of the local bank's (w, beta) over every label."""
        own = shares.own(slack=False)
        published = self.published
        distance = norm = 0.0
        for value, share, _ in own.shares:
            distance += share_distance(share, published.get(value) or Contribution.zero()) ** 2
        for learner in shares.learners():
            state = learner.state
            weights = state.weights[: state.n_features]
            norm += float(weights @ weights) + state.beta**2
        return math.sqrt(distance), math.sqrt(norm)

    def record_shares(
        self, shares: BankShares, own: LabelShares
    ) -> tuple[Contribution, LabelShares | None]:
        """What a record holds of ``own``: an empty binary share, and the labels'
        shares with their calibration slopes."""
        return Contribution.zero(), shares.with_slopes(own)

    def updates(self, bank: ModelBank) -> tuple[float, ...]:
        """Every label's count of updates (a replay that changed none left the shares
        as they were)."""
        return tuple(learner.state.updates for learner in bank.learners())


def _finite(value: float) -> float:
    return float(value) if math.isfinite(value) else 0.0
