"""A learning group's member in the serve loop, over an in-memory source and sync topic:
its sync decisions come every ``--sync-every`` examples inside a poll too, and each record
it publishes holds the share of exactly the examples its positions say (the Kafka tests
run real processes on a real broker)."""

from __future__ import annotations

import numpy as np
import pytest
from memory_source import ListSink, MemorySource
from test_daemon import decode, messages

from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon, DaemonSettings
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import MemberRecord, decode_record
from streamlearn.learn import Model, ModelLimits
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
    source: MemorySource, topic: Topic, every: int, sink: ListSink | None = None
) -> Daemon:
    """A daemon that is the one member of a group syncing every ``every`` examples
    (periodic averaging without a time budget: every check publishes), its partitions
    assigned."""

    def member(model: Model) -> GroupMember:
        return GroupMember(
            model, topic, member_id="m", model={"algorithm": "pdm", "params": {}},
            policy=SyncPolicy("periodic", every=every, share=1.0), max_features=1 << 20,
        )  # fmt: skip

    daemon = Daemon(SPEC, source, decode=decode, settings=SETTINGS, sink=sink, group=member)
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


def test_questions_inside_a_poll_are_answered_as_a_lone_daemon_answers_them() -> None:
    lines = b"".join(messages(60, 5, seed=9)).splitlines()
    stream: list[bytes] = []
    for i, line in enumerate(lines):
        stream.append(line)
        if i % 23 == 4:
            stream.append(b"1:0.5 2:-1.0 4:0.25")
    values = [b"\n".join(stream[i : i + 7]) + b"\n" for i in range(0, len(stream), 7)]
    answers = []
    plain_sink, member_sink = ListSink(), ListSink()
    plain = Daemon(SPEC, MemorySource({0: values}, per_poll=1000), decode=decode,
                   settings=SETTINGS, sink=plain_sink)  # fmt: skip
    plain.run()
    topic = Topic()
    member = member_daemon(MemorySource({0: values}, per_poll=1000), topic, 40, member_sink)
    member.run()
    assert len(topic.records()) > 5  # cuts inside the one poll
    for sink in (plain_sink, member_sink):
        answers.append([value.split() for _, value in sink.sent])
    assert plain_sink.origins == member_sink.origins and len(answers[0]) == 13
    for (plain_score, plain_label), (score, label) in zip(*answers, strict=True):
        assert label == plain_label
        assert float(score) == pytest.approx(float(plain_score), rel=1e-9)
