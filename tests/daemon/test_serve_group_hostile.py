"""A learning group no record can break, on a real broker (Tansu) with real ``serve``
processes: a producer that is no member writes hostile records to the sync topic while
the group learns; a process started with a live member's id, or with other parameters,
refuses to start."""

from __future__ import annotations

import json
import os
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from group_forgery import forged
from group_process import Member, group_examples, positions, records
from services import Tansu
from test_serve_kafka import svmlight_messages

from streamlearn.group.records import encode_record
from streamlearn.group.signing import SECRET_VARIABLE

pytestmark = pytest.mark.kafka

PARTITIONS = 6
#: lines of each message
LINES = 20
HOSTILE = 1000
QUESTIONS = b"1:0.5 3:-1.2 7:0.3\n2:1.5 9:0.1\n4:-0.7 12:2.0 19:0.4\n"


def _produce(broker: Tansu, topic: str, messages: int, seed: int) -> int:
    """``messages`` svmlight messages over the partitions; their labelled lines."""
    for i, value in enumerate(svmlight_messages(messages, LINES, seed=seed)):
        broker.produce(topic, [value], partition=i % PARTITIONS)
    return messages * LINES


def _group_view(member: Member) -> dict[str, Any]:
    """``GET /model``'s ``group``: the member's view of its group and its counts."""
    url = f"http://127.0.0.1:{member.http_port}/model"
    with urllib.request.urlopen(url, timeout=10) as response:
        view: dict[str, Any] = json.loads(response.read())["group"]
    return view


BEYOND = {p: [10**12, 10**12] for p in range(PARTITIONS)}


def _raw(i: int, key: str, real: bytes, sequence: int) -> dict[str, tuple[str, bytes | None]]:
    """Hostile records that are no member's record, or a member's under the wrong name
    or sequence: ``real`` is member ``key``'s latest record, numbered ``sequence``."""
    return {
        "random bytes": (f"junk-{i}", np.random.default_rng(i).bytes(1 + i % 300)),
        "a map keyed by an array": (key, b"\x81\x91\x01\x01"),
        "truncated": (key, real[: 1 + i % (len(real) - 1)]),
        "an array of 2^32-1 declared": (key, b"\xdd\xff\xff\xff\xff"),
        "nested 50000 deep": (key, b"\x91" * 50_000),
        "a bin of 200 kB": (key, b"\xc6\x00\x03\x0d\x40" + b"\x00" * 200_000),
        "a deletion": (key, None),
        "under another key": (f"spoof-{i}", real),
        "naming another member": (key, forged(real, member=f"x-{i}")),
        "a phantom": (f"ghost-{i}", forged(real, member=f"ghost-{i}")),
        "a phantom beyond the ends": (
            f"ghost-{i}",
            forged(real, member=f"ghost-{i}", partitions=BEYOND),
        ),
        "sequence 2^62": (key, forged(real, sequence=2**62)),
        "sequence jumps": (key, forged(real, sequence=sequence + 1000)),
        "a copy": (key, real),
    }


def _next() -> dict[str, dict[str, Any]]:
    """Changes that make a member's next record hostile (each one numbered as its next)."""
    return {
        "exponent 10^6": {"share_exponent": 10**6},
        "weights 1e300": {
            "share_indices": np.arange(8).tobytes(),
            "share_values": np.full(8, 1e300).tobytes(),
        },
        "a weight NaN": {
            "share_indices": np.array([3]).tobytes(),
            "share_values": np.array([np.nan]).tobytes(),
        },
        "beta infinite": {"share_beta": float("inf")},
        "margin NaN": {"window": [1, 1, float("nan"), 1.0, 1.0]},
        "feature 2^26-1": {
            "share_indices": np.array([2**26 - 1]).tobytes(),
            "share_values": np.ones(1).tobytes(),
        },
        "positions beyond the ends": {"partitions": BEYOND},
        "a partition the topic lacks": {"partitions": {PARTITIONS + 3: [0, 0]}},
        "another model": {"model": {"algorithm": "pdm", "params": {}}},
    }


def _forgery(i: int, key: str, real: bytes, sequence: int) -> tuple[str, bytes | None]:
    """The ``i``-th hostile record, of each kind in turn."""
    raw = _raw(i, key, real, sequence)
    following = _next()
    kinds = len(raw) + len(following)
    if i % kinds < len(raw):
        return list(raw.values())[i % kinds]
    changes = list(following.values())[i % kinds - len(raw)]
    return key, forged(real, sequence=sequence + 1, **changes)


