"""Members of a learning group that learn one-vs-rest banks, over an in-memory sync
topic: labels matched by value, the common bank the sum of the shares, Delta agreed,
checkpoints taken back."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from test_member import Ticks, Topic

from streamlearn import PDM
from streamlearn.checkpoint.codec import decode, encode
from streamlearn.errors import StateError
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import LabelShares, MemberRecord, decode_record, encode_record
from streamlearn.learn import LabelledRows, ModelBank
from streamlearn.learn.bank import state_to_write
from streamlearn.learn.contribution import Contribution, summed
from streamlearn.learn.model import ModelLimits
from streamlearn.learn.predictor import BankPredictor

BANK = {"algorithm": "pdm", "params": {"delta": 1.0, "one_vs_rest": True}}
CENTRES = {0.0: 0, 1.0: 2, 2.0: 4, 7.0: 6}  # label value: the feature its examples lean on


def _bank(delta: float | str = 1.0) -> ModelBank:
    return ModelBank(PDM(eps=0.1, delta=delta, buffer_size=300))


def _member(
    topic: Topic, name: str, bank: ModelBank | None = None, model: dict[str, Any] = BANK
) -> GroupMember:
    return GroupMember(
        bank or _bank(), topic.reader(), member_id=name, model=model,
        policy=SyncPolicy("dynamic", every=50, threshold=0.05, idle_after=0.0),
        max_features=1 << 20, clock=Ticks(),
    )  # fmt: skip


def _rows(seed: int, n: int, labels: list[float]) -> LabelledRows:
    """``n`` examples of 8 features, each of one label drawn from ``labels``, its
    feature of :data:`CENTRES` raised."""
    rng = np.random.default_rng(seed)
    y = rng.choice(labels, size=n)
    X = rng.normal(scale=0.3, size=(n, 8))
    X[np.arange(n), [CENTRES[v] for v in y]] += 2.0
    indptr = np.arange(0, 8 * n + 1, 8, dtype=np.int64)
    return LabelledRows(
        indptr, np.tile(np.arange(8, dtype=np.int32), n), X.ravel(),
        np.arange(n + 1, dtype=np.int64), y.astype(np.float64),
    )  # fmt: skip


def _learn(member: GroupMember, partition: int, rows: LabelledRows, offset: int) -> None:
    member.learner.learn_rows(rows)
    member.learned({partition: rows.n_examples}, {partition: offset})


def _questions() -> tuple[Any, ...]:
    rows = _rows(99, 20, list(CENTRES))
    return rows.indptr, rows.indices, rows.values


def _synchronised(topic: Topic) -> tuple[GroupMember, GroupMember]:
    """Member a learns labels 0, 1 and 7 (7 only it ever sees), b labels 2 then 1 (in
    another order, never 0 or 7); both publish what they learned and read the other's."""
    a, b = _member(topic, "a"), _member(topic, "b")
    a.join(), b.join()
    a.take({0}), b.take({1})
    for step in range(3):
        _learn(a, 0, _rows(step, 100, [0.0, 1.0, 7.0]), offset=100 * (step + 1))
        _learn(b, 1, _rows(10 + step, 100, [2.0] if step == 0 else [2.0, 1.0]), 100 * (step + 1))
        a.turn(), b.turn()
    a.turn(idle=True), b.turn(idle=True)
    a.turn(), b.turn()
    return a, b


def _last_records(topic: Topic) -> dict[str, MemberRecord]:
    return {key: decode_record(value, 1 << 20) for key, value in topic.log if value}


def test_two_bank_members_answer_alike_with_the_sum_of_their_shares() -> None:
    topic = Topic()
    a, b = _synchronised(topic)
    assert set(a.learner.labels_.tolist()) == {0.0, 1.0, 7.0}
    assert b.learner.labels_.tolist() == [2.0, 1.0]  # b never saw 0 or 7
    questions = _questions()
    assert a.answers(questions) == b.answers(questions)
    common = a.predictor()
    assert isinstance(common, BankPredictor)
    assert sorted(common.labels) == [0, 1, 2, 7]
    # every label's weights are the sum of the members' last shares of it
    records = _last_records(topic)
    for row, label in enumerate(common.labels):
        shares = [
            share
            for share in (records[m].labels.get(float(label)) for m in ("a", "b"))  # type: ignore[union-attr]
            if share is not None
        ]
        weights, (beta, _, _) = summed(shares, 0)
        np.testing.assert_array_equal(common.weights[row, : weights.shape[0]], weights)
        assert common.intercepts[row] == pytest.approx(beta)  # rho = 1
    only_a = [records[m].labels.get(7.0) for m in ("a", "b")]  # type: ignore[union-attr]
    assert only_a[0] is not None and only_a[1] is None  # a label b never saw: nothing of b


