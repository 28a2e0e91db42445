"""``streamlearn serve`` on a real broker (Tansu) when its predictions or dead letters
cannot be delivered: the message is logged and counted, the stream goes on."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from serve_process import Serve, read_topic
from services import Tansu
from test_serve_kafka import svmlight_messages

pytestmark = pytest.mark.kafka

UNDELIVERED = "streamlearn_undelivered_messages_total"


def large_message(min_bytes: int) -> tuple[bytes, int]:
    """An svmlight message of at least ``min_bytes`` with one bad line in its middle,
    and the number of its good lines."""
    lines = svmlight_messages(1, 20, seed=9)[0].splitlines()
    size = sum(len(line) + 1 for line in lines)
    count = min_bytes // size + 1
    good = lines * count
    half = len(good) // 2
    value = b"\n".join([*good[:half], b"+1 1:1 bad", *good[half:]])
    return value + b"\n", len(good)


def test_a_dead_letter_as_large_as_a_fetch_is_forwarded_or_counted(
    broker: Tansu, tmp_path: Path
) -> None:
    """A message over the producer's default 1 MiB with a bad line is forwarded whole
    (the producer takes what the consumer fetches); when it cannot be (a consumer that
    fetches 1 MiB, so a producer refusing more), it is logged and counted and the daemon
    goes on, where it used to die at this message on every start."""
    from kafka import KafkaProducer

    topic, dead = (f"{n}-{uuid.uuid4().hex[:8]}" for n in ("t", "d"))
    for name in (topic, dead):
        broker.create_topic(name, 1)
    big, lines = large_message(1_300_000)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_request_size=1 << 24)
    try:
        for value in (big, b"-1 2:1\n"):
            producer.send(topic, value=value, key=b"big").get(timeout=60)
    finally:
        producer.close()
    options = ("--dead-letter-topic", dead, "--checkpoint-interval", "1s", "--replay-every", "0")
    forwarding = Serve(broker, topic, tmp_path / "forwarding", *options)
    refusing = Serve(
        broker, topic, tmp_path / "refusing", *options, consumer={"fetch_max_bytes": 1 << 20}
    )
    for serve in (forwarding, refusing):
        serve.wait_learned(lines + 1)
    assert refusing.metric(UNDELIVERED, sink="dead_letters") == 1
    assert forwarding.metric(UNDELIVERED, sink="dead_letters") == 0
    for serve in (forwarding, refusing):
        assert serve.stop() == 0, serve.log_tail()
    assert "dead letter of partition 0 offset 0 not delivered" in refusing.log_tail()
    assert "MessageSizeTooLargeError" in refusing.log_tail()
    assert [(r.key, r.value) for r in read_topic(broker, dead, 1)] == [(b"big", big)]
