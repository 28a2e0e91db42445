"""Group members over an in-memory sync topic: what they publish, fold, resume and drop
(the Kafka tests run the same with real processes and a real broker)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamlearn import PDM
from streamlearn.errors import InputError
from streamlearn.group.member import HANDOVER_RETRY, HANDOVER_WAIT, GroupMember, share_distance
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import PartitionPosition, decode_record
from streamlearn.group.table import GroupTable
from streamlearn.learn.inputs import as_batch

MODEL = {"algorithm": "pdm", "params": {"delta": 1.0}}


class Topic:
    """A log of keyed records that every reader follows from the start."""

    def __init__(self) -> None:
        self.log: list[tuple[str, bytes | None]] = []

    def reader(self) -> Reader:
        return Reader(self)


class Reader:
    def __init__(self, topic: Topic) -> None:
        self.topic = topic
        self.at = 0
        self.bytes_written = 0
        self.bytes_read = 0

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]:
        entries = self.topic.log[self.at :]
        self.at = len(self.topic.log)
        return entries

    def write(self, key: str, value: bytes | None) -> None:
        self.topic.log.append((key, value))
        self.bytes_written += len(value or b"")


def _member(
    topic: Topic, name: str, policy: SyncPolicy | None = None, buffer: int = 500
) -> GroupMember:
    learner = PDM(eps=0.1, delta=1.0, buffer_size=buffer)
    return GroupMember(
        learner, topic.reader(), member_id=name, model=MODEL,
        policy=policy or SyncPolicy("dynamic", every=50, threshold=0.05, idle_after=0.0),
        max_features=1 << 20, clock=Ticks(),
    )  # fmt: skip


class Ticks:
    """A clock that moves a tenth of a second each time it is read: every turn looks at
    the topic, and no minute passes within a test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.1
        return self.now


def _rows(seed: int, n: int) -> object:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    y = np.where(X @ np.arange(1.0, 9.0) > 0, 1.0, -1.0)
    indptr = np.arange(0, 8 * n + 1, 8)
    return as_batch((indptr, np.tile(np.arange(8), n), X.ravel()), y)


def _learn(member: GroupMember, partition: int, seed: int, n: int, offset: int) -> None:
    member.learner.learn_rows(_rows(seed, n))  # type: ignore[arg-type]
    member.learned({partition: n}, {partition: offset})


def test_members_that_read_the_same_records_hold_the_same_bits() -> None:
    topic = Topic()
    a, b = _member(topic, "a"), _member(topic, "b")
    a.join(), b.join()
    assert a.take({0}) == {} and b.take({1}) == {}
    for step in range(4):
        _learn(a, 0, seed=step, n=100, offset=100 * (step + 1))
        _learn(b, 1, seed=10 + step, n=100, offset=100 * (step + 1))
        a.turn(), b.turn()
    a.turn(idle=True), b.turn(idle=True)
    a.turn(), b.turn()
    np.testing.assert_array_equal(a.learner.state.weights, b.learner.state.weights)
    assert a.learner.calibration() == b.learner.calibration()
    records = {key: decode_record(value, 1 << 20) for key, value in topic.log if value}
    assert records["a"].partitions[0].examples == 400


def test_members_that_hold_the_same_records_calibrate_alike_while_one_learns_on() -> None:
    topic = Topic()
    a, b = _member(topic, "a"), _member(topic, "b")
    a.join(), b.join()
    a.take({0}), b.take({1})
    _learn(a, 0, seed=1, n=300, offset=300)
    a.publish()
    _learn(b, 1, seed=2, n=300, offset=300)
    b.publish()
    _learn(a, 0, seed=3, n=300, offset=600)  # not published: a folds b's record dirty
    a.turn(), b.turn()
    assert a.learner.calibration() == b.learner.calibration()