class Forger:
    """A producer that is no member: it reads the members' records and writes hostile
    ones, each kind of :func:`_forgery` in turn."""

    def __init__(self, broker: Tansu, topic: str, sync: str, members: set[str]) -> None:
        self.broker, self.topic, self.sync, self.members = broker, topic, sync, members
        self.sent = 0

    def send(self, count: int) -> None:
        """Write ``count`` hostile records (and wait for the broker to have them)."""
        ends = self.broker.end_offsets(self.topic)
        latest = records(self.broker, self.sync, self.members, ends)
        bases = sorted(latest.items())
        futures = []
        for _ in range(count):
            key, record = bases[self.sent % len(bases)]
            name, value = _forgery(self.sent, key, encode_record(record), record.sequence)
            futures.append(self.broker.producer.send(self.sync, key=name.encode(), value=value))
            self.sent += 1
        self.broker.producer.flush(timeout=30)
        for future in futures:
            future.get(timeout=30)


def test_a_group_fed_a_thousand_hostile_records_learns_every_example_once_and_answers_alike(
    broker: Tansu, tmp_path: Path
) -> None:
    topic, sync = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    total = _produce(broker, topic, 60, seed=11)
    group = f"g-{uuid.uuid4().hex[:8]}"
    members = [Member(broker, topic, sync, group, tmp_path, "--sync-every", "200")
               for _ in range(3)]  # fmt: skip
    names = {member.name for member in members}
    members[0].wait(lambda: set(records(broker, sync, names)) == names, "a record of each")
    forger = Forger(broker, topic, sync, names)
    for chunk in range(10):  # the group learns while the forger writes
        total += _produce(broker, topic, 30, seed=20 + chunk)
        forger.send(HOSTILE // 10)
    assert forger.sent == HOSTILE
    ends = broker.end_offsets(topic)

    def settled() -> bool:
        learned = positions(records(broker, sync, names, ends)) == ends
        return learned and all(_group_view(m)["records_refused"] == HOSTILE for m in members)

    members[0].wait(settled, "every example learned and every hostile record refused")
    members[0].wait(
        lambda: all(m.predict(QUESTIONS) == members[0].predict(QUESTIONS) for m in members),
        "the same answers from every member",
    )
    scores = [answer["score"] for answer in members[0].predict(QUESTIONS)]
    assert np.all(np.isfinite(scores)) and any(score != 0 for score in scores)
    for member in members:
        view = _group_view(member)
        assert view["records_refused"] == HOSTILE, view
        assert set(view["members"]) == names, view
    for member in members:
        assert member.stop() == 0, member.log_tail()
        log = member.log_path.read_text()
        assert "Traceback" not in log, member.log_tail()
    latest = records(broker, sync, names, ends)
    assert sum(record.examples for record in latest.values()) == total
    assert group_examples(latest) == total


def test_a_second_process_with_a_live_members_id_refuses_to_start(
    broker: Tansu, tmp_path: Path
) -> None:
    topic, sync = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    _produce(broker, topic, 12, seed=3)
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = Member(broker, topic, sync, group, tmp_path)
    first.wait(lambda: first.name in records(broker, sync), "the first member's record")
    (tmp_path / "twin").mkdir()
    twin = Member(broker, topic, sync, group, tmp_path / "twin", name=first.name)
    assert twin.process.wait(timeout=60) == 1
    log = twin.log_path.read_text()
    assert f"member id '{first.name}' is taken" in log and "took partitions" not in log
    assert first.stop() == 0, first.log_tail()


def test_a_member_with_other_parameters_refuses_to_join(broker: Tansu, tmp_path: Path) -> None:
    topic, sync = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    _produce(broker, topic, 12, seed=4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = Member(broker, topic, sync, group, tmp_path)
    first.wait(lambda: first.name in records(broker, sync), "the first member's record")
    other = Member(broker, topic, sync, group, tmp_path, "--eps", "0.2")
    assert other.process.wait(timeout=60) == 1
    log = other.log_path.read_text()
    assert "does not join" in log and "took partitions" not in log
    assert first.stop() == 0, first.log_tail()


def test_with_a_shared_secret_a_producer_without_it_cannot_speak_for_the_group(
    broker: Tansu, tmp_path: Path
) -> None:
    topic, sync = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    total = _produce(broker, topic, 30, seed=5)
    group, secret = f"g-{uuid.uuid4().hex[:8]}", b"s3cret"
    env = {**os.environ, SECRET_VARIABLE: secret.decode()}
    members = [Member(broker, topic, sync, group, tmp_path, env=env) for _ in range(2)]
    names = {member.name for member in members}
    members[0].wait(lambda: set(records(broker, sync, secret=secret)) == names, "their records")
    # each member's next record, valid in every way but the signature
    for key, record in records(broker, sync, secret=secret).items():
        value = forged(encode_record(record), sequence=record.sequence + 1, examples=10**6)
        broker.produce(sync, [value], key=key.encode())
    total += _produce(broker, topic, 30, seed=6)
    ends = broker.end_offsets(topic)

    def settled() -> bool:
        learned = positions(records(broker, sync, names, ends, secret)) == ends
        return learned and all(_group_view(m)["records_refused"] == 2 for m in members)

    members[0].wait(settled, "every example learned and both forgeries refused")
    for member in members:
        assert member.stop() == 0, member.log_tail()
    latest = records(broker, sync, names, ends, secret)
    assert sum(record.examples for record in latest.values()) == total
