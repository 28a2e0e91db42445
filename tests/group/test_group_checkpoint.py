"""A learning group's member with a checkpoint directory: restarted, it goes on from its
window and share exactly as the group holds them when its last record on the sync topic
is the one its checkpoint was written with; otherwise it starts a new window."""

from __future__ import annotations

from typing import Any

import numpy as np
from test_member import Ticks, Topic, _learn

from streamlearn import PDM
from streamlearn.checkpoint.codec import decode, encode
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.learn import LinearLearner
from streamlearn.learn.bank import state_to_write
from streamlearn.learn.inputs import as_batch

MODEL = {"algorithm": "pdm", "params": {"delta": 1.0}}


def _member(topic: Topic, name: str, learner: LinearLearner | None = None) -> GroupMember:
    return GroupMember(
        learner or PDM(eps=0.1, delta=1.0, buffer_size=300), topic.reader(), member_id=name,
        model=MODEL, policy=SyncPolicy("dynamic", every=50, threshold=0.05, idle_after=0.0),
        max_features=1 << 20, clock=Ticks(),
    )  # fmt: skip


def _checkpoint(member: GroupMember) -> dict[str, Any]:
    """What the daemon writes: the learner and the member's state, through the codec."""
    group = member.checkpoint_state()
    assert group is not None
    payload = {"learner": state_to_write(member.learner), "group": group}
    return decode(encode(payload, created=0.0)).payload


def _restarted(topic: Topic, name: str, payload: dict[str, Any]) -> GroupMember:
    learner = PDM.from_state(payload["learner"])
    member = _member(topic, name, learner)
    member.resume_from(payload["group"], lambda: PDM(eps=0.1, delta=1.0, buffer_size=300))
    member.join()
    return member


def _group(topic: Topic) -> tuple[GroupMember, GroupMember]:
    a, b = _member(topic, "a"), _member(topic, "b")
    a.join(), b.join()
    a.take({0}), b.take({1})
    for step in range(3):
        _learn(a, 0, seed=step, n=100, offset=100 * (step + 1))
        _learn(b, 1, seed=10 + step, n=100, offset=100 * (step + 1))
        a.turn(), b.turn()
    return a, b


def test_a_member_restarted_from_its_checkpoint_holds_what_the_group_holds_of_it() -> None:
    topic = Topic()
    a, b = _group(topic)
    payload = _checkpoint(a)  # publishes first: the checkpoint matches a's last record
    b.publish()  # the group moves on meanwhile
    _learn(a, 0, seed=7, n=50, offset=350)  # learned, never published: lost with a
    a.turn(), b.turn()
    back = _restarted(topic, "a", payload)
    assert back.take({0}) == {0: 300}  # resumes where its last record stands
    assert len(back.learner.buffer) == len(payload["learner"]["buffer"]["indptr"]) - 1 > 0
    b.publish(), back.turn(), b.turn()
    # both hold the same records and nothing unpublished: the same bits
    np.testing.assert_array_equal(back.learner.state.weights, b.learner.state.weights)
    assert back.learner.state.external_slack == b.shares.own().slack
    assert b.learner.state.external_slack == back.shares.own().slack
    question = (np.array([0, 3]), np.array([0, 2, 5], dtype=np.int32), np.array([1.0, -0.5, 2.0]))
    assert back.predictor().answer(question) == b.predictor().answer(question)
    np.testing.assert_array_equal(back.shares.own().values, back.common.published.values)


def test_a_checkpoint_older_than_the_members_last_record_starts_a_new_window() -> None:
    topic = Topic()
    a, _ = _group(topic)
    payload = _checkpoint(a)
    _learn(a, 0, seed=8, n=50, offset=350)
    a.publish()  # a record the checkpoint does not hold
    back = _restarted(topic, "a", payload)
    assert len(back.learner.buffer) == 0 and back.examples == 0
    assert back.take({0}) == {0: 350}  # the group's model holds a's last record


def test_a_checkpoint_of_another_member_starts_a_new_window() -> None:
    topic = Topic()
    a, _ = _group(topic)
    payload = _checkpoint(a)
    c = _restarted(topic, "c", payload)
    assert len(c.learner.buffer) == 0


