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
    np.testing.assert_array_equal(back.shares.own().values, back._published.values)


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
    ours, theirs = back._last_record, a._last_record
    assert ours is not None and theirs is not None and ours.sequence == theirs.sequence
    assert ours.share == theirs.share and ours.partitions == theirs.partitions
