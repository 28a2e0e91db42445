"""``streamlearn serve`` as a real process on a real Kafka-compatible broker (Tansu):
kill -9 and restarts change nothing, nothing is lost or learned twice, predictions and
dead letters reach their topics, and offsets are committed after checkpoints."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from services import Tansu, free_port, wait_for

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.learn import learner_from_state

pytestmark = pytest.mark.kafka


def svmlight_messages(n: int, lines: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=20)
    out = []
    for _ in range(n):
        rows = []
        for _ in range(lines):
            chosen = np.sort(rng.choice(20, size=6, replace=False))
            x = rng.normal(size=6)
            label = "+1" if x @ direction[chosen] + rng.normal(scale=0.5) > 0 else "-1"
            rows.append(
                label + " " + " ".join(f"{i + 1}:{v:.4f}" for i, v in zip(chosen, x, strict=True))
            )
        out.append(("\n".join(rows) + "\n").encode())
    return out


class Serve:
    """One ``streamlearn serve`` process."""

    def __init__(self, broker: Tansu, topic: str, directory: Path, *extra: str) -> None:
        self.directory = directory
        command = [
            sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
            "--source", "kafka", "--bootstrap-servers", broker.bootstrap, "--topic", topic,
            "--group", f"g-{uuid.uuid4().hex[:8]}", "--checkpoint-dir", str(directory),
            "--idle-replay", "off", "--checkpoint-every", "1000", "--checkpoint-interval", "1h",
            "--replay-every", "700", "--metrics-addr", f"127.0.0.1:{free_port()}", *extra,
        ]  # fmt: skip
        self.log = directory.with_suffix(".log").open("ab")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.log)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.log.close()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self.log.close()
        return code


def latest(directory: Path) -> dict[str, Any] | None:
    found = CheckpointStore(directory).latest() if directory.exists() else None
    return found[1].payload if found is not None else None


def learned(directory: Path) -> int:
    payload = latest(directory)
    return int(payload["job"]["stream_examples"]) if payload else 0


def run_to_end(broker: Tansu, topic: str, directory: Path, total: int) -> dict[str, Any]:
    serve = Serve(broker, topic, directory)
    wait_for(lambda: learned(directory) == total, timeout=120, what=f"{total} examples learned")
    assert serve.stop() == 0
    payload = latest(directory)
    assert payload is not None
    return payload


def test_kill_9_and_restarts_give_the_uninterrupted_model(broker: Tansu, tmp_path: Path) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    # a poll takes up to 1000 messages: 4000 examples between checkpoint chances
    broker.produce(topic, svmlight_messages(5000, 4, seed=1))
    total = 20_000

    reference = run_to_end(broker, topic, tmp_path / "whole", total)

    crashed = tmp_path / "crashed"
    kills = 0
    for _ in range(3):
        before = learned(crashed)
        serve = Serve(broker, topic, crashed)
        wait_for(lambda b=before: learned(crashed) > b, timeout=120, what="a new checkpoint")
        if learned(crashed) == total:
            serve.stop()
            break
        serve.kill()
        kills += 1
    assert kills >= 2, "the daemon finished before it could be killed mid-stream"
    final = run_to_end(broker, topic, crashed, total)

    assert final["positions"] == reference["positions"] == {"0": 5000}
    ours = learner_from_state(final["learner"])
    theirs = learner_from_state(reference["learner"])
    assert np.array_equal(ours.coef_, theirs.coef_)
    assert ours.intercept_ == theirs.intercept_
    assert ours.summary() == theirs.summary()


def test_several_partitions_nothing_lost_nothing_twice(broker: Tansu, tmp_path: Path) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 3)
    produced = 0
    ends: dict[str, int] = {}
    for partition in range(3):
        values = svmlight_messages(300 + 100 * partition, 5, seed=partition)
        delivered = broker.produce(topic, values, partition)
        # the producer's delivery reports (Tansu's ListOffsets answer lags on such topics)
        ends[str(partition)] = max(offset for _, offset in delivered) + 1
        produced += len(values) * 5
    directory = tmp_path / "parts"
    serve = Serve(broker, topic, directory)
    wait_for(lambda: learned(directory) > 0, timeout=120, what="a first checkpoint")
    serve.kill()
    final = run_to_end(broker, topic, directory, produced)
    assert final["positions"] == ends == {"0": 300, "1": 400, "2": 500}
    assert final["job"]["stream_examples"] == produced


def test_predictions_dead_letters_and_commits(broker: Tansu, tmp_path: Path) -> None:
    from kafka import KafkaConsumer, TopicPartition

    topic, predictions, dead = (f"{n}-{uuid.uuid4().hex[:8]}" for n in ("t", "p", "d"))
    for name in (topic, predictions, dead):
        broker.create_topic(name, 1)
    broker.produce(topic, svmlight_messages(50, 10, seed=3))
    broker.produce(topic, [b"1:0.5 3:1.0\n2:-1.0\n"], key=b"ask-1")
    broker.produce(topic, [b"\xff\xfe garbage\n"], key=b"bad-1")
    directory = tmp_path / "pred"
    serve = Serve(broker, topic, directory, "--predictions-topic", predictions,
                  "--dead-letter-topic", dead, "--checkpoint-interval", "1s")  # fmt: skip
    wait_for(lambda: learned(directory) == 500, timeout=120, what="500 examples learned")
    assert serve.stop() == 0

    def read(name: str) -> list[Any]:
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=3000)
        consumer.assign([TopicPartition(name, 0)])
        consumer.seek_to_beginning()
        records = list(consumer)
        consumer.close()
        return records

    answers = read(predictions)
    assert [r.key for r in answers] == [b"ask-1", b"ask-1"]
    for record in answers:
        score, label = record.value.split()
        assert int(label) == (1 if float(score) > 0 else -1)
    assert [r.value for r in read(dead)] == [b"\xff\xfe garbage\n"]
    payload = latest(directory)
    assert payload is not None and payload["positions"] == {"0": 52}


def test_the_daemon_survives_a_paused_broker(broker: Tansu, tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    broker.produce(topic, svmlight_messages(100, 5, seed=4))
    directory = tmp_path / "pause"
    port = free_port()
    serve = Serve(broker, topic, directory, "--metrics-addr", f"127.0.0.1:{port}",
                  "--checkpoint-interval", "1s")  # fmt: skip

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    wait_for(ready, timeout=120, what="ready")
    broker.pause()
    try:
        wait_for(lambda: not ready(), timeout=60, what="not ready while the broker is paused")
        assert serve.process.poll() is None
    finally:
        broker.resume()
    wait_for(ready, timeout=60, what="ready again")
    broker.produce(topic, svmlight_messages(100, 5, seed=5))
    wait_for(lambda: learned(directory) == 1000, timeout=60, what="all 1000 examples learned")
    assert serve.stop() == 0
