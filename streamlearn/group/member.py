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
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
import uuid
import zlib
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

import numpy as np

from streamlearn.errors import InputError, StateError
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import (
    MemberRecord,
    PartitionPosition,
    WindowView,
    decode_record,
    encode_record,
)
from streamlearn.group.refusals import RefusalLog
from streamlearn.group.signing import signed, verified
from streamlearn.group.table import GroupTable, GroupView
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.calibration import Platt
from streamlearn.learn.certificate import certificate
from streamlearn.learn.contribution import MAX_EXPONENT, Contribution, GroupShares, summed
from streamlearn.learn.model import Model
from streamlearn.learn.predictor import BinaryPredictor

log = logging.getLogger("streamlearn.group")

#: seconds between two looks at the sync topic while the stream flows (a look costs a
#: round trip to the client's I/O thread, about 0.25 ms)
READ_INTERVAL = 0.05
#: seconds a member waits for the sync topic's end before a replay or a record (it goes
#: on with what it has when the topic cannot be read that fast)
READ_BEFORE_REPLAY = 5.0
#: seconds a starting member waits for a process with its id to leave the consumer group
TAKEOVER_WAIT = 30.0
#: seconds between two looks at the consumer group while a starting member waits
TAKEOVER_POLL = 0.5
#: members of another model remembered (for :meth:`GroupMember.join`'s check)
MAX_FOREIGN = 1024
#: the last records this member wrote that it recognises when it reads them back
WRITTEN_KEPT = 64


class SyncTransport(Protocol):
    """The sync topic as the member uses it (:class:`streamlearn.sources.kafka_sync.SyncTopic`)."""

    bytes_written: int
    bytes_read: int

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]: ...
    def write(self, key: str, value: bytes | None) -> None: ...


class ConsumerGroupView(Protocol):
    """What the brokers say of the consumer group and its input topic
    (:class:`streamlearn.sources.kafka_sync.SyncTopic`)."""

    def members(self) -> set[str] | None:
        """The learning-group ids of the consumer group's members now (None: unknown)."""
        ...

    def log_ends(self, probe: Collection[int] = ()) -> dict[int, int] | None:
        """The input topic's partitions and the end of each log now, read off a fetch
        for those in ``probe`` (None: unknown)."""
        ...


def new_member_id() -> str:
    """A member id no other process has: host, process and a random part."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def share_distance(a: Contribution, b: Contribution) -> float:
    """||a - b|| over (w, beta), in ``a``'s units."""
    b = b.at_exponent(a.exponent)
    n = max(a.n_features, b.n_features)
    diff = np.zeros(n)
    a.add_to(diff)
    diff[b.indices] -= b.values
    return math.sqrt(float(diff @ diff) + (a.beta - b.beta) ** 2)


