"""Learning groups on a real broker (Tansu) with real ``serve`` processes: members of
one consumer group learn one model through a sync topic, every labelled example once,
whatever happens to the members."""

from __future__ import annotations

import json
import os
import signal
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from group_process import Member, group_examples, positions, records
from services import Tansu
from test_serve_kafka import svmlight_messages

pytestmark = pytest.mark.kafka

PARTITIONS = 6
#: lines of each message
LINES = 20


def _topics(broker: Tansu, messages: int, seed: int = 5) -> tuple[str, str, int]:
    """A 6-partition input topic holding ``messages`` svmlight messages spread over the
    partitions, and a sync topic name; the labelled lines in all."""
    topic, sync = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    values = svmlight_messages(messages, LINES, seed=seed)
    for i, value in enumerate(values):
        broker.produce(topic, [value], partition=i % PARTITIONS)
    return topic, sync, messages * LINES


def _all_learned(broker: Tansu, topic: str, sync: str) -> bool:
    """Whether the members' records stand at the end of every partition."""
    return positions(records(broker, sync)) == broker.end_offsets(topic)


QUESTIONS = b"1:0.5 3:-1.2 7:0.3\n2:1.5 9:0.1\n4:-0.7 12:2.0 19:0.4\n"


@pytest.mark.parametrize("delta", ["1", "auto"])
def test_two_members_learn_every_example_once_and_answer_alike(
    broker: Tansu, tmp_path: Path, delta: str
) -> None:
    """With ``--delta auto`` too: each member settles its own, and the group agrees on
    the largest (written in the records)."""
    topic, sync, total = _topics(broker, 120)
    group = f"g-{uuid.uuid4().hex[:8]}"
    options = ("--sync-every", "200", "--delta", delta)  # the last --delta given counts
    members = [Member(broker, topic, sync, group, tmp_path, *options) for _ in range(2)]
    members[0].wait(lambda: _all_learned(broker, topic, sync), "every partition learned")
    latest = records(broker, sync)
    assert sum(record.examples for record in latest.values()) == total
    assert group_examples(latest) == total
    owned = [set(record.partitions) for record in latest.values()]
    assert set().union(*owned) == set(range(PARTITIONS))
    # once every member has folded the others' last records, they answer alike
    members[0].wait(
        lambda: members[0].predict(QUESTIONS) == members[1].predict(QUESTIONS),
        "the same answers from both members",
    )
    scores = [answer["score"] for answer in members[0].predict(QUESTIONS)]
    assert np.all(np.isfinite(scores)) and any(score != 0 for score in scores)
    # each record holds the Delta its member learned under when it wrote: with 'auto',
    # its own R/10 (the other member's larger one once it read it), the group's the largest
    deltas = {record.delta for record in records(broker, sync).values()}
    assert 0 < max(deltas) < 10 if delta == "auto" else deltas == {1.0}, deltas
    for member in members:
        assert member.stop() == 0, member.log_tail()
        assert "Traceback" not in member.log_path.read_text(), member.log_tail()
    latest = records(broker, sync)
    assert sum(record.examples for record in latest.values()) == total


def _produce(broker: Tansu, topic: str, messages: int, seed: int) -> int:
    """``messages`` more svmlight messages over the partitions; their labelled lines."""
    for i, value in enumerate(svmlight_messages(messages, LINES, seed=seed)):
        broker.produce(topic, [value], partition=i % PARTITIONS)
    return messages * LINES


def _model(member: Member) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{member.http_port}/model", timeout=10) as r:
        described: dict[str, Any] = json.loads(r.read())
    return described


def _counted(latest: dict[str, Any], members: list[Member]) -> str:
    """What each record counts, where it stands, and each member's log: what a count
    that is not the input's needs to be explained."""
    lines = [
        f"{name}: #{record.sequence} {record.examples} examples, holds "
        f"{ {p: (q.offset, q.examples) for p, q in record.partitions.items()} }, released "
        f"{ {p: (q.offset, q.examples) for p, q in record.released.items()} }"
        for name, record in sorted(latest.items())
    ]
    logs = [
        f"--- {m.name}\n" + "\n".join(
            line for line in m.log_path.read_text(errors="replace").splitlines()
            if "partitions" in line
        )[-3000:]
        for m in members
    ]  # fmt: skip
    return "\n".join([*lines, *logs])