def test_each_label_of_a_member_holds_the_sum_of_the_shares_it_has() -> None:
    """A member's learner of a label is the common model of that label (plus what it
    learned since its record): the same bits for a label both have."""
    topic = Topic()
    a, b = _synchronised(topic)
    label_a = a.learner.learner(1.0)
    label_b = b.learner.learner(1.0)
    n = max(label_a.state.n_features, label_b.state.n_features)
    np.testing.assert_array_equal(label_a.state.weights[:n], label_b.state.weights[:n])
    assert label_a.state.updates == label_b.state.updates


def test_a_bank_record_round_trips_and_a_binary_record_is_as_before() -> None:
    topic = Topic()
    a, _ = _synchronised(topic)
    record = a.own.last
    assert record is not None and record.labels is not None
    assert decode_record(encode_record(record), 1 << 20) == record
    assert decode_record(encode_record(record), 1 << 20).labels == record.labels
    binary = MemberRecord(
        member="c", sequence=1, time=0.0, model={}, share=Contribution.zero(), examples=0,
        partitions={}, released={}, window=record.window,
    )  # fmt: skip
    import msgpack

    data = msgpack.unpackb(encode_record(binary), strict_map_key=False)
    assert data["version"] == 1 and "labels" not in data
    assert msgpack.unpackb(encode_record(record), strict_map_key=False)["version"] == 2


def test_a_binary_member_and_a_bank_member_refuse_each_other() -> None:
    topic = Topic()
    bank = _member(topic, "a")
    binary = GroupMember(
        PDM(eps=0.1, delta=1.0, buffer_size=300), topic.reader(), member_id="b",
        model={"algorithm": "pdm", "params": {"delta": 1.0}},
        policy=SyncPolicy("dynamic", every=50, threshold=0.05, idle_after=0.0),
        max_features=1 << 20, clock=Ticks(),
    )  # fmt: skip
    bank.join(), binary.join()
    bank.take({0}), binary.take({1})
    _learn(bank, 0, _rows(1, 100, [0.0, 1.0]), 100)
    binary.learner.learn(np.eye(8)[:2], np.array([1, -1]))
    binary.learned({1: 2}, {1: 2})
    bank.publish(), binary.publish()
    bank.turn(), binary.turn()
    assert bank.records_refused >= 1 and binary.records_refused >= 1
    assert bank.table.in_model() == ["a"] and binary.table.in_model() == ["b"]
    with pytest.raises(StateError, match=r"'one_vs_rest': True.*does not join"):
        binary.intake.check_models({"a", "b"})  # the reason a member that would join logs


def test_bank_members_agree_on_the_largest_delta() -> None:
    topic = Topic()
    a = _member(topic, "a", _bank("auto"), {**BANK, "params": {"one_vs_rest": True}})
    b = _member(topic, "b", _bank("auto"), {**BANK, "params": {"one_vs_rest": True}})
    a.join(), b.join()
    a.take({0}), b.take({1})
    small = _rows(1, 400, [0.0, 1.0])
    large = _rows(2, 400, [1.0, 2.0])
    large.values[:] *= 3.0  # b's examples are larger: its Delta too
    _learn(a, 0, small, 400)
    _learn(b, 1, large, 400)
    a.learner.flush(), b.learner.flush()
    a.publish(), b.publish()
    a.turn(), b.turn(), a.turn(idle=True), b.turn(idle=True), a.turn(), b.turn()
    assert a.learner.state.delta_value == b.learner.state.delta_value > 0
    assert a.learner.delta_floor == b.learner.delta_floor == b.learner.state.delta_value
    assert a.answers(_questions()) == b.answers(_questions())


def test_max_labels_counts_the_labels_other_members_brought() -> None:
    topic = Topic()
    _, b = _synchronised(topic)  # the common bank: 0, 1, 7 of a; 2 of b
    assert b.limits(ModelLimits(max_labels=5)).max_labels == 5 - 2  # 0 and 7 are a's only
    assert b.limits(ModelLimits(max_labels=3)).max_labels == 2  # never below its own
    assert b.limits(ModelLimits()).max_labels is None


def _checkpoint(member: GroupMember) -> dict[str, Any]:
    group = member.checkpoint_state()
    assert group is not None
    payload = {"learner": state_to_write(member.learner), "group": group}
    return decode(encode(payload, created=0.0)).payload


