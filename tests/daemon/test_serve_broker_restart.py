"""The broker goes away and comes back: a Tansu broker keeping its topics in S3 (moto's
server) is killed (kill -9) under a running ``serve`` and started again on the same
storage. The daemon waits, not ready, resumes where it stopped, and, stopped while the
broker is away, exits 0 within seconds and resumes from its checkpoint once both are
back: every example learned once, nothing lost, nothing twice."""

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