def test_members_that_learn_alike_at_once_make_the_mean_of_their_models() -> None:
    """Two members that learn the same examples at once publish a common model equal
    to what one of them learned alone (the mean of two equal models), not twice it."""
    topic = Topic()
    a, b = _member(topic, "a"), _member(topic, "b")
    a.join(), b.join()
    a.take({0}), b.take({1})
    a.turn(), b.turn()  # each knows the other learns
    alone = PDM(eps=0.1, delta=1.0, buffer_size=500)
    for member, partition in ((a, 0), (b, 1)):
        _learn(member, partition, seed=5, n=200, offset=200)
    alone.learn_rows(_rows(seed=5, n=200))  # type: ignore[arg-type]
    a.publish()
    b.turn(), b.publish()
    a.turn()
    for member in (a, b):
        np.testing.assert_allclose(member.learner.state.weights, alone.state.weights, rtol=1e-12)
        assert member.learner.state.updates == pytest.approx(alone.state.updates)
        own = member.shares.own()  # still exactly what its window's alpha_k make
        window = member.learner.buffer
        assert own.updates == pytest.approx(window.alpha().sum())
        expected = np.zeros(member.learner.state.n_features)
        window.add_rows(
            window.live_slots(), window.alpha() * window.slot_label[window.live_slots()], expected
        )
        np.testing.assert_allclose(own.values, expected[own.indices], atol=1e-12)


def test_members_replaying_while_idle_go_quiet_and_answer_alike() -> None:
    """After the stream, members replay their windows as the daemon does when idle; each
    change published set the others replaying again. They must settle: no more records,
    and the same bits everywhere."""
    topic = Topic()
    members = [_member(topic, name) for name in ("a", "b", "c")]
    for partition, member in enumerate(members):
        member.join()
        member.take({partition})
    for partition, member in enumerate(members):
        _learn(member, partition, seed=20 + partition, n=300, offset=300)
    quiet_rounds = 0
    for _ in range(300):
        written = len(topic.log)
        for member in members:
            if not member.learner.converged:
                updates = member.learner.state.updates
                member.learner.replay(max_passes=1)
                if member.learner.state.updates != updates:
                    member.changed()
            member.turn(idle=True)
        settled = len(topic.log) == written and all(m.learner.converged for m in members)
        quiet_rounds = quiet_rounds + 1 if settled else 0
        if quiet_rounds == 3:
            break
    assert quiet_rounds == 3, f"{len(topic.log)} records and still publishing"
    for member in members[1:]:
        np.testing.assert_array_equal(
            member.learner.state.weights, members[0].learner.state.weights
        )


def test_a_member_publishes_when_its_own_change_passes_the_threshold_whatever_k() -> None:
    """Kamp et al.'s local condition: a member of a group of 4 publishes at a check
    exactly when ||share - last record|| > threshold ||model||, not that divided by K
    (so that the common model every member answers with stays within the threshold of
    the mean of the members' models, however many they are)."""
    topic = Topic()
    policy = SyncPolicy("dynamic", every=50, threshold=0.3, share=1.0)
    member = _member(topic, "a", policy)
    member.join()
    member.take({0})
    for partition in range(1, 4):
        other = _member(topic, f"o{partition}")
        other.join()
        other.take({partition})
    member.turn()
    assert member.table.learning() == 4
    decided = {True: 0, False: 0}
    for step in range(12):
        _learn(member, 0, seed=40 + step, n=50, offset=50 * (step + 1))
        state = member.learner.state
        weights = state.weights[: state.n_features]
        norm = math.sqrt(float(weights @ weights) + state.beta**2)
        drift = share_distance(member.shares.own(slack=False), member.common.published)
        before = member.records_written
        member.turn()
        published = member.records_written > before
        assert published == (drift > 0.3 * norm)
        decided[published] += 1
    assert decided[True] and decided[False]  # both happened


def test_a_partition_resumes_where_its_last_owner_published() -> None:
    topic = Topic()
    a, b = _member(topic, "a"), _member(topic, "b")
    a.join(), b.join()
    a.take({0})
    _learn(a, 0, seed=1, n=120, offset=12)
    a.release({0}, {0: 12})
    assert b.take({0}) == {0: 12}
    assert b.partitions[0].examples == 120  # the partition's count goes on