def test_a_member_killed_mid_stream_and_one_started_later_lose_and_repeat_nothing(
    broker: Tansu, tmp_path: Path
) -> None:
    """kill -9 loses what the member learned since it last published; its partitions
    resume where that record ends, so the group learns it once again, and nothing twice.
    Its share stays in the model until its takers have learned a window's worth."""
    topic, sync, total = _topics(broker, 60, seed=7)
    group = f"g-{uuid.uuid4().hex[:8]}"
    options = ("--sync-every", "100", "--buffer-size", "300")
    start = [Member(broker, topic, sync, group, tmp_path, *options) for _ in range(3)]
    start[0].wait(lambda: _all_learned(broker, topic, sync), "every partition learned")
    total += _produce(broker, topic, 300, seed=8)
    victim = start[1]
    victim.wait(
        lambda: records(broker, sync)[victim.name].examples > 0, "the victim's first record"
    )
    victim.kill()
    survivors = [start[0], start[2]]
    survivors[0].wait(lambda: _all_learned(broker, topic, sync), "the survivors caught up")
    late = Member(broker, topic, sync, group, tmp_path, *options)
    late.wait(lambda: records(broker, sync).get(late.name) is not None, "the late member")
    total += _produce(broker, topic, 300, seed=9)
    live = [*survivors, late]
    late.wait(
        lambda: (
            _all_learned(broker, topic, sync) and records(broker, sync)[late.name].partitions != {}
        ),
        "every partition learned, the late member owning some",
    )
    latest = records(broker, sync)
    learned = sum(record.examples for record in latest.values())
    assert learned == total, _counted(latest, [victim, *live])
    assert group_examples(latest) == total
    late.wait(
        lambda: all(m.predict(QUESTIONS) == live[0].predict(QUESTIONS) for m in live),
        "the same answers from every live member",
    )

    # once the survivors have relearned a window's worth from the victim's partitions,
    # its share leaves; the group's margin is the smallest of the members' margins on
    # their windows, as each last published it (the late member's own: its latest)
    def settled() -> dict[str, Any] | None:
        model = _model(late)
        described, own = model["group"], model["certificate"]["margin_achieved"]
        if victim.name not in described["dropped"] or own is None or described["margin"] is None:
            return None
        latest = records(broker, sync)
        reported = [latest[m.name].window.margin for m in survivors]
        return model if described["margin"] == pytest.approx(min([*reported, own])) else None

    described = late.wait(settled, "the victim dropped, the group's margin agreed")["group"]
    assert set(described["members"]) == {m.name for m in live}
    assert 0 < described["margin"] <= described["margin_upper_bound"]
    for member in live:
        assert member.stop() == 0, member.log_tail()
        assert "Traceback" not in member.log_path.read_text(), member.log_tail()
    assert sum(record.examples for record in records(broker, sync).values()) == total


def _checkpointed_sequence(directory: Path) -> int | None:
    """The sync record the newest checkpoint in ``directory`` was written with."""
    from streamlearn.checkpoint.store import CheckpointStore

    latest = CheckpointStore(directory).latest() if directory.exists() else None
    return None if latest is None else int(latest[1].payload["group"]["sequence"])


def test_a_member_with_a_checkpoint_directory_comes_back_with_its_window(
    broker: Tansu, tmp_path: Path
) -> None:
    """kill -9 a member whose checkpoint matches its last record, start it again with
    the same --member-id and --checkpoint-dir: it goes on from its window and share
    (none of its examples learned again), and every example is learned once."""
    topic, sync, total = _topics(broker, 60, seed=11)
    group = f"g-{uuid.uuid4().hex[:8]}"
    options = ("--sync-every", "100", "--buffer-size", "400", "--checkpoint-interval", "1s")
    dirs = {name: tmp_path / f"ckpt-{name}" for name in ("a", "b")}

    def member(name: str) -> Member:
        return Member(broker, topic, sync, group, tmp_path, *options, "--checkpoint-dir",
                      str(dirs[name]), name=f"{name}-{group}")  # fmt: skip

    a, b = member("a"), member("b")
    a.wait(lambda: _all_learned(broker, topic, sync), "every partition learned")
    a.wait(
        lambda: _checkpointed_sequence(dirs["a"]) == records(broker, sync)[a.name].sequence,
        "a checkpoint of a's last record",
    )
    held = records(broker, sync)[a.name]
    window = _model(a)["certificate"]["window_examples"]
    a.kill()
    again = member("a")
    again.wait(lambda: again.metric("streamlearn_ready") == 1.0, "the restarted member ready")
    assert "goes on from its checkpoint" in again.log_path.read_text(), again.log_tail()
    assert _model(again)["certificate"]["window_examples"] == window > 0
    total += _produce(broker, topic, 120, seed=12)
    again.wait(lambda: _all_learned(broker, topic, sync), "the new examples learned")
    latest = records(broker, sync)
    assert latest[again.name].examples >= held.examples  # its count went on from its record
    assert group_examples(latest) == total
    assert sum(record.examples for record in latest.values()) == total
    again.wait(
        lambda: again.predict(QUESTIONS) == b.predict(QUESTIONS), "the same answers from both"
    )
    for live in (again, b):
        assert live.stop() == 0, live.log_tail()
        assert "Traceback" not in live.log_path.read_text(), live.log_tail()


#: questions for a bank of labels 1, 2, 3 (5): each leans on its label's feature
BANK_QUESTIONS = b"2:2.0 3:0.1\n4:2.1\n1:0.2 6:1.9\n"


