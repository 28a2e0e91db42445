"""The store of examples predicted with an id, waiting for their label."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.checkpoint.codec import decode, encode
from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.pending import (
    ALREADY_LABELLED,
    EVICTED,
    EXPIRED,
    ID_PENDING,
    UNKNOWN_ID,
    PendingExample,
    PendingExamples,
)


def example(at: float, feature: int = 0, predicted: float = 1.0) -> PendingExample:
    return PendingExample(
        np.array([feature], dtype=np.int32), np.array([float(feature + 1)]), predicted, at
    )


def test_a_label_joins_its_example_once() -> None:
    pending = PendingExamples(max_examples=10, ttl=60.0)
    pending.add("x", example(0.0, feature=4, predicted=-1.0))
    found = pending.find("x", now=1.0)
    assert isinstance(found, PendingExample)
    assert found.indices.tolist() == [4] and found.predicted == -1.0
    # found but not learned (the model refused the label): it waits on
    assert isinstance(pending.find("x", now=1.0), PendingExample)
    pending.joined("x")
    assert pending.find("x", now=2.0) == ALREADY_LABELLED
    assert pending.counts() == {
        "examples": 0, "joined": 1, "expired": 0, "evicted": 0,
        "refused": {UNKNOWN_ID: 0, EXPIRED: 0, EVICTED: 0, ALREADY_LABELLED: 1},
    }  # fmt: skip
    assert pending.taken("x") == ALREADY_LABELLED


def test_bounds_evict_the_oldest_and_expire_the_old() -> None:
    pending = PendingExamples(max_examples=3, ttl=10.0)
    for i in range(5):
        assert pending.add(str(i), example(float(i))) == (1 if i >= 3 else 0)
    assert len(pending) == 3 and pending.evicted_total == 2
    assert pending.find("0", now=5.0) == EVICTED
    assert pending.find("2", now=12.5) == EXPIRED  # at 2.0, ttl 10: gone at 12
    assert isinstance(pending.find("3", now=12.5), PendingExample)
    assert pending.expired_total == 1
    assert pending.find("never", now=12.5) == UNKNOWN_ID
    assert pending.taken("3") == ID_PENDING and pending.taken("0") is None


def test_the_memory_of_ids_gone_is_bounded() -> None:
    pending = PendingExamples(max_examples=2, ttl=1e9)
    for i in range(6):
        pending.add(str(i), example(float(i)))
        pending.find(str(i), now=float(i))
        pending.joined(str(i))
    assert pending.find("5", now=9.0) == ALREADY_LABELLED
    assert pending.find("0", now=9.0) == UNKNOWN_ID  # beyond the memory


def test_an_id_may_come_again_once_its_example_expired() -> None:
    pending = PendingExamples(max_examples=2, ttl=1.0)
    pending.add("x", example(0.0))
    assert pending.expire(5.0) == 1
    assert pending.taken("x") is None
    pending.add("x", example(5.0, feature=2))
    found = pending.find("x", now=5.5)
    assert isinstance(found, PendingExample) and found.indices.tolist() == [2]


def test_the_state_goes_through_a_checkpoint_and_back() -> None:
    pending = PendingExamples(max_examples=3, ttl=100.0)
    for i in range(4):
        pending.add(f"id{i}", example(float(i), feature=i, predicted=float(i % 2)))
    pending.find("id1", now=5.0)
    pending.joined("id1")
    pending.find("nope", now=5.0)
    state = decode(encode({"pending": pending.state()}, created=0.0)).payload["pending"]
    again = PendingExamples(max_examples=3, ttl=100.0)
    again.restore(state)
    assert again.counts() == pending.counts()
    assert again.find("id1", now=6.0) == ALREADY_LABELLED
    assert again.find("id0", now=6.0) == EVICTED
    for i in (2, 3):
        found = again.find(f"id{i}", now=6.0)
        assert isinstance(found, PendingExample)
        assert found.indices.tolist() == [i] and found.values.tolist() == [i + 1.0]
        assert found.predicted == float(i % 2) and found.at == float(i)


def test_a_smaller_store_evicts_what_a_checkpoint_held_beyond_it() -> None:
    pending = PendingExamples(max_examples=4, ttl=100.0)
    for i in range(4):
        pending.add(str(i), example(float(i)))
    smaller = PendingExamples(max_examples=2, ttl=100.0)
    smaller.restore(pending.state())
    assert len(smaller) == 2 and smaller.find("0", now=5.0) == EVICTED


def test_bad_bounds_and_states_are_refused() -> None:
    with pytest.raises(InvalidParameterError, match="--pending-max"):
        PendingExamples(max_examples=0, ttl=1.0)
    with pytest.raises(InvalidParameterError, match="--pending-ttl"):
        PendingExamples(max_examples=1, ttl=float("nan"))
    with pytest.raises(StateError):
        PendingExamples(1, 1.0).restore({"format": "other"})
    state = PendingExamples(1, 1.0).state()
    del state["counts"]
    with pytest.raises(StateError, match="malformed"):
        PendingExamples(1, 1.0).restore(state)
