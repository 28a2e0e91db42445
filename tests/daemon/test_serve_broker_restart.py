"""The broker goes away and comes back. A Tansu broker keeping its topics in S3 (moto's
server) is killed (kill -9) under a running ``serve`` and started again on the same
storage: the daemon waits, not ready, resumes where it stopped, and, stopped while the
broker is away, exits 0 within seconds and resumes from its checkpoint once both are
back; every example learned once, nothing lost, nothing twice. A broker that comes
back without its storage holds the partition back until the daemon is told to read it
again; a fallback to an older checkpoint learns the partitions it never saw from their
start."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_producers import librdkafka, send_all
from serve_process import Serve, latest
from services import S3Server, Tansu
from test_serve_kafka import svmlight_messages

from streamlearn.checkpoint.store import CheckpointStore

pytestmark = pytest.mark.kafka

LINES = 10
PARTITIONS = 2


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    server = S3Server()
    try:
        yield server
    finally:
        server.stop()


def produce(broker: Tansu, topic: str, messages: int, seed: int, ends: dict[str, int]) -> int:
    """``messages`` svmlight messages on each partition (librdkafka, lz4, idempotent);
    ``ends`` updated to the offsets after them; the labelled lines produced."""
    producer = librdkafka(broker, **{"compression.type": "lz4"})
    for partition in range(PARTITIONS):
        values = svmlight_messages(messages, LINES, seed=seed + partition)
        offsets = send_all(producer, topic, values, partition=partition)
        ends[str(partition)] = max(offsets) + 1
    return PARTITIONS * messages * LINES


def test_a_broker_restarted_on_its_storage_loses_nothing_and_repeats_nothing(
    s3: S3Server, tmp_path: Path
) -> None:
    broker = Tansu(storage=s3)
    try:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, PARTITIONS)
        ends: dict[str, int] = {}
        total = produce(broker, topic, 30, seed=1, ends=ends)
        directory = tmp_path / "restart"
        serve = Serve(broker, topic, directory, "--checkpoint-interval", "1s")
        serve.wait_learned(total)

        # away under a running daemon: it waits, not ready, and goes on once it is back
        broker.kill()
        serve.wait(lambda: not serve.answers("/readyz"), "not ready while the broker is away")
        time.sleep(2.0)
        broker.restart()
        total += produce(broker, topic, 20, seed=3, ends=ends)
        serve.wait_learned(total)
        serve.wait(lambda: serve.answers("/readyz"), "ready again")

        # away while the daemon stops: it stops all the same, and a new one resumes
        broker.kill()
        started = time.monotonic()
        assert serve.stop() == 0, serve.log_tail()
        assert time.monotonic() - started < 5.0
        broker.restart()
        total += produce(broker, topic, 10, seed=5, ends=ends)
        again = Serve(broker, topic, directory, "--checkpoint-interval", "1s")
        again.wait_learned(total)
        assert again.stop() == 0, again.log_tail()
        final = latest(directory)
        assert final is not None
        assert final["job"]["stream_examples"] == total == PARTITIONS * 60 * LINES
        assert final["positions"] == ends
        for log in (serve.log_path.read_text(), again.log_path.read_text()):
            assert "Traceback" not in log
    finally:
        broker.stop()


def test_a_fallback_to_an_older_checkpoint_learns_what_it_never_saw(tmp_path: Path) -> None:
    """The newest checkpoints unreadable, an older one intact that never saw partition 1:
    partition 1 starts at its log's start, not at the committed offset the lost
    checkpoints moved it to (where its examples would be skipped)."""
    broker = Tansu()
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    broker.produce(topic, svmlight_messages(50, LINES, seed=8), partition=0)
    directory = tmp_path / "fallback"
    serve = Serve(broker, topic, directory, "--checkpoint-interval", "1s", "--keep", "10")
    serve.wait_learned(500)
    older = CheckpointStore(directory).paths()
    broker.produce(topic, svmlight_messages(30, LINES, seed=9), partition=1)
    serve.wait_learned(800)
    assert serve.stop() == 0, serve.log_tail()
    for path in CheckpointStore(directory).paths():
        if path not in older:  # every checkpoint that saw partition 1, truncated
            path.write_bytes(path.read_bytes()[:100])
    again = Serve(broker, topic, directory, "--checkpoint-interval", "1s")
    again.wait_learned(800)
    assert again.stop() == 0, again.log_tail()
    final = latest(directory)
    assert final is not None and final["job"]["stream_examples"] == 800
    assert final["positions"] == {"0": 50, "1": 30}
    log = again.log_path.read_text()
    assert "fell back to an older checkpoint" in log
    assert "partition 1 starts at its log's start" in log
    broker.stop()


def test_a_broker_that_comes_back_empty_is_held_then_read_from_the_start(
    tmp_path: Path,
) -> None:
    """Tansu restarted on memory: the topic is gone, and created again with fewer
    records than were learned. The daemon holds the partition back (not ready, the held
    gauge, an error naming the fix), and stops cleanly; started again with
    --on-offset-reset earliest, it learns the new log from its start, once."""
    broker = Tansu()
    try:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, 1)
        for value in svmlight_messages(60, LINES, seed=10):  # one batch a message
            broker.produce(topic, [value], partition=0)
        directory = tmp_path / "empty"
        serve = Serve(broker, topic, directory, "--checkpoint-interval", "1s")
        serve.wait_learned(600)
        broker.kill()
        broker.restart()  # memory: empty
        # Tansu may create it first for the daemon's requests (metadata excepted): the
        # topic is new and empty either way
        broker.create_topic(topic, 1, exist_ok=True)
        for value in svmlight_messages(20, LINES, seed=11):
            broker.produce(topic, [value], partition=0)
        serve.wait(lambda: serve.metric("streamlearn_held_partitions") == 1, "held back")
        assert not serve.answers("/readyz")
        assert "partition 0 is held back: its log went back" in serve.log_tail()
        assert serve.stop() == 0, serve.log_tail()
        assert latest(directory)["job"]["stream_examples"] == 600  # type: ignore[index]

        again = Serve(broker, topic, directory, "--checkpoint-interval", "1s",
                      "--on-offset-reset", "earliest")  # fmt: skip
        again.wait_learned(800)
        assert again.stop() == 0, again.log_tail()
        final = latest(directory)
        assert final is not None and final["positions"] == {"0": 20}
        assert "is read again from its start (--on-offset-reset earliest)" in (
            again.log_path.read_text()
        )
    finally:
        broker.stop()
