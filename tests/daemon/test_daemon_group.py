"""A learning group's member in the serve loop, over an in-memory source and sync topic:
its sync decisions come every ``--sync-every`` examples inside a poll too, and each record
it publishes holds the share of exactly the examples its positions say (the Kafka tests
run real processes on a real broker)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from memory_source import ListSink, MemorySource
from test_daemon import decode, messages

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon, DaemonSettings, Observer
from streamlearn.errors import InputError
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import MemberRecord, decode_record
from streamlearn.learn import Model, ModelLimits
from streamlearn.modes import GroupMode
from streamlearn.parse.svmlight import SvmlightParser
from streamlearn.replay import ReplaySchedule

SPEC = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1"})
#: deterministic: no replay at all, no decoding ahead
SETTINGS = DaemonSettings(
    replay=ReplaySchedule(every=0), checkpoint_interval=1e9, idle_replay=False,
    decode_ahead=False,
)  # fmt: skip


class Topic:
    """A sync topic in memory, for one member: what it writes, read back by nobody."""

    def __init__(self) -> None:
        self.log: list[tuple[str, bytes | None]] = []
        self.bytes_written = 0
        self.bytes_read = 0

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]:
        return []

    def write(self, key: str, value: bytes | None) -> None:
        self.log.append((key, value))
        self.bytes_written += len(value or b"")

    def records(self) -> list[MemberRecord]:
        return [decode_record(value, 1 << 20) for _, value in self.log if value is not None]


def member_daemon(
    source: MemorySource,
    topic: Topic,
    every: int,
    sink: ListSink | None = None,
    observer: Observer | None = None,
) -> Daemon:
    """A daemon that is the one member of a group syncing every ``every`` examples
    (periodic averaging without a time budget: every check publishes), its partitions
    assigned."""

    def member(model: Model) -> GroupMember:
        return GroupMember(
            model, topic, member_id="m", model={"algorithm": "pdm", "params": {}},
            policy=SyncPolicy("periodic", every=every, share=1.0), max_features=1 << 20,
        )  # fmt: skip

    daemon = Daemon(SPEC, source, decode=decode, settings=SETTINGS, sink=sink, group=member,
                    observer=observer)  # fmt: skip
    daemon.restore()
    daemon.partitions_assigned(set(source.partitions))
    return daemon


def learned_before(parts: dict[int, list[bytes]], record: MemberRecord, per_poll: int) -> bytes:
    """The lines of the messages a record's positions say were learned, in the order the
    source gave them (MemorySource: ``per_poll`` messages of each partition in turn)."""
    positions = {p: position.offset for p, position in record.partitions.items()}
    lines = []
    for start in range(0, max(len(v) for v in parts.values()), per_poll):
        for partition, values in parts.items():
            for offset in range(start, min(start + per_poll, len(values))):
                if offset < positions[partition]:
                    lines.append(values[offset])
    return b"".join(lines)


def test_a_member_decides_inside_a_poll_and_each_record_holds_what_its_positions_say() -> None:
    parts = {p: messages(40, 10, seed=20 + p) for p in range(2)}
    parts[1][7] = parts[1][7].replace(b"\n", b"\n+1 3:nan\n", 1)  # a line the parser rejects
    per_poll = 30  # 600 examples a poll, in messages of 10 lines
    topic = Topic()
    daemon = member_daemon(MemorySource(parts, per_poll=per_poll), topic, every=100)
    daemon.run()
    assert daemon.stream_examples == 800
    records = topic.records()
    counts = [r.examples for r in records]
    # decisions every 100 examples inside the 600-example poll, not only after it
    assert [c for c in counts if 0 < c < 600] == [100, 200, 300, 400, 500]
    assert counts[-1] == 800
    for record in records:
        lines = learned_before(parts, record, per_poll)
        rows = SvmlightParser().feed(lines)
        for partition, position in record.partitions.items():
            labelled = b"".join(parts[partition][: position.offset]).count(b"\n")
            rejected = 1 if partition == 1 and position.offset > 7 else 0
            assert position.examples == labelled - rejected
        assert rows.n_rows == record.examples
        alone = SPEC.build()
        batch, _ = alone.admit(rows, ModelLimits())
        alone.learn_rows(batch)
        weights = np.zeros(alone.state.weights.shape[0])
        record.share.add_to(weights)
        np.testing.assert_allclose(weights, alone.state.weights, rtol=1e-9, atol=1e-12)
        assert record.share.updates == alone.state.updates


def test_questions_are_answered_by_the_common_model_the_records_before_them_make() -> None:
    """A member answers with the common model (the records as published), not with its
    learner: a question inside a poll gets the model of the last record published
    before it, as every member holding that record would answer."""
    lines = b"".join(messages(60, 5, seed=9)).splitlines()
    stream: list[bytes] = []
    for i, line in enumerate(lines):
        stream.append(line)
        if i % 23 == 4:
            stream.append(b"1:0.5 2:-1.0 4:0.25")
    values = [line + b"\n" for line in stream]  # a line a message: cuts at any example
    sink, topic = ListSink(), Topic()
    member = member_daemon(MemorySource({0: values}, per_poll=1000), topic, 40, sink)
    member.run()
    records = topic.records()
    assert len(records) > 5  # cuts inside the one poll
    assert len(sink.sent) == 13
    rho = SPEC.build().rho
    question = np.zeros(8)
    question[[0, 1, 3]] = [0.5, -1.0, 0.25]  # 1-based in the text
    answered_differently = 0
    for (_, value), (_, offset) in zip(sink.sent, sink.origins, strict=True):
        labelled_before = sum(1 for line in stream[:offset] if not line.startswith(b"1:"))
        record = [r for r in records if r.examples <= labelled_before][-1]
        weights = np.zeros(8)
        record.share.add_to(weights)
        expected = float(weights @ question) + rho * record.share.beta
        score, label = value.split()
        assert float(score) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert int(label) == (1 if expected > 0 else -1)
        answered_differently += record.examples < labelled_before
    assert answered_differently > 5  # the learner had moved on: its answers would differ


class Progress:
    """Counts what the daemon reports of its progressive accuracy, and nothing else."""

    def __init__(self) -> None:
        self.correct = self.mistakes = 0

    def count_progressive(self, correct: int, mistakes: int) -> None:
        self.correct += correct
        self.mistakes += mistakes

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def test_a_members_progressive_accuracy_is_that_of_the_common_model() -> None:
    """Each example is judged by the model the member answers with when it reaches it
    (the last record's), not by its learner, as that model answers it (an empty model's
    score 0 answers -1)."""
    values = messages(60, 5, seed=4)
    rows = SvmlightParser().feed(b"".join(values))
    X = np.zeros((rows.n_rows, 64))
    for i in range(rows.n_rows):
        lo, hi = rows.indptr[i], rows.indptr[i + 1]
        X[i, rows.indices[lo:hi]] = rows.values[lo:hi]
    labels = np.asarray(rows.labels, dtype=float)
    one_a_message = [line + b"\n" for line in b"".join(values).splitlines()]
    progress, topic = Progress(), Topic()
    member_daemon(MemorySource({0: one_a_message}, per_poll=1000), topic, 40,
                  observer=progress).run()  # fmt: skip
    records = topic.records()
    mistakes = 0
    for i in range(rows.n_rows):
        record = [r for r in records if r.examples <= i][-1]
        weights = np.zeros(64)
        record.share.add_to(weights)
        score = float(X[i] @ weights) + SPEC.build().rho * record.share.beta
        mistakes += (1 if score > 0.0 else -1) != labels[i]  # the label it answers
    assert progress.correct + progress.mistakes == rows.n_rows == 300
    assert progress.mistakes == mistakes
    assert mistakes < 150  # it learns


class Refusing(Topic):
    """A sync topic that takes no record (a broker that refuses the writes)."""

    def write(self, key: str, value: bytes | None) -> None:
        raise InputError("the sync topic refused the record")


def test_a_checkpoint_the_last_record_cannot_match_is_skipped_until_the_next_is_due(
    tmp_path: Path,
) -> None:
    """A member's checkpoint must match its last record: when the record cannot be
    written, no checkpoint is, and the next is due an interval later (not at every
    turn, each forcing a publish and a read of the sync topic)."""
    store = CheckpointStore(tmp_path / "member")
    source = MemorySource({0: messages(4, 5, seed=4)})

    def member(model: Model) -> GroupMember:
        return GroupMember(
            model, Refusing(), member_id="m", model={"algorithm": "pdm", "params": {}},
            policy=SyncPolicy("periodic", every=10**6, share=1.0), max_features=1 << 20,
        )  # fmt: skip

    every_example = dataclasses.replace(SETTINGS, checkpoint_every=1, checkpoint_min_interval=0.0)
    daemon = Daemon(SPEC, source, decode=decode, settings=every_example, group=member,
                    store=store)  # fmt: skip
    daemon.restore()
    daemon.partitions_assigned(set(source.partitions))
    daemon.process(source.poll(0.0, 1000))
    assert daemon._checkpoint_due()
    daemon.checkpoint()
    assert store.paths() == []  # nothing written: the record was not
    assert isinstance(daemon.mode, GroupMode) and daemon.mode.member.records_failed >= 1
    assert not daemon._checkpoint_due()