def test_the_share_of_a_dead_member_leaves_once_its_partitions_relearned_a_window() -> None:
    topic = Topic()
    dead, taker = _member(topic, "dead", buffer=200), _member(topic, "taker")
    dead.join(), taker.join()
    dead.take({0})
    _learn(dead, 0, seed=2, n=150, offset=150)
    dead.publish()  # then killed: it says nothing more
    assert taker.take({0}) == {0: 150}
    assert "dead" in taker.table.in_model()
    _learn(taker, 0, seed=3, n=100, offset=250)
    taker.publish()
    assert "dead" in taker.table.in_model()  # 100 examples relearned; its window held 150
    _learn(taker, 0, seed=4, n=60, offset=310)
    taker.publish()
    assert taker.table.dropped() == {"dead"}
    own = taker.shares.own()
    assert taker.learner.state.updates == pytest.approx(own.updates)  # nothing else is left


def test_no_bound_comes_from_shares_that_hold_evicted_examples() -> None:
    """Evicted examples that a replay saw stay in a member's share until its next replay:
    ||h|| / s of such a share bounds the margin of more examples than the windows hold,
    not theirs."""
    topic = Topic()
    member = _member(topic, "a", buffer=200)
    member.join()
    member.take({0})
    _learn(member, 0, seed=5, n=200, offset=200)
    member.learner.replay()
    _learn(member, 0, seed=6, n=100, offset=300)
    member.publish()
    assert member.shares.own().evicted == 100
    assert math.isnan(member.upper_bound(math.inf))
    member.learner.replay()
    member.publish()
    assert member.shares.own().evicted == 0
    bound = member.learner.margin_upper_bound()  # its window's, from the buffer
    assert member.upper_bound(math.inf) == pytest.approx(bound, rel=1e-9)


def test_records_of_another_model_are_refused_and_counted() -> None:
    topic = Topic()
    other = GroupMember(
        PDM(eps=0.3, delta=1.0), topic.reader(), member_id="other",
        model={"algorithm": "pdm", "params": {"delta": 2.0}}, policy=SyncPolicy(),
        max_features=1 << 20,
    )  # fmt: skip
    other.join()
    other.take({0})
    ours = _member(topic, "ours")
    ours.join()
    assert ours.records_refused == 1 and "other" not in ours.table.in_model()
    topic.log.append(("junk", b"\x00not msgpack"))
    ours.turn()
    assert ours.records_refused == 2


def test_periodic_averaging_publishes_on_count_dynamic_only_on_drift() -> None:
    periodic = _member(Topic(), "p", SyncPolicy("periodic", every=50, share=1.0))
    dynamic = _member(Topic(), "d", SyncPolicy("dynamic", every=50, threshold=0.2, share=1.0))
    for member, partition in ((periodic, 0), (dynamic, 1)):
        member.join()
        member.take({partition})
    written = {}
    for member, partition in ((periodic, 0), (dynamic, 1)):
        before = member.records_written
        for step in range(10):
            _learn(member, partition, seed=step, n=50, offset=50 * (step + 1))
            member.turn()
        written[member.me] = member.records_written - before
    assert written["p"] == 10
    assert 1 <= written["d"] < 10