def test_a_group_of_banks_learns_every_example_once_and_a_restarted_member_keeps_its_window(
    broker: Tansu, tmp_path: Path
) -> None:
    """``--one-vs-rest`` members: every example learned once (counted against the
    input), the same answers once synchronised, and a member killed with -9 and started
    again with its --checkpoint-dir goes on with its window; a label that comes later
    (5) joins the common bank."""
    from test_daemon_group_bank import multiclass

    topic, sync = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)

    def produce(messages: int, labels: list[int], seed: int) -> int:
        for i, value in enumerate(multiclass(messages, labels, seed, per_message=LINES)):
            broker.produce(topic, [value], partition=i % PARTITIONS)
        return messages * LINES

    total = produce(48, [1, 2, 3], seed=13)
    group = f"g-{uuid.uuid4().hex[:8]}"
    options = ("--one-vs-rest", "--sync-every", "100", "--buffer-size", "400",
               "--checkpoint-interval", "1s")  # fmt: skip
    dirs = {name: tmp_path / f"ckpt-{name}" for name in ("a", "b")}

    def member(name: str) -> Member:
        return Member(broker, topic, sync, group, tmp_path, *options, "--checkpoint-dir",
                      str(dirs[name]), name=f"{name}-{group}")  # fmt: skip

    def same_answers() -> bool:
        return bool(a.predict(BANK_QUESTIONS) == b.predict(BANK_QUESTIONS))

    a, b = member("a"), member("b")
    a.wait(lambda: _all_learned(broker, topic, sync), "every partition learned")
    latest = records(broker, sync)
    assert group_examples(latest) == total == sum(record.examples for record in latest.values())
    assert all(record.labels is not None for record in latest.values())
    a.wait(same_answers, "the same answers from both")
    ranked = [entry["label"] for entry in a.predict(BANK_QUESTIONS)[0]["ranking"]]
    assert sorted(ranked) == [1, 2, 3]
    a.wait(
        lambda: _checkpointed_sequence(dirs["a"]) == records(broker, sync)[a.name].sequence,
        "a checkpoint of a's last record",
    )
    window = _model(a)["certificate"]["window_examples"]
    a.kill()
    a = member("a")
    a.wait(lambda: a.metric("streamlearn_ready") == 1.0, "the restarted member ready")
    assert "goes on from its checkpoint" in a.log_path.read_text(), a.log_tail()
    assert _model(a)["certificate"]["window_examples"] == window > 0
    total += produce(24, [1, 2, 3, 5], seed=14)
    a.wait(lambda: _all_learned(broker, topic, sync), "the new examples learned")
    latest = records(broker, sync)
    assert group_examples(latest) == total == sum(record.examples for record in latest.values())
    a.wait(same_answers, "the same answers from both after the restart")
    ranked = [entry["label"] for entry in a.predict(BANK_QUESTIONS)[0]["ranking"]]
    assert sorted(ranked) == [1, 2, 3, 5]
    for live in (a, b):
        assert live.stop() == 0, live.log_tail()
        assert "Traceback" not in live.log_path.read_text(), live.log_tail()


def test_a_member_whose_session_expires_claims_nothing_and_learns_nothing_twice(
    broker: Tansu, tmp_path: Path
) -> None:
    """A member stalled past its session timeout (a process stopped, or kafka-python's
    network loop blocked for seconds on a loaded machine) is removed from the consumer
    group; the other takes its partitions from where its last record stands. When it
    runs again it learns what it had fetched before its consumer tells it of the loss:
    it publishes none of it, and goes back to its last record once told."""
    topic, sync, total = _topics(broker, 60, seed=7)
    group = f"g-{uuid.uuid4().hex[:8]}"
    options = ("--sync-every", "100", "--buffer-size", "300")
    members = [Member(broker, topic, sync, group, tmp_path, *options) for _ in range(2)]
    members[0].wait(lambda: _all_learned(broker, topic, sync), "every partition learned")
    stalled = members[1]
    os.kill(stalled.process.pid, signal.SIGSTOP)
    try:
        members[0].wait(
            lambda: len(records(broker, sync)[members[0].name].partitions) == PARTITIONS,
            "the other member holding every partition",
        )
        total += _produce(broker, topic, 120, seed=8)
    finally:
        os.kill(stalled.process.pid, signal.SIGCONT)
    stalled.wait(lambda: "lost partitions" in stalled.log_path.read_text(), "the loss noticed")
    stalled.wait(
        lambda: (
            _all_learned(broker, topic, sync)
            and all(records(broker, sync)[m.name].partitions for m in members)
        ),
        "every partition learned, each member holding some again",
    )
    latest = records(broker, sync)
    assert group_examples(latest) == total
    learned = sum(record.examples for record in latest.values())
    assert learned == total, _counted(latest, members)
