"""A group no record can break: members over an in-memory sync topic fed records that are
not what a member writes (garbage, forgeries, huge or not finite numbers, members nobody
knows). Each is counted and ignored; no member stops, at once or when it starts later.
The Kafka test (tests/daemon/test_serve_group_hostile.py) runs the same with real
processes and a real broker."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from group_forgery import forged
from test_member import MODEL, Reader, Ticks, Topic, _learn, _rows

from streamlearn import PDM
from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import decode_record
from streamlearn.group.signing import SECRET_FILE_VARIABLE, SECRET_VARIABLE, secret_from_env, signed
from streamlearn.learn.contribution import Contribution

MAX_FEATURES = 1 << 26


class Brokers:
    """What the brokers say of the consumer group and of the input topic's logs.

    ``ends``: where a log's end is given (by a ListOffsets request); ``fetched``: where
    a fetch finds it (some brokers give their last batch's start + 1 to the former)."""

    def __init__(self, members: set[str] | None, partitions: int = 2) -> None:
        self.members_now = members
        self.ends = {p: 0 for p in range(partitions)}
        self.fetched: dict[int, int] = {}
        self.asked = 0

    def members(self) -> set[str] | None:
        self.asked += 1
        return None if self.members_now is None else set(self.members_now)

    def log_ends(self, probe: Collection[int] = ()) -> dict[int, int] | None:
        return {p: max(end, self.fetched.get(p, end) if p in probe else end)
                for p, end in self.ends.items()}  # fmt: skip


def _member(topic: Topic, name: str, brokers: Brokers | None = None, **options: Any) -> GroupMember:
    return GroupMember(
        PDM(eps=0.1, delta=1.0, buffer_size=500), topic.reader(), member_id=name, model=MODEL,
        policy=SyncPolicy("dynamic", every=50, threshold=0.05, idle_after=0.0),
        max_features=MAX_FEATURES, consumer_group=brokers, clock=Ticks(), **options,
    )  # fmt: skip


def _group(brokers: Brokers | None = None) -> tuple[Topic, GroupMember, GroupMember]:
    """Members a and b, each with a partition learned and published."""
    topic = Topic()
    a, b = _member(topic, "a", brokers), _member(topic, "b", brokers)
    listed = brokers.members_now if brokers is not None else None
    if brokers is not None:
        brokers.members_now = set()  # their consumers join after the members read
    a.join(), b.join()
    if brokers is not None:
        brokers.members_now = listed
    a.take({0}), b.take({1})
    if brokers is not None:
        brokers.ends = {0: 300, 1: 300}
    _learn(a, 0, seed=1, n=300, offset=300)
    _learn(b, 1, seed=2, n=300, offset=300)
    a.publish(), b.publish()
    a.turn(), b.turn()
    return topic, a, b


def _latest(topic: Topic, key: str) -> bytes:
    return next(value for k, value in reversed(topic.log) if k == key and value is not None)


def _state(member: GroupMember) -> tuple[list[float], float]:
    state = member.learner.state
    return state.weights[: state.n_features].tolist(), state.beta


HOSTILE: dict[str, Callable[[bytes], bytes]] = {
    "a map keyed by an array": lambda _: b"\x81\x91\x01\x01",
    "nothing": lambda _: b"",
    "random bytes": lambda _: np.random.default_rng(3).bytes(200),
    "truncated": lambda real: real[: len(real) // 2],
    "an array of 2^26 declared": lambda _: b"\xdd\x04\x00\x00\x00",
    "a text of 2^31 declared": lambda _: b"\xdb\x80\x00\x00\x00",
    "nested 100000 deep": lambda _: b"\x91" * 100_000,
    "exponent 10^6": lambda real: forged(real, share_exponent=10**6),
    "exponent -1": lambda real: forged(real, share_exponent=-1),
    "weights 1e300": lambda real: forged(real, share_values=np.full(8, 1e300).tobytes()),
    "a weight NaN": lambda real: forged(
        real, share_values=np.array([np.nan] + [1.0] * 7).tobytes()
    ),
    "beta infinite": lambda real: forged(real, share_beta=float("inf")),
    "t a text": lambda real: forged(real, share_updates="1e300"),
    "t negative": lambda real: forged(real, share_updates=-1.0),
    "margin NaN": lambda real: forged(real, window=[10, 500, float("nan"), 1.0, 1.0]),
    "time infinite": lambda real: forged(real, time=float("inf")),
    "sequence a bool": lambda real: forged(real, sequence=True),
    "sequence 2^62": lambda real: forged(real, sequence=2**62),
    "feature 2^26-1 in 429 bytes": lambda real: forged(
        real, share_indices=np.array([2**26 - 1]).tobytes(), share_values=np.ones(1).tobytes()
    ),
    "feature 2^26": lambda real: forged(
        real,
        share_indices=np.arange(2**26 - 2**18, 2**26 + 1).tobytes(),
        share_values=np.ones(2**18 + 1).tobytes(),
    ),
    "indices and values of other lengths": lambda real: forged(
        real, share_values=np.ones(3).tobytes()
    ),
    "an odd number of bytes": lambda real: forged(real, share_indices=b"\x01" * 9),
    "a partition of -1": lambda real: forged(real, partitions={-1: [0, 0]}),
    "a position of a text": lambda real: forged(real, partitions={0: ["1", 0]}),
    "window of 4": lambda real: forged(real, window=[10, 500, 0.1, 1.0]),
    "an ext type": lambda real: forged(real, time=msgpack.ExtType(5, b"x")),
    "another model": lambda real: forged(real, model={**MODEL, "params": {"delta": 2.0}}),
}


def _next_of(topic: Topic, key: str) -> bytes:
    """a's latest record, as the next record of member ``key``: a record any member takes
    (see the first test), so that only what is changed in it can make it refused."""
    real = _latest(topic, "a")
    if key != "a":
        return forged(real, member=key)
    return forged(real, sequence=decode_record(real, MAX_FEATURES).sequence + 1)


@pytest.mark.parametrize("key", ["x", "a"], ids=["a new member", "a member's next"])
def test_a_record_changed_in_nothing_is_taken(key: str) -> None:
    topic, _, b = _group()
    topic.log.append((key, _next_of(topic, key)))
    b.turn()
    assert b.records_refused == 0 and key in b.table.records


@pytest.mark.parametrize("make", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("key", ["x", "a"], ids=["a new member", "a member's next"])
def test_no_record_stops_a_member_and_each_is_counted_and_ignored(
    make: Callable[[bytes], bytes], key: str
) -> None:
    topic, _, b = _group()
    before, refused = _state(b), b.records_refused
    topic.log.append((key, make(_next_of(topic, key))))
    b.turn()
    assert b.records_refused == refused + 1
    assert _state(b) == before
    assert b.learner.state.weights.shape[0] < 1 << 21  # no dense weights for a foreign index
    late = _member(topic, "c")
    late.join()  # a member that starts after the record: it reads it, and refuses it
    assert late.records_refused == 1
    np.testing.assert_array_equal(late.predictor().weights, b.predictor().weights)


def test_a_record_under_another_key_or_with_a_sequence_out_of_step_is_refused() -> None:
    topic, a, b = _group()
    real = _latest(topic, "a")
    held = decode_record(real, MAX_FEATURES).sequence
    topic.log.append(("x", real))  # a's record under another key
    topic.log.append(("a", forged(real, sequence=held + 5)))  # a jump
    topic.log.append(("a", real))  # a's record again
    b.turn()
    assert b.records_refused == 3 and "x" not in b.table.records
    assert b.table.records["a"].sequence == held
    _learn(a, 0, seed=3, n=100, offset=400)
    a.publish()
    b.turn()  # a's next record is taken: it follows the one held by one
    assert b.records_refused == 3 and b.table.records["a"].sequence == held + 1


def test_a_record_under_a_members_key_it_did_not_write_is_refused_by_it() -> None:
    topic, a, _ = _group()
    mine = _latest(topic, "a")
    topic.log.append(("a", mine))  # a copy of its own record
    topic.log.append(("a", forged(mine, sequence=decode_record(mine, MAX_FEATURES).sequence + 1)))
    a.turn()
    assert a.records_refused == 2


def test_a_deletion_of_a_members_record_is_refused() -> None:
    topic, _, b = _group()
    before = _state(b)
    topic.log.append(("a", None))
    b.turn()
    assert b.records_refused == 1 and "a" in b.table.in_model() and _state(b) == before


def test_a_member_the_group_does_not_know_is_refused_and_never_sets_a_start() -> None:
    brokers = Brokers({"a", "b"})
    topic, _, b = _group(brokers)
    phantom = forged(
        _latest(topic, "a"), member="ghost", partitions={0: [300, 10**6], 1: [300, 10**6]}
    )
    topic.log.append(("ghost", phantom))
    b.turn()
    assert b.records_refused == 1 and "ghost" not in b.table.records
    assert b.take({0}) == {0: 300}
    # a member that died is known through the models of those that knew it
    brokers.members_now = {"b"}
    late = _member(topic, "c", brokers)
    late.join()
    assert "a" in late.table.records and "ghost" not in late.table.records
    assert late.records_refused == 1


def test_a_position_beyond_the_end_of_its_log_is_refused() -> None:
    brokers = Brokers({"a", "b"})
    topic, a, b = _group(brokers)
    real = _latest(topic, "a")
    held = decode_record(real, MAX_FEATURES).sequence
    topic.log.append(("a", forged(real, sequence=held + 1, partitions={0: [10**12, 300]})))
    topic.log.append(("a", forged(real, sequence=held + 1, partitions={7: [0, 0]})))
    b.turn()
    assert b.records_refused == 2 and b.table.records["a"].sequence == held
    # a log whose end a ListOffsets gives as its last batch's start + 1 (Tansu): a fetch
    # tells the true end, and a record that stands there is taken
    brokers.ends, brokers.fetched = {0: 301, 1: 300}, {0: 320}
    _learn(a, 0, seed=4, n=20, offset=320)
    a.publish()
    b.turn()
    assert b.records_refused == 2 and b.table.records["a"].partitions[0].offset == 320


def test_a_member_whose_id_is_live_waits_for_it_to_leave_or_refuses_to_start() -> None:
    brokers = Brokers({"a", "b"})
    topic, _, b = _group(brokers)
    twin = _member(topic, "a", brokers, takeover_wait=3.0, sleep=lambda _: None)
    written = len(topic.log)
    with pytest.raises(StateError, match="member id 'a' is taken"):
        twin.join()
    assert len(topic.log) == written

    # the first process leaves (it crashed: its session timed out) while the second waits
    asked = brokers.asked

    def leaves(_: float) -> None:
        if brokers.asked - asked >= 3:
            brokers.members_now = {"b"}

    heir = _member(topic, "a", brokers, takeover_wait=30.0, sleep=leaves)
    heir.join()
    held = decode_record(_latest(topic, "a"), MAX_FEATURES).sequence
    assert heir.own.sequence == held  # it goes on with the id's records
    brokers.members_now = {"a", "b"}
    assert heir.take({0}) == {0: 300}  # where the former process stood
    b.turn()
    assert b.records_refused == 0 and b.table.records["a"].sequence == held + 1


def test_a_member_of_another_model_refuses_to_join_while_the_group_runs() -> None:
    brokers = Brokers({"a", "b"})
    topic, _, _ = _group(brokers)
    other = GroupMember(
        PDM(eps=0.3, delta=1.0), topic.reader(), member_id="c",
        model={"algorithm": "pdm", "params": {"delta": 2.0}}, policy=SyncPolicy(),
        max_features=MAX_FEATURES, consumer_group=brokers,
    )  # fmt: skip
    with pytest.raises(StateError, match="does not join"):
        other.join()
    # started at the same moment as the group's first members: it refuses at its
    # first partitions, publishes nothing, and stops at its next turn
    brokers.members_now = {"a", "b", "c"}
    late = GroupMember(
        PDM(eps=0.3, delta=1.0), Reader(topic), member_id="c",
        model={"algorithm": "pdm", "params": {"delta": 2.0}}, policy=SyncPolicy(),
        max_features=MAX_FEATURES, consumer_group=None,
    )  # fmt: skip
    late.join()  # no view of the group yet: it cannot tell who runs
    late.consumer_group = brokers
    written = len(topic.log)
    assert late.take({1}) == {}
    assert len(topic.log) == written
    with pytest.raises(StateError, match="does not join"):
        late.turn()


def test_members_of_another_max_features_are_of_another_model() -> None:
    topic = Topic()
    a = _member(topic, "a")
    a.join(), a.take({0})
    b = GroupMember(
        PDM(eps=0.1, delta=1.0), topic.reader(), member_id="b", model=MODEL,
        policy=SyncPolicy(), max_features=1 << 20,
    )  # fmt: skip
    b.join()
    assert b.records_refused == 1 and "a" not in b.table.records


def test_a_share_scaled_further_than_the_reader_is_summed_exactly_in_its_units() -> None:
    topic, _, b = _group()
    share = b.table.records["a"].share
    real = _latest(topic, "a")
    held = decode_record(real, MAX_FEATURES).sequence
    scaled = share.at_exponent(60)  # a member that scaled its state down 60 times
    topic.log.append(("a", forged(
        real, sequence=held + 1, share_values=scaled.values.tobytes(), share_beta=scaled.beta,
        share_updates=scaled.updates, share_slack=scaled.slack, share_exponent=60,
    )))  # fmt: skip
    b.turn()
    assert b.records_refused == 0 and b.learner.state.scale_exponent == 60
    assert np.all(np.isfinite(b.learner.state.weights))
    mine = b.shares.own()
    assert mine.exponent == 60 and np.isfinite(mine.updates)


def test_a_sparse_share_far_up_the_features_is_padded_and_taken() -> None:
    topic = Topic()
    a, b = _member(topic, "a"), _member(topic, "b")
    a.join(), b.join()
    a.take({0})
    far = _rows(seed=5, n=50)
    far.indices[:] += 5_000_000  # type: ignore[attr-defined]
    a.learner.learn_rows(far)  # type: ignore[arg-type]
    a.learned({0: 50}, {0: 50})
    a.publish()
    b.turn()
    assert b.records_refused == 0
    assert b.table.records["a"].share.n_features == a.shares.own().n_features > 5_000_000


def test_a_share_with_more_features_than_its_entries_pay_for_is_refused() -> None:
    plain = Contribution(np.array([2_000_000]), np.ones(1), 0.0, 1.0, 1.0).to_plain()
    plain["indices"], plain["values"] = np.array([2_000_000]).tobytes(), np.ones(1).tobytes()
    with pytest.raises(StateError, match="beyond what 1 entries may span"):
        Contribution.from_plain(plain, max_features=MAX_FEATURES)


def _signed_member(topic: Topic, name: str, secret: bytes | None) -> GroupMember:
    return _member(topic, name, secret=secret)


def test_with_a_shared_secret_only_records_signed_with_it_are_taken() -> None:
    topic = Topic()
    a, b = _signed_member(topic, "a", b"s3cret"), _signed_member(topic, "b", b"s3cret")
    a.join(), b.join()
    a.take({0}), b.take({1})
    _learn(a, 0, seed=1, n=300, offset=300)
    a.publish()
    b.turn()
    assert b.records_refused == 0 and b.table.records["a"].examples == 300
    real = _latest(topic, "a")
    unsigned = real[: -len(signed(b"", "a", b"s3cret"))]
    following = forged(unsigned, sequence=decode_record(unsigned, MAX_FEATURES).sequence + 1)
    topic.log.append(("a", following))  # a valid next record, without the secret
    topic.log.append(("a", signed(following, "a", b"other")))  # with another secret
    topic.log.append(("x", signed(forged(unsigned, member="x"), "x", b"other")))
    topic.log.append(("c", real))  # a's signed record under another key
    b.turn()
    assert b.records_refused == 4 and b.table.records["a"].examples == 300
    assert set(b.table.records) == {"a", "b"}
    plain = _signed_member(topic, "c", None)  # without the secret: no signed record
    plain.join()
    assert set(plain.table.records) == {"a"}  # the forgery was all it could read
    assert plain.table.records["a"].sequence == decode_record(following, MAX_FEATURES).sequence


def test_the_secret_comes_from_the_environment_or_a_file(tmp_path: Path) -> None:
    assert secret_from_env({}) is None
    assert secret_from_env({SECRET_VARIABLE: " s3cret "}) == b"s3cret"
    path = tmp_path / "secret"
    path.write_text("from a file\nnot this\n")
    assert secret_from_env({SECRET_FILE_VARIABLE: str(path)}) == b"from a file"
    for environ in (
        {SECRET_VARIABLE: "a", SECRET_FILE_VARIABLE: str(path)},
        {SECRET_VARIABLE: "  "},
        {SECRET_FILE_VARIABLE: str(tmp_path / "missing")},
    ):
        with pytest.raises(InvalidParameterError):
            secret_from_env(environ)
