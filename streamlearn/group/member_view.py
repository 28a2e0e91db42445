"""The read side of a learning group's member: what it answers with and what it says
of itself and of the group, none of which changes its state (see
:class:`~streamlearn.group.member.GroupMember`, which learns)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamlearn.group.intake import RecordIntake
    from streamlearn.group.kinds import MemberModel, MemberShares
    from streamlearn.group.member import SyncTransport
    from streamlearn.group.own_records import OwnRecords
    from streamlearn.group.pace import SyncPace
    from streamlearn.group.partitions import PartitionLedger
    from streamlearn.group.records import PartitionPosition
    from streamlearn.group.table import GroupTable, GroupView
    from streamlearn.learn.model import Examples, ModelLimits, Rows
    from streamlearn.learn.predictor import Predictor


class MemberReadings:
    """What a member answers and reports, from its collaborators (set by the member)."""

    me: str
    shares: MemberShares
    common: MemberModel
    table: GroupTable
    ledger: PartitionLedger
    pace: SyncPace
    own: OwnRecords
    intake: RecordIntake
    transport: SyncTransport

    @property
    def learner(self) -> Any:
        """The learner (a binary learner, or a one-vs-rest bank)."""
        return self.shares.learner

    @property
    def partitions(self) -> dict[int, PartitionPosition]:
        """The partitions this member holds, each at its position and count of examples."""
        return self.ledger.held

    @property
    def examples(self) -> int:
        """Labelled examples this member learned."""
        return self.pace.examples

    @property
    def records_deferred(self) -> int:
        """Checks that asked for a record while publishing had used its share of the time."""
        return self.pace.deferred

    @property
    def records_written(self) -> int:
        return self.own.written

    @property
    def records_failed(self) -> int:
        return self.own.failed

    @property
    def records_read(self) -> int:
        return self.intake.records_read

    @property
    def records_refused(self) -> int:
        return self.intake.records_refused

    def predictor(self) -> Predictor:
        """The common model, frozen: the sum of the records last published, this
        member's own as it published it, with the group's calibration. Every member
        answers with it, so that members that hold the same records answer alike, bit
        for bit, whatever each learned since its last record; the learner itself holds
        this member's progress since then too, and learns with it."""
        return self.common.predictor(self.learner)

    def limits(self, limits: ModelLimits) -> ModelLimits:
        """What the learner may take of a poll: ``limits``, less the labels of the common
        bank this member's bank has not (a bank's ``max_labels`` bounds the group's)."""
        return self.common.limits(self.learner, limits)

    def answers(self, rows: Rows) -> list[bytes]:
        """Each row's prediction by the common model, as the daemon sends it."""
        return self.common.answers(self.learner, rows)

    def mistakes(self, batch: Examples, rows: Rows) -> int:
        """Examples of ``batch`` (whose features are ``rows``) whose label the common
        model misses, as the learner's kind judges them progressively."""
        return self.common.mistakes(self.learner, batch, rows)

    def view(self, own_margin: float) -> GroupView:
        """The group's make-up and margin (see :meth:`GroupTable.view`)."""
        return self.table.view(own_margin)

    def upper_bound(self, own_bound: float) -> float:
        """An upper bound on the maximum margin of the union of the windows in the
        common model: the smallest of the members' bounds on their own windows (the
        union has all of their examples), and ||h|| / s of the common model's dual
        combination (h = sum of the shares, s = sum of their t) while every share is a
        combination of its window alone (none holds evicted examples)."""
        return self.common.upper_bound(self.learner, own_bound)

    def summary(self, own_margin: float, own_bound: float) -> dict[str, Any]:
        """What the metrics and ``GET /model`` say of the group: its members, the
        smallest margin on a window, the upper bound for the union of the windows, the
        traffic on the sync topic."""
        view = self.view(own_margin)
        return {
            "member": self.me,
            "members": view.members,
            "dropped": view.dropped,
            "margin": view.margin,
            "margin_upper_bound": self.upper_bound(own_bound),
            "partitions": sorted(self.partitions),
            "records_written": self.records_written,
            "records_deferred": self.pace.deferred,
            "records_read": self.records_read,
            "records_refused": self.records_refused,
            "records_failed": self.records_failed,
            "bytes_written": self.transport.bytes_written,
            "bytes_read": self.transport.bytes_read,
            "examples": self.examples,
        }
