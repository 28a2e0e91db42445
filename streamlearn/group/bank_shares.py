"""A one-vs-rest bank in a learning group: one :class:`GroupShares` per label.

Every label's learner of a :class:`~streamlearn.learn.bank.ModelBank` is a binary
learner with window semantics over the bank's shared buffer, so what a member holds of
a bank is the binary case once per label: its state is the sum of every member's share
of that label, its buffer's alpha_k make its own. Labels are matched by value: a member
that never saw a label has no share of it (it contributes nothing to that label), and
the label's learner starts, as in a bank alone, when its stream first brings it.

>>> import numpy as np
>>> from streamlearn.learn import PDM, ModelBank
>>> bank = ModelBank(PDM(delta=1.0)).learn(np.eye(2), [[3], [4]])
>>> shares = BankShares(bank)
>>> shares.own().labels
(3.0, 4.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from streamlearn.errors import StateError
from streamlearn.group.records import LabelShares
from streamlearn.learn.bank import ModelBank
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.contribution import Contribution, GroupShares, shareable
from streamlearn.learn.model import Model


class BankShares:
    """A bank learner of a learning group (see the module doc)."""

    def __init__(self, model: Model) -> None:
        if not model.one_vs_rest:
            raise StateError("bank shares are a one-vs-rest bank's")
        self.learner = cast(ModelBank, model)
        shareable(self.learner.base)  # window semantics, a sum: as for a binary member
        #: whether the learners' rule lets their states be scaled
        self.scales = self.learner.base.entry.scale_free
        #: each label's shares, by label value
        self.labels: dict[float, GroupShares] = {}
        self._before_replay: Callable[[], None] | None = None

    def per_label(self) -> list[tuple[float, GroupShares]]:
        """Every label's value and shares, in label id order, learners bound to the
        bank's arrays (a label the bank started since gets its shares now)."""
        learners = self.learner.learners()
        found = []
        for value, learner in zip(self.learner.state.label_values, learners, strict=True):
            shares = self.labels.get(value)
            if shares is None:
                shares = self.labels[value] = GroupShares(learner)
                learner.before_replay(self._before_replay)
            found.append((value, shares))
        return found

    def before_replay(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` before each label's replay (the member folds the records
        published meanwhile)."""
        self._before_replay = callback
        for _, shares in self.per_label():
            shares.learner.before_replay(callback)

    def own(self, slack: bool = True) -> LabelShares:
        """This member's share of every label it has (calibration slopes left at 1:
        :meth:`with_slopes` fits them when it publishes)."""
        return LabelShares(tuple((v, s.own(slack), 1.0) for v, s in self.per_label()))

    def with_slopes(self, own: LabelShares) -> LabelShares:
        """``own`` with each label's calibration slope fitted on this member's window."""
        slopes = {v: s.learner.window_calibration().slope for v, s in self.per_label()}
        return LabelShares(
            tuple(
                (v, share, slopes[v] if math.isfinite(slopes.get(v, math.nan)) else 1.0)
                for v, share, _ in own.shares
            )
        )

    def damp(self, keep: float) -> None:
        """Every label's :meth:`GroupShares.damp`."""
        for _, shares in self.per_label():
            shares.damp(keep)

    def adopt(self, shares: Sequence[LabelShares], own_at: int) -> None:
        """Make every label's state the sum of the members' shares of it (none of a
        member that has no such label), ``shares[own_at]`` being this member's own."""
        n = max((share.n_features for member in shares for _, share, _ in member.shares), default=0)
        if n > self.learner.state.n_features:
            self.learner.state.grow_features(n)
        for value, label in self.per_label():
            label.adopt([member.get(value) or Contribution.zero() for member in shares], own_at)

    @property
    def delta(self) -> float:
        """The bank's Delta (0 before it has one)."""
        return float(self.learner.state.delta_value or 0.0)

    def learners(self) -> list[LinearLearner]:
        """The labels' learners, bound."""
        return [shares.learner for _, shares in self.per_label()]

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint holds beside the bank's state: each label's
        :meth:`GroupShares.state_dict`, and the Delta the group agreed on."""
        return {
            "delta_floor": self.learner.delta_floor,
            "labels": [[value, shares.state_dict()] for value, shares in self.per_label()],
        }

    def load(self, state: Mapping[str, Any], max_features: int) -> None:
        """Go on from :meth:`state_dict`'s values, the bank restored from the state of
        the same moment; :class:`StateError` for values that are not such a state."""
        try:
            floor = float(state["delta_floor"])
            saved = {float(value): plain for value, plain in state["labels"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"bank shares: malformed state ({exc!r:.200})") from exc
        labels = self.per_label()
        if set(saved) != {value for value, _ in labels}:
            raise StateError("bank shares: the labels are not the bank's")
        for value, shares in labels:
            shares.load(saved[value], max_features)
        self.learner.delta_floor = floor
