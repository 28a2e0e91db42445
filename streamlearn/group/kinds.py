"""What a member of a learning group holds of its model, whichever kind it learns: one
binary model (:class:`~streamlearn.learn.contribution.GroupShares`, its common model a
:class:`~streamlearn.group.common_model.CommonModel`) or a one-vs-rest bank
(:class:`~streamlearn.group.bank_shares.BankShares`, a
:class:`~streamlearn.group.common_bank.CommonBank`). The member orders the steps the
same way for both; these two objects are all that differs.

A share is a :class:`~streamlearn.learn.contribution.Contribution` for a binary model
and a :class:`~streamlearn.group.records.LabelShares` for a bank; the member passes each
kind's shares only to its own kind's objects, so the protocols leave them untyped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from streamlearn.group.bank_shares import BankShares
from streamlearn.group.common_bank import CommonBank
from streamlearn.group.common_model import CommonModel
from streamlearn.group.own_records import OwnRecords
from streamlearn.group.records import LabelShares, WindowView
from streamlearn.group.table import GroupTable
from streamlearn.learn.contribution import Contribution, GroupShares
from streamlearn.learn.model import Examples, Model, ModelLimits, Rows
from streamlearn.learn.predictor import Predictor


class MemberShares(Protocol):
    """A learner of a learning group: its state the sum of the shares, its buffer its own
    examples (:class:`GroupShares`, :class:`BankShares`)."""

    #: whether the learner's rule lets its state be scaled
    scales: bool

    @property
    def learner(self) -> Any: ...
    def own(self, slack: bool = True) -> Any: ...
    def damp(self, keep: float) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load(self, state: Mapping[str, Any], max_features: int) -> None: ...


class MemberModel(Protocol):
    """The common model of the records a member holds (:class:`CommonModel`,
    :class:`CommonBank`); ``learner`` is its :class:`MemberShares`' learner."""

    @property
    def published(self) -> Any: ...
    def delta(self, learner: Any) -> float: ...
    def own_delta(self, learner: Any) -> float: ...
    def watch_replays(self, shares: Any, callback: Callable[[], None]) -> None: ...
    def fold(self, shares: Any, own: Any, *, idle: bool) -> None: ...
    def settle(self, learner: Any) -> None: ...
    def predictor(self, learner: Any) -> Predictor: ...
    def limits(self, learner: Any, limits: ModelLimits) -> ModelLimits: ...
    def answers(self, learner: Any, rows: Rows) -> list[bytes]: ...
    def mistakes(self, learner: Any, batch: Examples, rows: Rows) -> int: ...
    def upper_bound(self, learner: Any, own_bound: float) -> float: ...
    def window(self, learner: Any) -> WindowView: ...
    def drift(self, shares: Any) -> tuple[float, float]: ...
    def record_shares(self, shares: Any, own: Any) -> tuple[Contribution, LabelShares | None]: ...
    def updates(self, learner: Any) -> Any: ...


def member_shares(model: Model) -> MemberShares:
    """What a member holds of ``model``: a bank's shares per label, else one model's
    (:class:`InvalidParameterError` when a group cannot learn it)."""
    return BankShares(model) if model.one_vs_rest else GroupShares(model)


def member_model(model: Model, table: GroupTable, own: OwnRecords) -> MemberModel:
    """The common model of ``model``'s kind, of the records in ``table``."""
    return CommonBank(table, own) if model.one_vs_rest else CommonModel(table, own)