class Clock:
    """A clock that moves when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class SlowBroker(Reader):
    """A sync topic that takes a second to acknowledge each record."""

    def __init__(self, topic: Topic, clock: Clock) -> None:
        super().__init__(topic)
        self.clock = clock

    def write(self, key: str, value: bytes | None) -> None:
        self.clock.now += 1.0
        super().write(key, value)


@pytest.mark.parametrize("share", [0.25, 1.0])
def test_publishing_takes_at_most_its_share_of_the_time(share: float) -> None:
    clock = Clock()
    member = GroupMember(
        PDM(eps=0.1, delta=1.0), SlowBroker(Topic(), clock), member_id="m", model=MODEL,
        policy=SyncPolicy("periodic", every=50, share=share), max_features=1 << 20,
        clock=clock,
    )  # fmt: skip
    member.join()
    member.take({0})
    started, written = clock.now, member.records_written
    for step in range(40):
        _learn(member, 0, seed=step, n=50, offset=step + 1)
        clock.now += 0.5  # learning the 50 examples
        member.turn()
    published = member.records_written - written  # each took 1 s of the clock
    if share == 1.0:
        assert published == 40 and member.records_deferred == 0
    else:
        assert member.records_deferred > 0
        assert 0 < published <= share * (clock.now - started) + 1


def test_the_table_refuses_nothing_it_should_take() -> None:
    table = GroupTable("me", MODEL)
    assert table.start(3) is None and table.in_model() == ["me"]


class Failing(Reader):
    """A sync topic that refuses the next ``failures`` writes and reads."""

    def __init__(self, topic: Topic, failures: int) -> None:
        super().__init__(topic)
        self.failures = failures

    def write(self, key: str, value: bytes | None) -> None:
        if self.failures:
            self.failures -= 1
            raise InputError("broker away")
        super().write(key, value)

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]:
        if self.failures:
            self.failures -= 1
            raise InputError("broker away")
        return super().read(to_end=to_end, timeout=timeout)


def test_a_broker_away_delays_records_and_commits_but_stops_nothing() -> None:
    topic = Topic()
    committed: list[dict[int, int]] = []
    transport = Failing(topic, failures=0)
    member = GroupMember(
        PDM(eps=0.1, delta=1.0), transport, member_id="m", model=MODEL,
        policy=SyncPolicy("periodic", every=1000, idle_after=0.0), max_features=1 << 20,
        commit=committed.append, clock=Ticks(),
    )  # fmt: skip
    member.join()
    member.take({0})  # inside a rebalance: committed at the next turn
    assert committed == []
    member.turn()
    assert committed[-1] == {0: 0}
    transport.failures = 1
    _learn(member, 0, seed=1, n=50, offset=5)
    member.turn()  # the read fails: nothing folded, nothing lost
    transport.failures = 2
    member.publish()  # the read before it fails, then the write: counted, tried again
    assert member.records_failed == 1 and committed[-1] == {0: 0}
    member.turn(idle=True)
    assert committed[-1] == {0: 5}
    record = decode_record(topic.log[-1][1] or b"", 1 << 20)
    assert record.partitions[0].offset == 5 and record.sequence == 2
    transport.failures = 1
    assert member.take({1}) == {}  # unreadable: the consumer group's committed offsets


class LateReader(Reader):
    """A member's view of the topic where records arrive late: a look at what has
    arrived finds nothing; only a read to the end gets them."""

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]:
        return super().read(to_end=to_end) if to_end else []


def _late_pair() -> tuple[GroupMember, GroupMember]:
    """Members a (partition 0) and b (partition 1, whose looks at the topic find
    nothing: only reads to the end get the records)."""
    topic = Topic()
    a = _member(topic, "a")
    b = GroupMember(
        PDM(eps=0.1, delta=1.0, buffer_size=500), LateReader(topic), member_id="b",
        model=MODEL, policy=SyncPolicy("periodic", every=10_000, share=1.0),
        max_features=1 << 20, clock=Ticks(),
    )  # fmt: skip
    a.join(), b.join()
    a.take({0}), b.take({1})
    return a, b


def test_a_member_folds_every_record_published_before_it_replays() -> None:
    """A replay under records a period old corrected again what the others had
    corrected already (4 members whose reads lagged ended at 0.18 on a9a.test): a
    member reads the topic to its end as a replay starts, and keeps what it learned
    since its last report to the group."""
    a, b = _late_pair()
    _learn(b, 1, seed=3, n=100, offset=100)
    b.turn()
    _learn(a, 0, seed=1, n=100, offset=100)
    a.publish()
    b.turn()
    assert b.table.records["a"].examples == 0  # the record has not reached b
    b.learner.learn_rows(_rows(4, 50))  # type: ignore[arg-type]  # not reported yet
    unreported = b.shares.own().updates
    assert unreported > b.table.records["b"].share.updates
    b.learner.replay(max_passes=1)
    assert b.table.records["a"].examples == 100  # folded as the replay began
    own = b.shares.own()
    assert own.updates >= unreported  # the unreported examples kept (a replay only adds)
    expected = np.zeros(b.learner.state.weights.shape[0])
    for share in (b.table.records["a"].share, own):
        share.add_to(expected)
    np.testing.assert_allclose(b.learner.state.weights, expected, rtol=1e-9, atol=1e-9)


def test_a_member_folds_every_record_published_before_it_publishes() -> None:
    """A member's record follows every record it could read: its change is concurrent
    with the others' of one period at most (with reads 8 periods late, 4 members
    publishing every 1,000 examples ended answering -1 to everything)."""
    a, b = _late_pair()
    _learn(a, 0, seed=1, n=100, offset=100)
    a.publish()
    _learn(b, 1, seed=3, n=100, offset=100)
    b.turn()
    assert b.table.records["a"].examples == 0  # not read yet
    b.publish()
    assert b.table.records["a"].examples == 100
    expected = np.zeros(b.learner.state.weights.shape[0])
    for share in (b.table.records["a"].share, b.table.records["b"].share):
        share.add_to(expected)
    np.testing.assert_allclose(b.learner.state.weights, expected, rtol=1e-9, atol=1e-9)


def test_a_member_caught_up_between_messages_waits_for_a_pause_before_it_publishes() -> None:
    """A paced stream leaves its member caught up between most messages; were that idle,
    the member would publish what it learned after nearly every poll, whatever its
    protocol. It publishes once the stream has brought nothing for ``idle_after``."""
    topic = Topic()
    policy = SyncPolicy("dynamic", every=1000, threshold=1e9, idle_after=1.0, share=1.0)
    member = _member(topic, "m", policy)  # its clock: a tenth of a second each reading
    member.join()
    member.take({0})
    taken = member.records_written
    for step in range(5):  # a message, then a caught-up turn, five times
        _learn(member, 0, seed=step, n=20, offset=20 * (step + 1))
        member.turn(idle=True)
    assert member.records_written == taken
    for _ in range(10):  # the stream brings nothing: past a second, it is a pause
        member.turn(idle=True)
    assert member.records_written == taken + 1
    record = decode_record(topic.log[-1][1] or b"", 1 << 20)
    assert record.partitions[0].offset == 100 and record.examples == 100


def test_the_last_word_is_written_only_when_it_says_something_new() -> None:
    """A member stopped after it published at a pause writes no record that repeats its
    last one; one that learned since, or gave partitions up, does."""
    topic = Topic()
    member = _member(topic, "m")
    member.join()
    member.take({0, 1})
    _learn(member, 0, seed=1, n=40, offset=40)
    member.turn(idle=True)  # the pause: its share and positions published
    written = member.records_written
    member.publish_last_word()
    assert member.records_written == written
    _learn(member, 1, seed=2, n=10, offset=10)
    member.publish_last_word()
    assert member.records_written == written + 1
    _learn(member, 1, seed=3, n=5, offset=15)
    member.release({1}, {1: 15})
    member.publish_last_word()
    assert member.records_written == written + 2  # the release, then nothing new
    record = decode_record(topic.log[-1][1] or b"", 1 << 20)
    assert set(record.partitions) == {0} and record.released[1].offset == 15


def test_a_partition_given_up_where_the_last_record_stands_needs_no_record() -> None:
    """A member stopped once caught up gives its partitions up where its last record
    already stands: no record; their next owner resumes there all the same, and the
    group learns nothing twice. Given up past it, the member publishes."""
    topic = Topic()
    member = _member(topic, "m")
    member.join()
    member.take({0, 1})
    _learn(member, 0, seed=1, n=40, offset=40)
    _learn(member, 1, seed=2, n=30, offset=30)
    member.turn(idle=True)
    written = member.records_written
    member.release({0}, {0: 40})
    member.publish_last_word()
    assert member.records_written == written
    other = _member(topic, "o")
    other.join()
    assert other.take({0}) == {0: 40}
    member.release({1}, {1: 31})  # a message without a label polled since
    assert member.records_written == written + 1
    record = decode_record(topic.log[-1][1] or b"", 1 << 20)
    assert record.released[1].offset == 31 and record.released[0].offset == 40


def test_a_record_published_outside_a_turn_is_reported_by_the_next_turn() -> None:
    """A checkpoint publishes (and folds) outside the turns: the next turn says the
    model changed, so that the daemon gives its HTTP API a new copy (an idle member whose
    checkpoint published its last record answered with the model before it for good)."""
    topic = Topic()
    a = _member(topic, "a")
    a.join()
    a.take({0})
    a.turn()
    _learn(a, 0, seed=1, n=30, offset=30)  # fewer than --sync-every: nothing published
    assert not a.turn()
    assert a.predictor().weights.shape == (0,)  # its first record: nothing learned
    a.checkpoint_state()  # publishes: the common model is now its new record
    assert a.predictor().weights.shape == (8,)
    assert a.turn(idle=True)  # the daemon learns of it
    assert not a.turn(idle=True)  # and only once


def _failing_member(topic: Topic, name: str) -> tuple[GroupMember, Failing]:
    """Member ``name`` over a sync topic that refuses what it is told to; its clock moves
    only when it waits."""
    transport = Failing(topic, failures=0)
    clock = Clock()

    def sleep(seconds: float) -> None:
        clock.now += seconds

    member = GroupMember(
        PDM(eps=0.1, delta=1.0, buffer_size=500), transport, member_id=name, model=MODEL,
        policy=SyncPolicy("periodic", every=10_000, idle_after=0.0), max_features=1 << 20,
        clock=clock, sleep=sleep,
    )  # fmt: skip
    return member, transport


def test_a_record_refused_at_a_revocation_is_written_before_the_rebalance_goes_on() -> None:
    """The record that says where a member stopped in the partitions it gives up is what
    their next owner resumes from: one the broker refuses is tried again at once (the
    rebalance waits), not at the next sync, when the next owner has relearned from an
    older record what this member learned since."""
    topic = Topic()
    a, transport = _failing_member(topic, "a")
    b = _member(topic, "b")
    a.join(), b.join()
    a.take({0})
    _learn(a, 0, seed=1, n=120, offset=12)
    transport.failures = 4  # the reads before two records, and the records
    a.release({0}, {0: 12})
    assert a.records_failed == 2
    assert b.take({0}) == {0: 12}
    assert b.partitions[0].examples == 120


def test_a_record_the_broker_never_takes_at_a_revocation_holds_the_rebalance_a_while() -> None:
    topic = Topic()
    a, transport = _failing_member(topic, "a")
    a.join()
    a.take({0})
    _learn(a, 0, seed=1, n=20, offset=2)
    transport.failures = 10**6
    a.release({0}, {0: 2})  # gives up after HANDOVER_WAIT: the rebalance goes on
    assert a.records_failed == HANDOVER_WAIT / HANDOVER_RETRY


def test_partitions_taken_while_the_sync_topic_cannot_be_read_resume_where_its_records_stand() -> (
    None
):
    """Committed offsets trail the records (a record is committed after it is written,
    one written at a revocation never): a member that cannot read the topic to its end
    when it takes partitions resumes them where the records it read before stand, and
    holds them (its records say where it stands in them, and count what it learns)."""
    topic = Topic()
    a = _member(topic, "a")
    b, transport = _failing_member(topic, "b")
    a.join(), b.join()
    a.take({0, 1})
    _learn(a, 0, seed=1, n=120, offset=12)
    a.publish()
    b.turn()  # b reads a's record
    a.release({0}, {0: 12})
    transport.failures = 1  # the read to the end fails
    assert b.take({0, 2}) == {0: 12}
    _learn(b, 0, seed=2, n=50, offset=17)
    b.publish()
    record = decode_record(topic.log[-1][1] or b"", 1 << 20)
    assert record.member == "b" and record.partitions[0] == PartitionPosition(17, 170)
    assert record.partitions[2] == PartitionPosition(0, 0)


class Listed:
    """A consumer group that lists the members in ``members`` (and no input topic)."""

    def __init__(self, members: set[str]) -> None:
        self.members_now = members

    def members(self) -> set[str] | None:
        return set(self.members_now)

    def log_ends(self, probe: object = ()) -> dict[int, int] | None:
        return None


def _listed_member(topic: Topic, name: str, group: Listed) -> GroupMember:
    return GroupMember(
        PDM(eps=0.1, delta=1.0, buffer_size=500), topic.reader(), member_id=name, model=MODEL,
        policy=SyncPolicy("periodic", every=10_000, idle_after=0.0), max_features=1 << 20,
        consumer_group=group, clock=Ticks(),
    )  # fmt: skip


def test_a_member_whose_session_expired_publishes_nothing_that_claims_the_partitions_lost() -> None:
    """A member the consumer group removed (its session expired under load) is told of
    its partitions when it polls again, after their next owner took them from where its
    last record stands: a record saying it stopped further on would claim what the next
    owner is learning. It gives them up where that record stands, and says nothing more
    of them; one still in the group hands them over."""
    topic = Topic()
    group = Listed(set())  # their consumers join after the members read the topic
    a, b = (_listed_member(topic, name, group) for name in ("a", "b"))
    a.join(), b.join()
    group.members_now = {"a", "b"}
    a.take({0, 1}), b.take({2})
    _learn(a, 0, seed=1, n=120, offset=12)
    a.publish()
    _learn(a, 0, seed=2, n=80, offset=20)  # learned on, its session expired meanwhile
    group.members_now = {"b"}
    assert b.take({0}) == {0: 12}
    written = a.records_written
    a.release({0, 1}, {0: 20, 1: 0})  # the consumer group says they are lost
    assert a.records_written == written and a.partitions == {}
    a.publish()  # its next record (what it learned stays in its share)
    record = decode_record(topic.log[-1][1] or b"", 1 << 20)
    assert record.member == "a" and record.partitions == {}
    assert record.released == {0: PartitionPosition(12, 120), 1: PartitionPosition(0, 0)}
    group.members_now = {"a", "b"}
    b.release({0}, {0: 15})  # in the group: handed over where it stopped
    assert decode_record(topic.log[-1][1] or b"", 1 << 20).released[0].offset == 15


def test_a_member_that_lost_its_partitions_goes_back_to_its_last_record() -> None:
    """What a member removed from the consumer group learned after its last record is
    learned again by the partitions' next owners, from where that record stands: the
    member drops it (window, share and count as they were at that record), so that the
    group holds each example once."""
    topic = Topic()
    group = Listed(set())
    a, b = (_listed_member(topic, name, group) for name in ("a", "b"))
    a.join(), b.join()
    group.members_now = {"a", "b"}
    a.take({0}), b.take({1})
    _learn(a, 0, seed=1, n=120, offset=12)
    a.publish()
    weights, window = a.learner.state.weights.copy(), len(a.learner.buffer)
    own = a.shares.own()
    _learn(a, 0, seed=2, n=80, offset=20)
    a.learner.replay(max_passes=2, interrupt=lambda: False)
    group.members_now = {"b"}
    assert b.take({0}) == {0: 12}
    a.release({0}, {0: 20})
    assert a.examples == 120 and len(a.learner.buffer) == window
    np.testing.assert_array_equal(a.learner.state.weights, weights)
    assert a.shares.own() == own
    assert a.records_written == 2  # the take's and the one at 12: nothing since
    group.members_now = {"a", "b"}
    _learn(b, 0, seed=2, n=80, offset=20)
    b.release({0}, {0: 20})
    assert a.take({0}) == {0: 20}
    a.turn()
    record = decode_record(topic.log[-1][1] or b"", 1 << 20)
    assert record.member == "a" and record.examples == 120
    assert record.partitions[0] == PartitionPosition(20, 200)


def test_a_member_the_consumer_group_no_longer_lists_publishes_nothing() -> None:
    """Between its session's expiry and its consumer's next poll, a member goes on
    learning what it had fetched: a record then would claim what the partitions' next
    owners learn, and carry it into the state it goes back to once it learns of the loss."""
    topic = Topic()
    group = Listed(set())
    a, b = (_listed_member(topic, name, group) for name in ("a", "b"))
    a.join(), b.join()
    group.members_now = {"a", "b"}
    a.take({0}), b.take({1})
    _learn(a, 0, seed=1, n=120, offset=12)
    a.publish()
    group.members_now = {"b"}
    _learn(a, 0, seed=2, n=80, offset=20)
    a.publish()
    assert a.records_written == 2  # its take's and the one at 12
    a.release({0}, {0: 20})
    assert a.examples == 120
