"""One member of a learning group: its learner, its records, and the common model.

The daemon tells the member what happens to its stream: which partitions the consumer
group gives it (:meth:`GroupMember.take`) and takes away (:meth:`GroupMember.release`),
what it learned from each (:meth:`GroupMember.learned`); once a turn, and within a batch
every time the policy's count of examples comes due (:meth:`GroupMember.until_check`), it
lets the member read the sync topic and publish (:meth:`GroupMember.turn`,
:meth:`GroupMember.sync`). The member keeps the learner equal to the common model plus
its own progress since it last published: every record read is folded in at once
(:meth:`GroupShares.adopt`), in the members' order. It answers with the common model
alone (:meth:`GroupMember.predictor`).

The member orders the steps; each concern is a collaborator of its own module: the
records read, checked and taken in (:class:`~streamlearn.group.intake.RecordIntake`),
its own records written and recognised (:class:`~streamlearn.group.own_records.OwnRecords`),
what the brokers say of the consumer group (:class:`~streamlearn.group.watch.ConsumerGroupWatch`),
the common model folded and answered with (:class:`~streamlearn.group.common_model.CommonModel`),
when to read and publish (:class:`~streamlearn.group.pace.SyncPace`), where it stands
in its partitions (:class:`~streamlearn.group.partitions.PartitionLedger`) and what
becomes of partitions that leave it (:mod:`~streamlearn.group.departures`). What it
answers and reports is its read side (:class:`~streamlearn.group.member_view.MemberReadings`).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from streamlearn.errors import InputError, StateError
from streamlearn.group.common_model import share_distance
from streamlearn.group.departures import (
    HANDOVER_RETRY,
    HANDOVER_WAIT,
    LastRecord,
    hand_over,
    report_lost,
)
from streamlearn.group.intake import RecordIntake
from streamlearn.group.kinds import MemberModel, MemberShares, member_model, member_shares
from streamlearn.group.member_view import MemberReadings
from streamlearn.group.own_records import OwnRecords
from streamlearn.group.pace import SyncPace
from streamlearn.group.partitions import PartitionLedger
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import LabelShares, MemberRecord
from streamlearn.group.table import GroupTable
from streamlearn.group.watch import ConsumerGroupView, ConsumerGroupWatch
from streamlearn.group.wire import RecordWire
from streamlearn.learn.contribution import MAX_EXPONENT, Contribution
from streamlearn.learn.model import Model

log = logging.getLogger("streamlearn.group")

__all__ = [
    "HANDOVER_RETRY",
    "HANDOVER_WAIT",
    "ConsumerGroupView",
    "GroupMember",
    "SyncTransport",
    "new_member_id",
    "share_distance",
]

#: seconds a member waits for the sync topic's end before a replay or a record (it goes
#: on with what it has when the topic cannot be read that fast)
READ_BEFORE_REPLAY = 5.0
#: seconds a starting member waits for a process with its id to leave the consumer group
TAKEOVER_WAIT = 30.0


class SyncTransport(Protocol):
    """The sync topic as the member uses it (:class:`streamlearn.sources.kafka_sync.SyncTopic`)."""

    bytes_written: int
    bytes_read: int

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]: ...
    def write(self, key: str, value: bytes | None) -> None: ...


def new_member_id() -> str:
    """A member id no other process has: host, process and a random part."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class GroupMember(MemberReadings):
    """See the module doc."""

    def __init__(
        self,
        learner: Model,
        transport: SyncTransport,
        *,
        member_id: str,
        model: dict[str, Any],
        policy: SyncPolicy,
        max_features: int,
        commit: Callable[[dict[int, int]], None] | None = None,
        consumer_group: ConsumerGroupView | None = None,
        takeover_wait: float = TAKEOVER_WAIT,
        secret: bytes | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        #: the learner, its state the sum of the shares (one model's, or a bank's per label)
        self.shares: MemberShares = member_shares(learner)
        self.transport = transport
        self.me = member_id
        self.policy = policy
        self.max_features = max_features
        #: seconds a member waits at its start for a process with its id to leave the
        #: consumer group (one that crashed, until its session times out)
        self.takeover_wait = takeover_wait
        self.sleep = sleep
        #: commits the positions of a published record to the consumer group: where its
        #: partitions resume when the sync topic cannot be read, and what lag tools see
        self.commit = commit
        #: positions published and not committed yet (commits wait for :meth:`turn`: the
        #: consumer cannot commit from inside its own rebalance callbacks)
        self._uncommitted: dict[int, int] = {}
        self.clock = clock
        self.wall = wall
        # members with another --max-features would refuse each other's shares
        self.table = GroupTable(member_id, {**model, "max_features": max_features})
        #: the partitions this member holds, and those it gave up
        self.ledger = PartitionLedger()
        #: the examples learned since the last record, and when to read and publish
        self.pace = SyncPace(policy, clock)
        #: why this member must stop (a member of another model holds partitions too):
        #: :meth:`turn` raises it, and nothing is published meanwhile
        self.refusal: StateError | None = None
        self._warned_at = -math.inf
        #: whether the learner was folded to a new common model since the last turn
        #: (a record published for a checkpoint or a rebalance, records read before a
        #: replay folds outside the turns too): :meth:`turn` reports it
        self._folded = False
        #: the learner's state and shares as they were at this member's last record
        self.last_record = LastRecord()
        #: what :meth:`resume_from` was given, until :meth:`join` decides
        self._resuming: tuple[Mapping[str, Any] | None, Callable[[], Model]] | None = None
        # the largest exponent a share may have is 0 for rules that never scale their state
        wire = RecordWire(secret, max_features, MAX_EXPONENT if self.shares.scales else 0)
        #: this member's records on the sync topic, and a former process's with its id
        self.own = OwnRecords(member_id, transport, wire)
        #: who is in the consumer group, and where its input topic's logs end (no view:
        #: the member takes every record that passes the checks of its own)
        self.watch = ConsumerGroupWatch(
            consumer_group, member_id, holding=lambda: bool(self.partitions), warn=self._warn
        )
        #: the common model of the records held, which the learner is folded to
        self.common: MemberModel = member_model(learner, self.table, self.own)
        #: the other members' records read, checked and taken into the table
        self.intake = RecordIntake(
            member_id, self.table, wire=wire, own=self.own, watch=self.watch, clock=clock
        )
        self.common.watch_replays(self.shares, self._read_before_replay)

    @property
    def consumer_group(self) -> ConsumerGroupView | None:
        """Who is in the consumer group, and where its input topic's logs end (None:
        the member takes every record that passes the checks of its own)."""
        return self.watch.view

    @consumer_group.setter
    def consumer_group(self, view: ConsumerGroupView | None) -> None:
        self.watch.view = view

    # -- what the daemon tells the member ------------------------------------------------

    def join(self) -> None:
        """Read the sync topic to its end and fold what it holds into the learner (an
        unreadable topic ends the start: :class:`InputError`).

        Refuses to start (:class:`StateError`) while another process with this
        member's id is in the consumer group (after waiting ``takeover_wait`` seconds
        for it to leave: one that crashed stays until its session times out), and when
        a member of the consumer group learns another model. A former process's
        records under this id are taken over: the sequence goes on from its last
        record, and its partitions resume where that record stands."""
        self.watch.wait_for_the_id(self.takeover_wait, self.clock, self.sleep)
        self.intake.take(self.transport.read(to_end=True))
        self.intake.joined = True
        former = self.own.take_over()
        if former is not None:
            self.table.records[self.me] = former
        self._resume(former)
        self.intake.check_models(self.watch.members_now())
        self._fold()

    # -- checkpoints ---------------------------------------------------------------------

    def resume_from(self, state: Mapping[str, Any] | None, fresh: Callable[[], Model]) -> None:
        """Before :meth:`join`: the learner was restored from a checkpoint that holds
        ``state`` (:meth:`checkpoint_state`; None: one without it). :meth:`join` goes on
        from it when this member's last record on the sync topic is the one the
        checkpoint was written with: the window and the share are then exactly those
        the group holds, and the partitions resume where that record stands, so that
        nothing is learned twice or lost. Otherwise (the member published since, or the
        record is gone) the learner is replaced by ``fresh()``: a new window, as a member
        without a checkpoint starts."""
        self._resuming = (state, fresh)

    def checkpoint_state(self) -> dict[str, Any] | None:
        """What a checkpoint holds beside the learner so that :meth:`resume_from` can go
        on from it: this member's last record's sequence, its count of examples and the
        shares the learner holds. Publishes first when the learner moved since the last
        record; None when the learner is not what the last record says (a record that
        could not be written): no checkpoint should be written then."""
        if not self._said_all():
            self.publish()
        if self.own.last is None or self.pace.dirty:
            return None
        return {
            **self.own.checkpoint_mark(),
            "examples": self.examples,
            "shares": self.shares.state_dict(),
        }

    def _resume(self, former: MemberRecord | None) -> None:
        """:meth:`resume_from`'s decision, once the former records are read."""
        resuming, self._resuming = self._resuming, None
        if resuming is None:
            return
        state, fresh = resuming
        why = self.own.why_not_resumed(state)
        if why is None:
            assert isinstance(state, Mapping) and former is not None
            try:
                self.shares.load(state["shares"], self.max_features)
                self.pace.examples = int(state["examples"])
            except (KeyError, TypeError, ValueError, StateError) as exc:
                why = f"its group state is unreadable ({exc})"
        if why is not None:
            log.warning("group %s: the checkpoint's window is not taken (%s): a new "
                        "window starts", self.me, why)  # fmt: skip
            self.shares = member_shares(fresh())
            self.common.watch_replays(self.shares, self._read_before_replay)
            self.pace.examples = 0
            return
        assert former is not None
        self.own.last = former
        self.ledger.resume(former, self.learner.buffer.evicted)
        log.info("group %s: goes on from its checkpoint (record %d, a window of %d "
                 "examples)", self.me, former.sequence, len(self.learner.buffer))  # fmt: skip

    def take(self, partitions: set[int]) -> dict[int, int]:
        """The consumer group gave this member ``partitions``: where to resume each
        (only those some member has learned from; the others start where the consumer
        would). The member says at once that it holds them (a record), so that the
        group counts what it learns from them from where it took them. When the sync
        topic cannot be read to its end, they resume where the records read before
        stand (those are at least as far as the offsets committed with them), and the
        member holds them all the same: its records say where it stands in them."""
        try:
            self.intake.take(self.transport.read(to_end=True))
        except InputError as exc:
            # the records read so far are no older than the offsets committed with them
            # (a record is committed after it is written, one written at a revocation
            # never): their positions, not the committed offsets, say where to resume
            log.error(
                "group %s: %s; partitions %s resume where the records read so far stand "
                "(the consumer group's committed offsets where none does)", self.me, exc,
                sorted(partitions),
            )  # fmt: skip
        if not self._may_learn(partitions):
            return {}
        starts: dict[int, int] = {}
        for partition in sorted(partitions):
            position = self.table.start(partition)
            if position is not None:
                starts[partition] = position.offset
            self.ledger.take(partition, position)
        log.info("group %s: took partitions %s at %s", self.me, sorted(partitions), starts)
        self.publish()
        return starts

    def _may_learn(self, partitions: set[int]) -> bool:
        """Whether this member may learn the ``partitions`` it was given: not when a
        member of the consumer group learns another model (two members that started at
        once; the one that started first publishes first): it then publishes nothing,
        and :meth:`turn` raises why."""
        if self.refusal is None:
            try:
                self.intake.check_models(self.watch.members_now())
            except StateError as exc:
                self.refusal = exc
        if self.refusal is not None:
            log.error("group %s: %s", self.me, self.refusal)
            return False
        return True

    def release(self, partitions: set[int], positions: Mapping[int, int]) -> None:
        """The consumer group took ``partitions`` away (``positions``: where this member
        stopped in them): publish at once, so that their next owner resumes there,
        unless the last record already stands there (nothing learned since: a member
        stopped once caught up), which their next owner resumes from all the same. The
        rebalance waits for that record (:meth:`_hand_over`).

        A member the consumer group no longer lists lost them instead (its session
        expired, and their next owners may be learning them already from where its last
        record stands): it publishes no record that claims them (:meth:`_lose`)."""
        if partitions and self.watch.left_the_group():
            self._lose(partitions)
            return
        self.ledger.give_up(partitions, positions, self.learner.buffer.evicted)
        if partitions and not self._said_all():
            hand_over(self._publish, self.clock, self.sleep, self._warn, self.me)

    def _lose(self, partitions: set[int]) -> None:
        """``partitions`` were given to others while this member was out of the consumer
        group: they stand where its last record says, and no record of it says more.
        Their next owners learn again what it learned from them since; a member that
        lost every partition it held goes back to its last record, as if it had stopped
        there, so that the group learns none of it twice."""
        since = self.ledger.lose(partitions, self.own.last, self.learner.buffer.evicted)
        went_back = not self.ledger.held and self._go_back()
        report_lost(self.me, partitions, sum(since.values()), went_back)

    def _go_back(self) -> bool:
        """Make the learner, its shares and the count of examples what they were once
        this member's last record was written (whether it could: a state kept for that
        record). The window loses what was learned and replayed since."""
        last, states = self.own.last, self.last_record.states(self.own.last)
        if last is None or states is None:
            return False
        self.learner.load_state(states[0])
        self.shares.load(states[1], self.max_features)
        self.pace.examples = self.pace.checked = last.examples
        self.pace.dirty = False
        self._fold(self.common.published)
        return True

    def learned(self, counts: Mapping[int, int], positions: Mapping[int, int]) -> None:
        """This member learned ``counts`` labelled examples per partition, and now stands
        at ``positions``."""
        self.ledger.learned(counts, positions)
        self.pace.learned(int(sum(counts.values())))

    def changed(self) -> None:
        """The learner changed without learning (a replay pass): its share moved."""
        self.pace.dirty = True
        if self.pace.idle and not self.learner.converged:
            self.common.settle(self.learner)

    def until_check(self) -> int:
        """Examples to learn before the policy's next check is due (1 at least): the
        daemon cuts its batches there, so that checks come every ``policy.every``
        examples however large its polls are."""
        return self.pace.until_check()

    def turn(self, idle: bool = False) -> bool:
        """:meth:`sync`, then commit the positions of the last record published.
        Returns whether the learner's model or the common model changed since the last
        turn, here or outside it (a record a checkpoint or a rebalance published): the
        daemon then gives its HTTP API a new copy, which would otherwise keep answering
        with the model before that record once the stream is idle. Raises
        :attr:`refusal` when this member must stop."""
        if self.refusal is not None:
            raise self.refusal
        changed = self.sync(idle)
        self.commit_published()
        folded, self._folded = self._folded, False
        return changed or folded

    def sync(self, idle: bool = False) -> bool:
        """Read what other members published (fold it in; every
        :data:`~streamlearn.group.pace.READ_INTERVAL` seconds at most while the stream
        flows), and publish if the policy says so.
        When the stream is ``idle`` (caught up, nothing arrived, and nothing learned for
        ``policy.idle_after`` seconds: a paced stream is caught up between most of its
        messages, which is no pause), a member that learned examples since it last
        published publishes at once, one whose replays moved its share checks its drift
        (dynamic averaging) without waiting for examples, and one whose replays have
        converged publishes what they moved, however little: once
        every member's window has converged on the common model, every member holds
        the same records and answers alike. Commits nothing (the daemon calls it inside
        a batch, where a rebalance callback may be running): :meth:`turn` commits.
        Returns whether the learner's model changed."""
        idle = self.pace.idle_now(idle)
        entries: list[tuple[str, bytes | None]] = []
        if self.pace.read_due(idle):
            try:
                entries = self.transport.read(to_end=False)
            except InputError as exc:
                self._warn(f"group {self.me}: {exc}")
        self.pace.idle = idle
        changed = self.intake.take(entries)
        if changed:
            self._fold()
        last = self.own.last
        published = self.pace.publish_due(
            idle, last.examples if last else 0, self.learner.converged, self._drifted
        )
        if published:
            self.publish()
        return changed or published

    def _read_before_replay(self) -> None:
        """A replay is about to correct this member's window under the common model:
        fold every record published so far first (:meth:`_catch_up`)."""
        self._catch_up("replaying")

    def _catch_up(self, doing: str) -> None:
        """Read the sync topic to its end and fold what it holds, keeping this member's
        share as its learner holds it now.

        Records reach a member late (a look at the topic finds what its client has
        fetched: tens to hundreds of milliseconds, tens of thousands of examples on a
        fast stream). A member that corrected the model under records some periods old
        corrected again what the others had corrected already, and the damped
        corrections of 4 members added up until the intercept crossed zero (a9a.test
        0.16 to 0.45 in bench_group's periodic runs and with reads delayed in one
        process). So a member catches up before each replay and each record: its
        change is then concurrent with the others' of one period at most, which the
        damping to 1/K is for."""
        try:
            entries = self.transport.read(to_end=True, timeout=READ_BEFORE_REPLAY)
        except InputError as exc:
            self._warn(f"group {self.me}: {doing} without the latest records ({exc})")
            return
        self.pace.read_at = self.clock()
        if self.intake.take(entries):
            # the learner may hold examples the daemon has not reported yet (a replay
            # comes inside a batch): its own share is what its state holds now
            self._fold(self.shares.own())

    def commit_published(self) -> None:
        """Commit the positions of the last record published, if not done yet."""
        if self._uncommitted and self.commit is not None:
            self.commit(self._uncommitted)
        self._uncommitted = {}

    def publish(self) -> None:
        """Write this member's record now, then fold (its own share in its place).

        What the member changed since it last published is damped first, to 1/K of it
        for K members learning (:meth:`GroupShares.damp`): the common model then moves
        by the mean of the members' changes, as model averaging moves it, rather than
        by their sum (K members correcting the same errors at once overshot).

        A member that must stop (:attr:`refusal`) publishes nothing, and a record the
        others would refuse (:func:`decode_record`) is not written (logged, counted as
        failed)."""
        try:
            self._publish()
        except (InputError, StateError) as exc:
            self._warn(f"group {self.me}: record not published, tried again later ({exc})")

    def _publish(self) -> None:
        """:meth:`publish`; raises :class:`InputError` when the broker does not take the
        record, :class:`StateError` when the others would refuse it (neither written).
        A member holding partitions that the consumer group no longer lists writes
        nothing either (:class:`InputError`): its session expired, their next owners may
        be learning them already, and it goes back to its last record once its consumer
        tells it they are lost (:meth:`release`)."""
        if self.refusal is not None:
            return
        if self.partitions and self.watch.left_the_group():
            raise InputError("this member is no longer in the consumer group (its session "
                             "expired): its partitions are others' now")  # fmt: skip
        started = self.clock()
        self._catch_up("publishing")
        self.shares.damp(1.0 / self.table.learning())
        own = self.shares.own()
        self._prune_released()
        window = self.common.window(self.learner)  # the model as published, on the window
        share, labels = self.common.record_shares(self.shares, own)
        record = MemberRecord(
            member=self.me,
            sequence=self.own.sequence + 1,
            time=self.wall(),
            model=self.table.model,
            share=share,
            examples=self.examples,
            partitions=dict(self.partitions),
            released=self.ledger.released_positions(),
            window=window,
            members=tuple(self.table.in_model()),
            delta=self.common.own_delta(self.learner),
            labels=labels,
        )
        self.own.write(record)
        self._uncommitted = {p: position.offset for p, position in self.partitions.items()}
        self.table.apply(record)
        self.pace.published()
        self._fold(own)
        if self.watch.view is not None:
            self.last_record.keep(record, self.learner, self.shares)
        self.pace.pause(started)

    def publish_last_word(self) -> None:
        """At the end: :meth:`publish`, unless this member's last record already says all
        it would (:meth:`_said_all`). A member stopped once idle has published its share
        at the pause already."""
        self._prune_released()
        if not self._said_all():
            self.publish()

    def _said_all(self) -> bool:
        """Whether this member's last record says all a record would say now: nothing
        learned or replayed since, and where it stands in its partitions
        (:meth:`PartitionLedger.stated_by`; the share is the same either way)."""
        last = self.own.last
        if last is None or self.pace.dirty:
            return False
        return self.ledger.stated_by(last)

    def replay(self, max_passes: int, interrupt: Callable[[], bool]) -> None:
        """Replay the learner's window; a replay that made updates moved its share."""
        updates = self.common.updates(self.learner)
        self.learner.replay(max_passes=max_passes, interrupt=interrupt)
        if self.common.updates(self.learner) != updates:
            self.changed()  # a pass without updates leaves the share as it was

    # -- inside ----------------------------------------------------------------------

    def _drifted(self) -> bool:
        """Whether this member's share drifted from the one it last published, as the
        policy measures drift."""
        distance, norm = self.common.drift(self.shares)
        # this member's divergence from the model it last published (Kamp et al.'s
        # local condition): K members each within the threshold keep the common model
        # within it of their mean, however many they are
        return self.policy.drifted(distance, norm)

    def _warn(self, message: str) -> None:
        """Log ``message`` at most once a minute (a broker outage repeats it every turn)."""
        if self.clock() - self._warned_at >= 60.0:
            log.warning("%s", message)
            self._warned_at = self.clock()

    def _fold(self, own: Contribution | LabelShares | None = None) -> None:
        """Make the learner the sum of the shares; this member's own is ``own``, else
        the one it published when nothing changed since (so that members holding the
        same records hold the same bits), else what its state holds now."""
        if own is None:
            own = self.shares.own() if self.pace.dirty else self.common.published
        self.common.fold(self.shares, own, idle=self.pace.idle)
        self._folded = True

    def _prune_released(self) -> None:
        """Forget partitions given up whose examples have all left this member's window."""
        buffer = self.learner.buffer
        self.ledger.prune(buffer.evicted, buffer.max_examples)