def test_a_bank_member_restarted_from_its_checkpoint_goes_on_with_its_window() -> None:
    topic = Topic()
    a, b = _synchronised(topic)
    payload = _checkpoint(a)
    window = a.learner.buffer_rows()
    b.publish()
    _learn(a, 0, _rows(50, 40, [0.0]), 340)  # learned, never published: lost with a
    back = _member(topic, "a", ModelBank.from_state(payload["learner"]))
    back.resume_from(payload["group"], _bank)
    back.join()
    assert back.take({0}) == {0: 300}  # resumes where its last record stands
    held = back.learner.buffer_rows()  # the checkpoint's window, not a new one
    assert held.n_examples == window.n_examples > 0
    np.testing.assert_array_equal(held.values, window.values)
    np.testing.assert_array_equal(held.labels, window.labels)
    b.publish(), back.turn(), b.turn()
    assert back.answers(_questions()) == b.answers(_questions())
    own, published = back.shares.own(), back.common.published
    assert own.labels == published.labels
    assert all(
        mine == its for (_, mine, _), (_, its, _) in zip(own.shares, published.shares, strict=True)
    )


def test_bank_members_replaying_while_idle_go_quiet_and_answer_alike() -> None:
    """After the stream, members replay their windows label by label as the daemon does
    when idle: they settle (no more records) and answer alike."""
    topic = Topic()
    a, b = _synchronised(topic)
    quiet_rounds = 0
    for _ in range(300):
        written = len(topic.log)
        for member in (a, b):
            if not member.learner.converged:
                member.replay(1, lambda: False)
            member.turn(idle=True)
        settled = len(topic.log) == written and a.learner.converged and b.learner.converged
        quiet_rounds = quiet_rounds + 1 if settled else 0
        if quiet_rounds == 3:
            break
    assert quiet_rounds == 3, f"{len(topic.log)} records and still publishing"
    assert a.answers(_questions()) == b.answers(_questions())


def test_a_bank_record_pays_for_its_labels_features_and_a_forged_one_is_refused() -> None:
    """A bank's shares spanning features far up are padded on the topic so that labels x
    features stay within what the record's entries pay for; a record of many labels of
    one far feature each (a reader would grow gigabytes of weights) is refused."""
    import msgpack

    far = Contribution(np.array([900_000]), np.array([1.0]), 0.0, 1.0, 1.0)
    labels = LabelShares(tuple((float(v), far, 1.0) for v in range(40)))
    topic = Topic()
    a, _ = _synchronised(topic)
    record = dataclasses.replace(a.own.last, labels=labels)  # type: ignore[type-var]
    back = decode_record(encode_record(record), 1 << 20)
    assert back.labels is not None and len(back.labels.shares) == 40
    assert all(float(share.values.sum()) == 1.0 for _, share, _ in back.labels.shares)
    data = msgpack.unpackb(encode_record(record), strict_map_key=False)
    for entry in data["labels"]:  # as a forger writes it: one entry per label
        entry[1] = far.to_plain()
    with pytest.raises(StateError, match="beyond what"):
        decode_record(msgpack.packb(data, use_bin_type=True), 1 << 20)


def test_a_bank_member_that_lost_its_partitions_goes_back_to_its_last_record() -> None:
    """As one model's member does (test_member), label by label: the labels its bank
    took since its last record leave with what it learned."""
    from test_member import Listed

    topic, group = Topic(), Listed(set())
    a = GroupMember(
        _bank(), topic.reader(), member_id="a", model=BANK,
        policy=SyncPolicy("periodic", every=10_000, idle_after=0.0), max_features=1 << 20,
        consumer_group=group, clock=Ticks(),
    )  # fmt: skip
    a.join()
    group.members_now = {"a"}
    a.take({0})
    _learn(a, 0, _rows(1, 120, [0.0, 1.0]), offset=12)
    a.publish()
    answers = a.answers(_questions())
    weights = {v: s.learner.state.weights.copy() for v, s in a.shares.per_label()}
    _learn(a, 0, _rows(2, 80, [0.0, 1.0, 2.0]), offset=20)
    group.members_now = set()
    a.release({0}, {0: 20})
    assert a.examples == 120 and {v for v, _ in a.shares.per_label()} == set(weights)
    for value, shares in a.shares.per_label():
        np.testing.assert_array_equal(shares.learner.state.weights, weights[value])
    assert a.answers(_questions()) == answers
