"""The keyed models' state topic on a real broker (Tansu): created compacted and
partitioned like the input topic, read back by key from any partition, written again
when the broker refuses, and forgotten with the partitions that leave."""

from __future__ import annotations

import uuid

import pytest
from services import Tansu

from streamlearn.errors import InputError
from streamlearn.sources.kafka_state import StateTopic

pytestmark = pytest.mark.kafka


def state_topic(tansu: Tansu, input_topic: str, name: str | None = None) -> StateTopic:
    return StateTopic(tansu.bootstrap, name or f"s-{uuid.uuid4().hex[:8]}",
                      input_topic=input_topic, request_timeout_ms=5000)  # fmt: skip


def test_records_are_found_by_key_in_their_partition(tansu: Tansu, topic_name: str) -> None:
    tansu.create_topic(topic_name, 3)
    store = state_topic(tansu, topic_name)
    latest = {b"k%d" % k: max(i for i in range(30) if i % 7 == k) for k in range(7)}
    try:
        assert set(tansu.end_offsets(store.topic)) == {0, 1, 2}  # partitioned like the input
        store.open({0, 1, 2})
        for i in range(30):  # key k's records go to partition k % 3, as its messages would
            store.put(i % 7 % 3, b"k%d" % (i % 7), b"v%d" % i * 100)
        assert store.find(b"k3") == b"v24" * 100  # on its way: from memory
        assert store.flush(10.0) == 0
        assert store.known() == 7 and store.records_written == 30
        assert all(store.find(key) == b"v%d" % i * 100 for key, i in latest.items())
        assert store.find(b"nobody") is None
    finally:
        store.close()
    # another daemon reads the partitions it takes, and finds their keys' latest records
    again = state_topic(tansu, topic_name, store.topic)
    try:
        again.open({1})
        assert again.known() == 2
        assert [key for key in latest if again.find(key) is not None] == [b"k1", b"k4"]
        assert again.find(b"k4") == b"v25" * 100
        again.open({0, 2})
        assert all(again.find(key) == b"v%d" % i * 100 for key, i in latest.items())
        again.forget({0, 2})
        assert [key for key in latest if again.find(key) is not None] == [b"k1", b"k4"]
        assert again.bytes_read > 0
    finally:
        again.close()


def test_a_tombstone_removes_a_key_for_every_later_reader(tansu: Tansu, topic_name: str) -> None:
    """``delete`` writes a tombstone: the key is gone at once, and for a daemon that
    reads the partition afterwards; ``stale`` names the records written before a time,
    by the broker's time of each."""
    import time

    tansu.create_topic(topic_name, 2)
    store = state_topic(tansu, topic_name)
    try:
        store.open({0, 1})
        store.put(0, b"old", b"x" * 100)
        store.put(1, b"kept", b"y" * 100)
        assert store.flush(10.0) == 0
        assert sorted(store.stale(time.time() + 60)) == [(0, b"old"), (1, b"kept")]
        assert store.stale(time.time() - 3600) == []
        store.delete(0, b"old")
        assert store.find(b"old") is None  # on its way: gone already
        assert store.flush(10.0) == 0
        assert store.find(b"old") is None and store.known() == 1
        assert store.stale(time.time() + 60) == [(1, b"kept")]
    finally:
        store.close()
    again = state_topic(tansu, topic_name, store.topic)
    try:
        again.open({0, 1})
        assert again.find(b"old") is None and again.find(b"kept") == b"y" * 100
        assert again.known() == 1
    finally:
        again.close()


def test_a_state_topic_with_fewer_partitions_is_refused(tansu: Tansu, topic_name: str) -> None:
    tansu.create_topic(topic_name, 3)
    small = f"s-{uuid.uuid4().hex[:8]}"
    tansu.create_topic(small, 2)
    with pytest.raises(InputError, match=r"has 2 partitions, topic .* 3"):
        state_topic(tansu, topic_name, small)
    with pytest.raises(InputError, match="does not exist"):
        state_topic(tansu, f"missing-{uuid.uuid4().hex[:8]}")


def test_records_wait_for_a_paused_broker(tansu: Tansu, topic_name: str) -> None:
    tansu.create_topic(topic_name, 1)
    store = state_topic(tansu, topic_name)
    try:
        store.open({0})
        tansu.pause()
        try:
            store.put(0, b"a", b"1")
            store.put(0, b"a", b"2")
            assert store.flush(1.0) == 1  # not acknowledged: kept
            assert store.find(b"a") == b"2"
        finally:
            tansu.resume()
        assert store.flush(30.0) == 0
        assert store.records_written == 2 and store.find(b"a") == b"2"
    finally:
        store.close()
