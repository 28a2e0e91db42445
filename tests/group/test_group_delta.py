"""``--delta auto`` and ``first`` in a learning group: each member settles Delta from its
own first examples, and the group agrees on the largest (R/10 over the first examples of
them all), the states rescaled to it exactly; members that hold the same records answer
alike, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_member import Ticks, Topic, _rows

from streamlearn import PDM
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import decode_record
from streamlearn.learn.inputs import as_batch


def _member(topic: Topic, name: str, delta: str) -> GroupMember:
    learner = PDM(eps=0.1, delta=delta, buffer_size=400)
    return GroupMember(
        learner, topic.reader(), member_id=name,
        model={"algorithm": "pdm", "params": {"delta": delta}},
        policy=SyncPolicy("dynamic", every=50, threshold=0.05, idle_after=0.0),
        max_features=1 << 20, clock=Ticks(),
    )  # fmt: skip


def _learn(member: GroupMember, partition: int, rows: object, n: int, offset: int) -> None:
    member.learner.learn_rows(rows)  # type: ignore[arg-type]
    member.learned({partition: n}, {partition: offset})


def _scaled(seed: int, n: int, scale: float) -> object:
    """:func:`_rows` with every value times ``scale`` (so R differs between members)."""
    rows = _rows(seed, n)
    return as_batch((rows.indptr, rows.indices, rows.values * scale), rows.labels)  # type: ignore[attr-defined]


def _r_over_10(*batches: object) -> float:
    sqnorms = [
        float(np.max(np.add.reduceat(b.values**2, b.indptr[:-1])))  # type: ignore[attr-defined]
        for b in batches
    ]
    return math.sqrt(max(sqnorms) + 1.0) / 10.0


@pytest.mark.parametrize("delta", ["auto", "first"])
def test_members_agree_on_the_largest_delta_and_answer_alike(delta: str) -> None:
    topic = Topic()
    a, b = _member(topic, "a", delta), _member(topic, "b", delta)
    a.join(), b.join()
    a.take({0}), b.take({1})
    # b's examples are 4x longer; 400 fill each 'auto' window (the buffer's size)
    small, large = _scaled(1, 400, 1.0), _scaled(2, 400, 4.0)
    _learn(a, 0, small, 400, 400)
    _learn(b, 1, large, 400, 400)
    own_a, own_b = a.learner.state.delta, b.learner.state.delta
    assert own_a is not None and own_b is not None and own_a < own_b
    for _ in range(3):
        a.publish(), b.publish()
        a.turn(), b.turn()
    expected = _r_over_10(small, large) if delta == "auto" else own_b
    assert a.learner.state.delta == b.learner.state.delta == pytest.approx(expected)
    records = [decode_record(value, 1 << 20) for _, value in topic.log if value]
    assert max(record.delta for record in records) == b.learner.state.delta
    # the states were rescaled to it exactly: ||a||^2 as computed afresh under it
    for member in (a, b):
        state = member.learner.state
        kept = float(state.scalars[1])
        state.recompute_sqnorm()
        assert float(state.scalars[1]) == kept
    # the answers come from the records: alike, bit for bit
    question = _rows(9, 50)
    rows = (question.indptr, question.indices, question.values)  # type: ignore[attr-defined]
    assert a.predictor().answer(rows) == b.predictor().answer(rows)
    # a's later examples, however short, never lower the group's Delta
    _learn(a, 0, _scaled(3, 300, 0.1), 300, 700)
    a.learner.flush()
    assert a.learner.state.delta == b.learner.state.delta


def test_a_member_that_joins_late_learns_under_the_groups_delta_from_its_first_example() -> None:
    topic = Topic()
    a = _member(topic, "a", "first")
    a.join(), a.take({0})
    _learn(a, 0, _scaled(2, 200, 4.0), 200, 200)
    a.publish()
    b = _member(topic, "b", "first")
    b.join()  # reads a's record: the floor is a's Delta before b learns anything
    assert b.learner.state.delta == a.learner.state.delta
    b.take({1})
    _learn(b, 1, _scaled(1, 100, 1.0), 100, 100)  # shorter examples: Delta stays
    assert b.learner.state.delta == a.learner.state.delta


def test_a_numeric_delta_is_never_moved() -> None:
    learner = PDM(delta=0.5)
    assert not learner.agree_delta(3.0) and learner.state.delta == 0.5


def test_a_record_with_a_delta_no_member_could_settle_is_refused() -> None:
    """Delta is at most 1e25 (given or settled from an example): a record beyond would
    raise every member's Delta for good and overflow its norms."""
    import dataclasses

    from streamlearn.group.records import encode_record

    topic = Topic()
    a, x = _member(topic, "a", "auto"), _member(topic, "x", "auto")
    a.join(), x.join()
    a.take({0}), x.take({1})
    _learn(a, 0, _scaled(1, 100, 1.0), 100, 100)
    _learn(x, 1, _scaled(2, 10, 1.0), 10, 10)
    a.publish(), x.publish()
    assert x.own.last is not None
    forged = dataclasses.replace(x.own.last, sequence=x.own.last.sequence + 1,
                                 delta=1e200)  # fmt: skip
    topic.log.append(("x", encode_record(forged)))
    a.turn()
    assert a.records_refused == 1 and a.learner.state.delta is not None
    assert a.learner.state.delta < 10 and math.isfinite(a.learner.state.sqnorm)