class GroupMember:
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
        self.shares = GroupShares(learner)
        self.transport = transport
        self.me = member_id
        self.policy = policy
        self.max_features = max_features
        #: the largest exponent a share may have (0 for rules that never scale their state)
        self.max_exponent = MAX_EXPONENT if self.shares.scales else 0
        #: who is in the consumer group, and where its input topic's logs end (None: the
        #: member takes every record that passes the checks of its own)
        self.consumer_group = consumer_group
        #: seconds a member waits at its start for a process with its id to leave the
        #: consumer group (one that crashed, until its session times out)
        self.takeover_wait = takeover_wait
        #: the secret the group's records are signed with (None: they are not signed)
        self.secret = secret
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
        self.partitions: dict[int, PartitionPosition] = {}
        #: partitions given up: where this member stopped, and its buffer's evictions then
        self.released: dict[int, tuple[PartitionPosition, int]] = {}
        self.sequence = 0
        #: labelled examples this member learned
        self.examples = 0
        self._checked = 0
        self._published_at = clock()
        #: this member's last record written: its share, positions and window as published
        self._last_record: MemberRecord | None = None
        #: when the member last learned examples: the stream is idle only
        #: ``policy.idle_after`` seconds after
        self._arrived_at = -math.inf
        self._dirty = False
        #: whether the stream was idle at the last turn: only then do the window's replays
        #: answer to the group's certificate (a pass over the window each time)
        self._idle = False
        #: no check publishes before this time (the policy's share of the time)
        self._publish_allowed = -math.inf
        self.records_written = 0
        #: checks that asked for a record while publishing had used its share of the time
        self.records_deferred = 0
        self.records_read = 0
        self.records_refused = 0
        self.records_failed = 0
        self._refusals = RefusalLog()
        #: the algorithm and parameters of members whose records are of another model
        self._foreign: dict[str, dict[str, Any]] = {}
        #: the records this member wrote and has not read back yet, by sequence (a CRC of
        #: each): any other record under its key is another process's
        self._written: dict[int, int] = {}
        #: whether :meth:`join` has read the topic (records under this member's key are
        #: then those of a former process with its id)
        self._joined = False
        #: the furthest end seen of each partition of the input topic
        self._ends: dict[int, int] = {}
        #: why this member must stop (a member of another model holds partitions too):
        #: :meth:`turn` raises it, and nothing is published meanwhile
        self.refusal: StateError | None = None
        #: the last record of a former process with this member's id (read at the start)
        self._former: MemberRecord | None = None
        #: in the current read: partitions whose log was fetched for its end, and
        #: whether the brokers told the ends (None: not asked yet)
        self._looked: set[int] = set()
        self._ends_asked: bool | None = None
        self._warned_at = -math.inf
        self._read_at = -math.inf
        self.learner.before_replay(self._read_before_replay)
        #: the common model's frozen copy, made again after each fold
        self._common: BinaryPredictor | None = None
        #: the CRC of this member's last record written, and of the former process's
        #: last (a checkpoint resumes only from the very record it was written with)
        self._last_crc: int | None = None
        self._former_crc: int | None = None
        #: what :meth:`resume_from` was given, until :meth:`join` decides
        self._resuming: tuple[Mapping[str, Any] | None, Callable[[], Model]] | None = None

    @property
    def learner(self) -> LinearLearner:
        return self.shares.learner

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
        self._wait_for_the_id()
        self._take(self.transport.read(to_end=True))
        self._joined = True
        former = self._former
        if former is not None:
            self.sequence = former.sequence
            self.table.records[self.me] = former
            log.info("group %s: takes over the records of a former process with this id "
                     "(its last, %d, stands at %s)", self.me, former.sequence,
                     {p: pos.offset for p, pos in sorted(former.partitions.items())})  # fmt: skip
        self._resume(former)
        self._check_models(self._members_now())
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
        if self._last_record is None or self._dirty:
            return None
        return {
            "member": self.me,
            "sequence": self._last_record.sequence,
            "crc": self._last_crc,
            "examples": self.examples,
            "shares": self.shares.state_dict(),
        }

    def _resume(self, former: MemberRecord | None) -> None:
        """:meth:`resume_from`'s decision, once the former records are read."""
        resuming, self._resuming = self._resuming, None
        if resuming is None:
            return
        state, fresh = resuming
        why = None
        if not isinstance(state, Mapping) or state.get("member") != self.me:
            why = "it holds no state of this member"
        elif former is None or state.get("sequence") != former.sequence:
            last = "none" if former is None else former.sequence
            why = (f"it was written with record {state.get('sequence')}, the sync topic's "
                   f"last of this member is {last}")  # fmt: skip
        elif state.get("crc") not in (None, self._former_crc):
            why = f"its record {former.sequence} is not the sync topic's record of that number"
        if why is None:
            assert isinstance(state, Mapping) and former is not None
            try:
                self.shares.load(state["shares"], self.max_features)
                self.examples = int(state["examples"])
            except (KeyError, TypeError, ValueError, StateError) as exc:
                why = f"its group state is unreadable ({exc})"
        if why is not None:
            log.warning("group %s: the checkpoint's window is not taken (%s): a new "
                        "window starts", self.me, why)  # fmt: skip
            self.shares = GroupShares(fresh())
            self.learner.before_replay(self._read_before_replay)
            self.examples = 0
            return
        assert former is not None
        self._last_record = former
        # where it stopped in the partitions its window holds examples of, for whoever
        # takes them (those it is given again leave the list)
        evicted = self.learner.buffer.evicted
        self.released = {partition: (position, evicted)
                         for partition, position in {**former.released,
                                                     **former.partitions}.items()}  # fmt: skip
        log.info("group %s: goes on from its checkpoint (record %d, a window of %d "
                 "examples)", self.me, former.sequence, len(self.learner.buffer))  # fmt: skip

    def _wait_for_the_id(self) -> None:
        """Wait until no process with this member's id is in the consumer group, at
        most ``takeover_wait`` seconds; :class:`StateError` if one still is."""
        members = self._members_now()
        if members is None or self.me not in members:
            return
        log.warning("group %s: a process with this member id is in the consumer group; "
                    "waiting up to %.0f s for it to leave (a crashed one leaves when its "
                    "session times out)", self.me, self.takeover_wait)  # fmt: skip
        deadline = self.clock() + self.takeover_wait
        while self.clock() < deadline:
            self.sleep(TAKEOVER_POLL)
            members = self._members_now()
            if members is None or self.me not in members:
                log.info("group %s: the other process with this id has left the consumer "
                         "group; this one takes the id over", self.me)  # fmt: skip
                return
        raise StateError(
            f"member id {self.me!r} is taken: a live process with it is in the consumer "
            "group. Give each member its own --member-id (or none: each process then "
            "makes one), or stop the other process first"
        )

    def _check_models(self, members: set[str] | None) -> None:
        """:class:`StateError` when a member of the consumer group (``members``) learns
        another model than this member."""
        if members is None:
            return
        for member, model in sorted(self._foreign.items()):
            if member in members and member != self.me:
                raise StateError(
                    f"member {member!r} of the learning group learns {model}, this member "
                    f"{self.table.model}: a member whose algorithm or parameters differ "
                    "from the group's does not join (start it with the group's, or stop "
                    "every member to change them)"
                )

    def take(self, partitions: set[int]) -> dict[int, int]:
        """The consumer group gave this member ``partitions``: where to resume each
        (only those some member has learned from; the others start where the consumer
        would). The member says at once that it holds them (a record), so that the
        group counts what it learns from them from where it took them."""
        try:
            self._take(self.transport.read(to_end=True))
        except InputError as exc:
            log.error(
                "group %s: %s; partitions %s resume from the consumer group's committed "
                "offsets (those of the last records published)", self.me, exc,
                sorted(partitions),
            )  # fmt: skip
            return {}
        if not self._may_learn(partitions):
            return {}
        starts: dict[int, int] = {}
        for partition in sorted(partitions):
            position = self.table.start(partition)
            if position is not None:
                starts[partition] = position.offset
            self.partitions[partition] = position or PartitionPosition(offset=0, examples=0)
            self.released.pop(partition, None)
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
                self._check_models(self._members_now())
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
        stopped once caught up), which their next owner resumes from all the same."""
        evicted = self.learner.buffer.evicted
        for partition in partitions:
            position = self.partitions.pop(partition, None)
            if position is None:
                continue
            stopped = int(positions.get(partition, position.offset))
            self.released[partition] = (PartitionPosition(stopped, position.examples), evicted)
        if partitions and not self._said_all():
            self.publish()

    def learned(self, counts: Mapping[int, int], positions: Mapping[int, int]) -> None:
        """This member learned ``counts`` labelled examples per partition, and now stands
        at ``positions``."""
        for partition, position in list(self.partitions.items()):
            self.partitions[partition] = PartitionPosition(
                offset=int(positions.get(partition, position.offset)),
                examples=position.examples + int(counts.get(partition, 0)),
            )
        learned = int(sum(counts.values()))
        self.examples += learned
        if learned:
            self._arrived_at = self.clock()
        self._dirty = True

    def changed(self) -> None:
        """The learner changed without learning (a replay pass): its share moved."""
        self._dirty = True
        if self._idle and not self.learner.converged:
            self._settled()

    def until_check(self) -> int:
        """Examples to learn before the policy's next check is due (1 at least): the
        daemon cuts its batches there, so that checks come every ``policy.every``
        examples however large its polls are."""
        return max(1, self.policy.every - (self.examples - self._checked))

    def turn(self, idle: bool = False) -> bool:
        """:meth:`sync`, then commit the positions of the last record published.
        Returns whether the learner's model changed. Raises :attr:`refusal` when this
        member must stop."""
        if self.refusal is not None:
            raise self.refusal
        changed = self.sync(idle)
        self.commit_published()
        return changed

    def sync(self, idle: bool = False) -> bool:
        """Read what other members published (fold it in; every ``READ_INTERVAL``
        seconds at most while the stream flows), and publish if the policy says so.
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
        idle = idle and self.clock() - self._arrived_at >= self.policy.idle_after
        entries: list[tuple[str, bytes | None]] = []
        if idle or self.clock() - self._read_at >= READ_INTERVAL:
            self._read_at = self.clock()
            try:
                entries = self.transport.read(to_end=False)
            except InputError as exc:
                self._warn(f"group {self.me}: {exc}")
        self._idle = idle
        changed = self._take(entries)
        if changed:
            self._fold()
        published = self._publish_due(idle)
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
        self._read_at = self.clock()
        if self._take(entries):
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
        if self.refusal is not None:
            return
        started = self.clock()
        self._catch_up("publishing")
        self.shares.damp(1.0 / self.table.learning())
        own = self.shares.own()
        self._prune_released()
        # the margin and bound of the model as published, on the window as it is now
        found = certificate(self.learner.state, self.learner.rho)
        margin, bound = found.achieved, found.upper_bound
        slope = self.learner.window_calibration().slope
        self.sequence += 1
        record = MemberRecord(
            member=self.me,
            sequence=self.sequence,
            time=self.wall(),
            model=self.table.model,
            share=own,
            examples=self.examples,
            partitions=dict(self.partitions),
            released=self._released_positions(),
            window=WindowView(
                examples=len(self.learner.buffer),
                capacity=self.learner.buffer.max_examples,
                margin=_finite(margin),
                bound=_finite(bound),
                slope=slope if math.isfinite(slope) else 1.0,
            ),
            members=tuple(self.table.in_model()),
            delta=float(self.learner.state.delta or 0.0),
        )
        value = encode_record(record)
        if self.secret is not None:
            value = signed(value, self.me, self.secret)
        try:
            self._record_of(self.me, value)  # what the others will make of it
            self.transport.write(self.me, value)
        except (InputError, StateError) as exc:
            self.records_failed += 1
            self.sequence -= 1
            self._warn(f"group {self.me}: record not published, tried again later ({exc})")
            return
        self._written[record.sequence] = self._last_crc = zlib.crc32(value)
        if len(self._written) > WRITTEN_KEPT:
            del self._written[min(self._written)]
        self.records_written += 1
        self._last_record = record
        self._uncommitted = {p: position.offset for p, position in self.partitions.items()}
        self.table.apply(record)
        self._published_at = self.clock()
        self._checked = self.examples
        self._dirty = False
        self._fold(own)
        self._publish_allowed = self.clock() + self.policy.pause_after(self.clock() - started)

    @property
    def _published(self) -> Contribution:
        """This member's share as its last record holds it (nothing before one)."""
        return self._last_record.share if self._last_record else Contribution.zero()

    def publish_last_word(self) -> None:
        """At the end: :meth:`publish`, unless this member's last record already says all
        it would (:meth:`_said_all`). A member stopped once idle has published its share
        at the pause already."""
        self._prune_released()
        if not self._said_all():
            self.publish()

    def _said_all(self) -> bool:
        """Whether this member's last record says all a record would say now: nothing
        learned or replayed since, every partition held at the position the record
        gives, every partition given up since where the record left it. (Whether a
        partition is held or given up at a position changes nothing for its next owner,
        who resumes there, nor for the group's model: the share is the same.)"""
        last = self._last_record
        if last is None or self._dirty:
            return False
        stated = {**last.released, **last.partitions}
        return all(
            last.partitions.get(p) == position for p, position in self.partitions.items()
        ) and all(stated.get(p) == position for p, position in self._released_positions().items())

    def predictor(self) -> BinaryPredictor:
        """The common model, frozen: the sum of the records last published, this
        member's own as it published it, with the group's calibration. Every member
        answers with it, so that members that hold the same records answer alike, bit
        for bit, whatever each learned since its last record; the learner itself holds
        this member's progress since then too, and learns with it."""
        if self._common is None:
            shares, _ = self._shares(self._published)
            weights, (beta, updates, slack) = summed(shares, self.learner.state.scale_exponent)
            self._common = self.learner.predictor_of(
                weights, beta=float(beta), updates=float(updates), slack=float(slack),
                calibration=self._calibration(), delta=self._group_delta(),
            )  # fmt: skip
        return self._common

    def view(self, own_margin: float) -> GroupView:
        """The group's make-up and margin (see :meth:`GroupTable.view`)."""
        return self.table.view(own_margin)

    def upper_bound(self, own_bound: float) -> float:
        """An upper bound on the maximum margin of the union of the windows in the
        common model: the smallest of the members' bounds on their own windows (the
        union has all of their examples), and ||h|| / s of the common model's dual
        combination (h = sum of the shares, s = sum of their t) while every share is a
        combination of its window alone (none holds evicted examples)."""
        bounds = [own_bound] if math.isfinite(own_bound) else []
        for member in self.table.in_model():
            if member != self.me and member in self.table.records:
                window = self.table.records[member].window
                if window.examples and window.bound > 0:
                    bounds.append(window.bound)
        state = self.learner.state
        published = self._shares(self._published)[0]  # this member's own as published
        weights, (beta, updates, slack) = summed(published, state.scale_exponent)
        if updates > 0 and not any(share.evicted for share in published):
            delta_sq = self._group_delta() ** 2
            hull = math.sqrt(float(weights @ weights) + beta * beta + delta_sq * slack)
            bounds.append(hull / updates)
        return min(bounds) if bounds else math.nan

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
            "records_deferred": self.records_deferred,
            "records_read": self.records_read,
            "records_refused": self.records_refused,
            "records_failed": self.records_failed,
            "bytes_written": self.transport.bytes_written,
            "bytes_read": self.transport.bytes_read,
            "examples": self.examples,
        }

    # -- inside ----------------------------------------------------------------------

    def _publish_due(self, idle: bool) -> bool:
        if not self._dirty:
            return False
        if self.clock() - self._published_at >= self.policy.max_interval:
            return True
        published_examples = self._last_record.examples if self._last_record else 0
        if idle and self.examples > published_examples:
            return True  # the stream paused: say where it stands
        if idle and self.learner.converged:
            return True  # replays settled the window: the group gets the last of them
        if idle and self.policy.mode == "dynamic":
            pass  # replays moved the share: its drift decides
        elif not self.policy.check_due(self.examples, self._checked):
            return False
        self._checked = self.examples
        if self.clock() < self._publish_allowed:
            # publishing has used its share of the time: the next check asks again
            self.records_deferred += 1
            return False
        if self.policy.mode == "periodic":
            return True
        own = self.shares.own(slack=False)  # the distance is over (w, beta) alone
        state = self.learner.state
        weights = state.weights[: state.n_features]
        norm = math.sqrt(float(weights @ weights) + state.beta**2)
        # this member's divergence from the model it last published (Kamp et al.'s
        # local condition): K members each within the threshold keep the common model
        # within it of their mean, however many they are
        return self.policy.drifted(share_distance(own, self._published), norm)

    def _released_positions(self) -> dict[int, PartitionPosition]:
        """Where this member stopped in the partitions it gave up, as a record says it."""
        return {p: stopped for p, (stopped, _) in self.released.items()}

    def _warn(self, message: str) -> None:
        """Log ``message`` at most once a minute (a broker outage repeats it every turn)."""
        if self.clock() - self._warned_at >= 60.0:
            log.warning("%s", message)
            self._warned_at = self.clock()

    def _take(self, entries: list[tuple[str, bytes | None]]) -> bool:
        """Apply records read; whether the table changed. A record is taken only once
        it passed every check: on its own (:meth:`_decoded`), then against the group
        (:meth:`_admit_all`). Any other is counted, logged (a line per kind of reason
        and minute) and ignored, never fatal."""
        decoded: list[MemberRecord] = []
        for key, value in entries:
            self.records_read += 1
            try:
                record = self._decoded(key, value)
            except StateError as exc:
                self._refuse(key, exc)
                continue
            except Exception as exc:  # no record may stop a member
                self._refuse(key, StateError(f"unreadable ({exc!r:.200})"))
                continue
            if record is not None:
                decoded.append(record)
        self._looked, self._ends_asked = set(), None
        return self._admit_all(decoded) if decoded else False

    def _decoded(self, key: str, value: bytes | None) -> MemberRecord | None:
        """The record of an entry, checked on its own (:func:`decode_record`, its key
        its member's); None for this member's own."""
        if value is None:
            raise StateError(f"a deletion of member {key!r}'s record (members delete none)")
        if key == self.me:
            self._own(value)
            return None
        return self._record_of(key, value)

    def _record_of(self, key: str, value: bytes) -> MemberRecord:
        """The record of ``value`` written under ``key``, signed with the group's secret
        when it has one; :class:`StateError` saying why it is none."""
        if self.secret is not None:
            value = verified(value, key, self.secret)
        return decode_record(value, self.max_features, key=key, max_exponent=self.max_exponent)

    def _own(self, value: bytes) -> None:
        """A record under this member's key: one it wrote, or, read at the start, one of
        a former process with its id (taken over in order: :meth:`join`); any other is
        another process's, refused (a copy of one it wrote too: each comes back once)."""
        crc = zlib.crc32(value)
        for sequence, written in self._written.items():
            if written == crc:
                del self._written[sequence]
                return
        if self._joined:
            raise StateError("written under this member's id by another process")
        record = self._record_of(self.me, value)
        former = self._former
        if former is not None and record.sequence != former.sequence + 1:
            raise StateError(
                f"record {record.sequence} of a former process with this id does not "
                f"follow its record {former.sequence}"
            )
        if record.model != self.table.model:
            raise StateError(f"a former process with this id learned {record.model}")
        self._former = record
        self._former_crc = zlib.crc32(value)

    def _admit_all(self, records: list[MemberRecord]) -> bool:
        """Apply ``records`` in their order, those of members the group knows: members
        of the consumer group now, members whose records are held, and members in the
        model of a member it knows (a member that died or left is known to those that
        saw it). A record of a member it does not know is refused once no record of
        the batch makes it known. Without a view of the consumer group, and while it
        has no other member (a group that starts anew), the records' own checks decide."""
        known = self._known()
        members: set[str] | None = set()
        if any(record.member not in known for record in records):
            members = self._members_now()
            if members is not None and not self._joined and not members - {self.me}:
                log.info("group %s: nobody else is in the consumer group: the records "
                         "found are judged by their own checks", self.me)  # fmt: skip
                members = None
        changed = False
        pending = records
        while pending:
            left: list[MemberRecord] = []
            waiting: set[str] = set()  # a member's records are taken in their order
            for record in pending:
                if record.member in waiting or (
                    members is not None and record.member not in known | members
                ):
                    left.append(record)
                    waiting.add(record.member)
                    continue
                try:
                    self._admit(record)
                except StateError as exc:
                    self._refuse(record.member, exc)
                    continue
                changed = True
                known |= {record.member, *record.members}
            if len(left) == len(pending):
                break
            pending = left
        for record in pending:
            self._refuse(record.member, StateError(
                f"member {record.member!r} is not known to the group (not in the consumer "
                "group, nor in the model of a member it knows)"
            ))  # fmt: skip
        return changed

    def _known(self) -> set[str]:
        """This member, the members whose records are held, and those in their models."""
        known = {self.me, *self.table.records}
        for record in self.table.records.values():
            known.update(record.members)
        return known

    def _admit(self, record: MemberRecord) -> None:
        """Take ``record`` into the table: :class:`StateError` when it is of another
        model (noted: :meth:`_check_models`), does not follow the member's last by one
        (:meth:`GroupTable.apply`), or names a partition the input topic does not have
        or a position beyond the end of its log."""
        if record.model != self.table.model:
            # only a member that never wrote this model's records is of another model: a
            # record of another model under a member's key is forged
            held = record.member in self.table.records
            if not held and (record.member in self._foreign or len(self._foreign) < MAX_FOREIGN):
                self._foreign[record.member] = record.model
            raise StateError(
                f"member {record.member!r} learns {record.model}, this member "
                f"{self.table.model}: members of a group must run the same algorithm and "
                "parameters"
            )
        self.table.check(record)
        self._check_positions(record)
        self.table.apply(record)
        self._foreign.pop(record.member, None)

    def _check_positions(self, record: MemberRecord) -> None:
        """:class:`StateError` when ``record`` names a partition the input topic does not
        have or a position beyond the end of its log. The ends are asked from the
        brokers when a position is beyond those known: once per read, then by a fetch
        of each partition still beyond (some brokers give a log's end as its last
        batch's start). When the brokers cannot tell, the record's own checks decide."""
        if self.consumer_group is None:
            return
        claimed = [*record.partitions.items(), *record.released.items()]
        if not self._beyond(claimed):
            return
        if self._ends_asked is None:
            self._ends_asked = self._ask_ends(())
        probe = self._beyond(claimed) - self._looked
        if self._ends_asked and probe:
            self._looked |= probe
            self._ends_asked = self._ask_ends(probe)
        if not self._ends_asked:
            return
        for partition, position in claimed:
            if partition not in self._ends:
                raise StateError(f"partition {partition} is not a partition of the input topic")
            if position.offset > self._ends[partition]:
                raise StateError(
                    f"partition {partition} at offset {position.offset}, beyond the end of "
                    f"its log ({self._ends[partition]})"
                )

    def _beyond(self, claimed: list[tuple[int, PartitionPosition]]) -> set[int]:
        return {p for p, position in claimed if position.offset > self._ends.get(p, -1)}

    def _ask_ends(self, probe: Collection[int]) -> bool:
        """Ask the brokers where the input topic's logs end (fetching ``probe``'s);
        whether they could tell."""
        assert self.consumer_group is not None
        ends = self.consumer_group.log_ends(probe)
        if ends is None:
            return False
        for partition, end in ends.items():
            self._ends[partition] = max(end, self._ends.get(partition, 0))
        return True

    def _members_now(self) -> set[str] | None:
        """The consumer group's members now (None: no view, or the view cannot tell;
        also when this member, holding partitions, is not among them: its consumer's
        client id does not name it)."""
        if self.consumer_group is None:
            return None
        members = self.consumer_group.members()
        if members is not None and self.partitions and self.me not in members:
            self._warn(f"group {self.me}: the consumer group does not list this member (a "
                       "client_id given with --consumer-option?): records are judged by "
                       "their own checks only")  # fmt: skip
            return None
        return members

    def _refuse(self, key: str, exc: StateError) -> None:
        """Count a refused record and log it (a line per kind of reason and minute)."""
        self.records_refused += 1
        reason = str(exc).removeprefix("sync record: ")
        line = self._refusals.line(reason, key, self.clock())
        if line is not None:
            log.warning("group %s: %s", self.me, line)

    def _shares(self, own: Contribution) -> tuple[list[Contribution], int]:
        members = self.table.in_model()
        shares = [own if m == self.me else self.table.records[m].share for m in members]
        return shares, members.index(self.me)

    def _fold(self, own: Contribution | None = None) -> None:
        """Make the learner the sum of the shares; this member's own is ``own``, else
        the one it published when nothing changed since (so that members holding the
        same records hold the same bits), else what its state holds now."""
        if own is None:
            own = self.shares.own() if self._dirty else self._published
        shares, own_at = self._shares(own)
        self.shares.adopt(shares, own_at)
        self.learner.agree_delta(self._group_delta())
        self.learner.fix_calibration(self._calibration())
        self._common = None
        if self._idle:
            self._settled()

    def _settled(self) -> None:
        """Whether the window needs replays under the common model just folded (or just
        changed by a replay pass that its own test did not stop): not if the
        model's margin on it is within the learner's target gap of the group's upper
        bound (:meth:`upper_bound`, which holds for the union of the windows).
        A window's own bound would not do: a smaller window has a larger maximum
        margin, each member replayed towards its own, every change it published set
        the others replaying, and a group never went quiet after its stream ended."""
        learner = self.learner
        target = learner.target_gap()
        if target is None or not len(learner.buffer):
            return
        found = certificate(learner.state, learner.rho)
        bound = self.upper_bound(found.upper_bound)
        if found.achieved >= (1.0 - target) * bound:
            learner.state.converged, learner.state.stopped_by = True, "certified gap"

    def _group_delta(self) -> float:
        """The group's Delta: the largest of the records in the model (this member's as
        it published it), which members holding the same records agree on; this
        learner's own before any record has one. With ``--delta auto`` (or ``first``)
        each member settles Delta from its own first examples: the largest is R/10 over
        the first examples of them all."""
        deltas = [self.table.records[member].delta for member in self.table.in_model()
                  if member != self.me and member in self.table.records]  # fmt: skip
        if self._last_record is not None:
            deltas.append(self._last_record.delta)
        return max(deltas, default=0.0) or float(self.learner.state.delta or 0.0)

    def _calibration(self) -> Platt:
        """The group's Platt scaling: the members' slopes, each fitted on its window when
        it last published (a fit at every fold of a record read cost milliseconds),
        averaged by the examples their windows then held, in the members' order: members
        that hold the same records hold the same calibration."""
        last = self._last_record
        own_examples, own_slope = (last.window.examples, last.window.slope) if last else (0, 1.0)
        total = weight = 0.0
        for member in self.table.in_model():
            if member == self.me:
                slope, examples = own_slope, own_examples
            else:
                window = self.table.records[member].window
                slope, examples = window.slope, window.examples
            total += slope * examples
            weight += examples
        return Platt(total / weight) if weight else Platt()

    def _prune_released(self) -> None:
        """Forget released partitions whose examples have all left this member's window
        (its buffer has evicted a whole capacity since)."""
        buffer = self.learner.buffer
        self.released = {
            p: (stopped, evicted)
            for p, (stopped, evicted) in self.released.items()
            if buffer.evicted - evicted < buffer.max_examples
        }


def _finite(value: float) -> float:
    return float(value) if math.isfinite(value) else 0.0