def test_a_member_restarted_from_its_checkpoint_goes_on_as_if_it_had_not_stopped() -> None:
    """The damping of what a member publishes depends on its window's alpha_k when it
    last published: the checkpoint holds them, so that the restarted member's next
    record is, bit for bit, the one it would have written without the restart."""
    topic = Topic()
    a, b = _group(topic)
    payload = _checkpoint(a)
    b.publish()
    copy = Topic()
    copy.log = list(topic.log)  # the sync topic as the restarted member finds it
    back = _restarted(copy, "a", payload)
    back.take({0})  # a record: where it stands
    a.publish()  # the same (nothing changed since its last); it folds b's record
    for member in (a, back):
        _learn(member, 0, seed=21, n=100, offset=400)
        member.learner.replay(max_passes=3)
        member.changed()
        member.publish()
    ours, theirs = back.own.last, a.own.last
    assert ours is not None and theirs is not None and ours.sequence == theirs.sequence
    assert ours.share == theirs.share and ours.partitions == theirs.partitions


def _restart(topic: Topic, name: str, member: GroupMember) -> GroupMember:
    """``member`` checkpointed, then restarted from that checkpoint on a copy of the
    sync topic as it stands."""
    payload = _checkpoint(member)
    copy = Topic()
    copy.log = list(topic.log)
    return _restarted(copy, name, payload)


def test_a_state_scaled_down_comes_back_in_its_units() -> None:
    """A state whose t grew past the scale-down point carries its power of two: restored
    at exponent 0, the next fold scaled the window's alpha_k down a second time."""
    topic = Topic()
    a, _ = _group(topic)
    a.learner.state.scalars[2] = 2.0**41  # t past the point where keep_in_range scales
    assert a.learner.state.scale_down()
    a.changed()
    back = _restart(topic, "a", a)
    assert back.learner.state.scale_exponent == a.learner.state.scale_exponent == 1
    np.testing.assert_array_equal(back.learner.buffer.alpha(), a.learner.buffer.alpha())
    assert back.shares.own() == a.shares.own()


def _noisy(seed: int, n: int) -> object:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    y = np.where(X @ np.arange(1.0, 9.0) + 6 * rng.normal(size=n) > 0, 1.0, -1.0)
    return as_batch((np.arange(0, 8 * n + 1, 8), np.tile(np.arange(8), n), X.ravel()), y)


def test_the_part_damping_left_outside_the_window_comes_back() -> None:
    """Examples evicted since the last damping leave a part of the share outside the
    window, which the next replay takes out: the restarted member takes it out too, and
    its next record is the one the member would have written."""
    topic = Topic()
    a, b = (_member(topic, name, PDM(eps=0.1, delta=1.0, buffer_size=120)) for name in "ab")
    a.join(), b.join()
    a.take({0}), b.take({1})
    for step in range(3):
        for member, partition, seed in ((a, 0, step), (b, 1, 10 + step)):
            member.learner.learn_rows(_noisy(seed, 100))  # type: ignore[arg-type]
            member.learned({partition: 100}, {partition: 100 * (step + 1)})
            member.publish()
    a.learner.learn_rows(_noisy(5, 60))  # type: ignore[arg-type]  # evicts; no replay
    a.learned({0: 60}, {0: 360})
    back = _restart(topic, "a", a)
    assert back.learner.state.outside_window == a.learner.state.outside_window is True
    for member in (a, back):
        member.learner.replay(max_passes=3)
        member.changed()
        member.publish()
    assert back.own.last is not None and a.own.last is not None
    assert back.own.last.share == a.own.last.share


def test_a_restarted_member_says_where_it_stopped_in_partitions_it_does_not_get_back() -> None:
    """Its window holds partition 0's examples up to where its record stands: given
    another partition after the restart, its records still say so, and the next owner
    of partition 0 resumes there rather than learning them again."""
    topic = Topic()
    a, _ = _group(topic)
    payload = _checkpoint(a)  # then a dies
    back = _restarted(topic, "a", payload)
    back.take({2})
    c = _member(topic, "c")
    c.join()
    assert c.take({0}) == {0: 300}


def test_a_checkpoint_is_taken_only_with_the_very_record_it_was_written_with() -> None:
    topic = Topic()
    a, _ = _group(topic)
    payload = _checkpoint(a)
    payload["group"]["crc"] ^= 1  # another record of the same number (another topic)
    back = _restarted(topic, "a", payload)
    assert len(back.learner.buffer) == 0
