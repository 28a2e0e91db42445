"""Two members of a learning group with ``--one-vs-rest`` in the serve loop, over
in-memory sources and one in-memory sync topic: each learns its partition once, and
once synchronised both answer with the same common bank (the Kafka test runs real
processes on a real broker)."""

from __future__ import annotations

import json

import numpy as np
from memory_source import MemorySource
from test_daemon import decode
from test_daemon_group import Progress

from streamlearn.config import LearnerSpec, ModelSpec
from streamlearn.daemon import Daemon, DaemonSettings
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import MemberRecord, decode_record
from streamlearn.learn import Model
from streamlearn.replay import ReplaySchedule

SPEC = ModelSpec(LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1"}), one_vs_rest=True)
SETTINGS = DaemonSettings(
    replay=ReplaySchedule(every=0), checkpoint_interval=1e9, idle_replay=False,
    decode_ahead=False,
)  # fmt: skip
MODEL = {"algorithm": "pdm", "params": {"one_vs_rest": True}}


class SharedTopic:
    """One sync topic in memory that every member reads from the start."""

    def __init__(self) -> None:
        self.log: list[tuple[str, bytes | None]] = []

    def reader(self) -> Reader:
        return Reader(self)

    def last(self) -> dict[str, MemberRecord]:
        return {key: decode_record(value, 1 << 20) for key, value in self.log if value}


class Reader:
    def __init__(self, topic: SharedTopic) -> None:
        self.topic, self.at = topic, 0
        self.bytes_written = self.bytes_read = 0

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]:
        entries = self.topic.log[self.at :]
        self.at = len(self.topic.log)
        return entries

    def write(self, key: str, value: bytes | None) -> None:
        self.topic.log.append((key, value))
        self.bytes_written += len(value or b"")


def multiclass(n: int, labels: list[int], seed: int, per_message: int = 10) -> list[bytes]:
    """``n`` messages of ``per_message`` svmlight lines, each of one label drawn from
    ``labels``, its feature (the label's own) raised."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lines = []
        for label in rng.choice(labels, size=per_message).tolist():
            x = rng.normal(scale=0.3, size=8)
            x[label % 8] += 2.0
            lines.append(f"{label} " + " ".join(f"{i + 1}:{v:.5f}" for i, v in enumerate(x)))
        out.append(("\n".join(lines) + "\n").encode())
    return out


def member_daemon(
    topic: SharedTopic, name: str, partition: int, parts: list[bytes], progress: Progress
) -> Daemon:
    def member(model: Model) -> GroupMember:
        return GroupMember(
            model, topic.reader(), member_id=name, model=MODEL,
            policy=SyncPolicy("periodic", every=100, share=1.0, idle_after=0.0),
            max_features=1 << 20,
        )  # fmt: skip

    source = MemorySource({partition: parts}, per_poll=5)
    daemon = Daemon(SPEC, source, decode=decode, settings=SETTINGS, group=member, observer=progress)
    daemon.restore()
    daemon.partitions_assigned({partition})
    return daemon


def test_bank_members_learn_each_example_once_and_answer_alike() -> None:
    topic = SharedTopic()
    parts_a = multiclass(30, [1, 2, 3], seed=1)
    parts_b = multiclass(30, [3, 2, 5], seed=2)  # 5 only b sees; 1 only a
    progress = Progress()
    a = member_daemon(topic, "a", 0, parts_a, progress)
    b = member_daemon(topic, "b", 1, parts_b, Progress())
    a.run()
    b.run()
    member_a, member_b = a.mode.member, b.mode.member  # type: ignore[attr-defined]
    member_a.turn(idle=True)  # reads b's last record
    records = topic.last()
    assert records["a"].partitions[0].examples == 300 == records["a"].examples
    assert records["b"].partitions[1].examples == 300 == records["b"].examples
    assert records["a"].labels.labels != records["b"].labels.labels
    questions = multiclass(2, [1, 2, 3, 5], seed=3)
    rows = decode_rows(questions)
    assert member_a.answers(rows) == member_b.answers(rows)
    answer = json.loads(member_a.answers(rows)[0])
    assert sorted(entry[0] for entry in answer["ranking"]) == [1, 2, 3, 5]
    # each example judged once, by the common bank as it stood (argmax label): an
    # empty one (no label) misses the 100 before a's first record, then it learns
    assert progress.correct + progress.mistakes == 300
    assert 100 <= progress.mistakes < 130


def decode_rows(values: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from streamlearn.parse.svmlight import SvmlightParser

    rows = SvmlightParser().feed(b"".join(values))
    return rows.indptr, rows.indices, rows.values
