"""``streamlearn serve`` restarted on a real broker (Tansu) where its checkpoints cannot
say where to resume: it refuses to start rather than read from the wrong offsets."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from serve_process import Serve
from services import Tansu
from test_serve_kafka import svmlight_messages

from streamlearn.checkpoint.store import CheckpointStore

pytestmark = pytest.mark.kafka


def test_another_topic_or_unreadable_checkpoints_stop_the_start(
    broker: Tansu, tmp_path: Path
) -> None:
    """Topic A's offsets applied to topic B (checkpoints did not name their topic) left
    B's first messages out of the model, and checkpoints that were all unreadable made
    the daemon start empty from the group's committed offsets, past all they had
    learned. Both now end the start with an error line that says what to do."""
    first, second = (f"t-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for topic in (first, second):
        broker.create_topic(topic, 1)
        broker.produce(topic, svmlight_messages(30, 10, seed=13))
    directory = tmp_path / "ckpt"
    serve = Serve(broker, first, directory, "--checkpoint-interval", "1s")
    serve.wait_learned(300)
    assert serve.stop() == 0

    other_topic = Serve(broker, second, directory)
    assert other_topic.exit_code() == 1
    tail = other_topic.log_tail()
    assert f"error: checkpoint {directory}" in tail
    assert f"holds positions in kafka:{first}, not in kafka:{second}" in tail

    for path in CheckpointStore(directory).paths():
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    unreadable = Serve(broker, first, directory)
    assert unreadable.exit_code() == 1
    tail = unreadable.log_tail()
    assert f"error: none of the checkpoints in {directory} can be read" in tail
    assert "Traceback" not in tail
