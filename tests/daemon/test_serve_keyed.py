"""``serve --model-key`` as real processes on a real broker (Tansu): tenants that
disagree are each answered by their own model; a tight memory bound spills and
restores models without changing them; a kill -9 loses nothing and learns nothing
twice. Every run is compared, key by key and bit for bit, with a run that never spilled
a model."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from serve_process import LEARN_TIMEOUT, TEST_CONSUMER, Serve, read_topic
from services import Tansu, free_port, wait_for

from streamlearn.checkpoint.codec import encode
from streamlearn.keyed import ModelRecord, decode_record

pytestmark = pytest.mark.kafka

PARTITIONS = 3
KEYS = 10
FEATURES = 6
DIRECTION = np.random.default_rng(0).normal(size=FEATURES)
#: the question every tenant is asked at the end
QUESTION = b"1:0.8 2:0.3 3:-0.4 4:1.1 5:0.2 6:-0.6"


def tenant_messages(n: int, seed: int, classes: int = 0) -> list[tuple[bytes, bytes]]:
    """``n`` (key, one svmlight line) messages of ``KEYS`` tenants: the label is the side
    of one hyperplane, flipped for the odd tenants (one model of all of them would be
    right for half); with ``classes``, one of that many classes (the nearest of as many
    directions), numbered in a rotated order for each tenant."""
    rng = np.random.default_rng(seed)
    directions = np.random.default_rng(1).normal(size=(max(classes, 1), FEATURES))
    out = []
    for _ in range(n):
        tenant = int(rng.integers(KEYS))
        x = rng.normal(size=FEATURES)
        if classes:
            label = f"{(int(np.argmax(directions @ x)) + tenant) % classes + 1}"
        else:
            label = f"{(1 if x @ DIRECTION > 0 else -1) * (-1 if tenant % 2 else 1):+d}"
        line = f"{label} " + " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x))
        out.append((b"tenant-%d" % tenant, line.encode()))
    return out


def produce(broker: Tansu, topic: str, messages: list[tuple[bytes, bytes]]) -> dict[int, int]:
    """Each message with its key (Kafka's partitioner sends a key to one partition); the
    offset after the last one of each partition, as the producer was told (Tansu's
    answer to a request for the end offsets of such topics lags)."""
    producer = broker.producer
    futures = [producer.send(topic, key=key, value=value) for key, value in messages]
    producer.flush(timeout=60)
    ends: dict[int, int] = {}
    for future in futures:
        metadata = future.get(timeout=60)
        ends[metadata.partition] = max(ends.get(metadata.partition, 0), metadata.offset + 1)
    return ends


class Keyed(Serve):
    """One ``serve --model-key`` process of consumer group ``group``, its models spilled
    to ``state_topic``; its HTTP API on a port of its own."""

    def __init__(
        self, broker: Tansu, topic: str, group: str, state_topic: str, log_dir: Path, *extra: str
    ) -> None:
        self.http_port = free_port()
        self.metrics_port = free_port()
        options = [f"--consumer-option={name}={value}" for name, value in TEST_CONSUMER.items()]
        command = [
            sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
            "--delta", "1", "--buffer-size", "100", "--source", "kafka",
            "--bootstrap-servers", broker.bootstrap, "--topic", topic, "--group", group,
            "--model-key", "--state-topic", state_topic, "--idle-replay", "off",
            "--replay-every", "30", "--checkpoint-interval", "1s",
            "--metrics-addr", f"127.0.0.1:{self.metrics_port}",
            "--http-addr", f"127.0.0.1:{self.http_port}", *options, *extra,
        ]  # fmt: skip
        super().__init__(broker, topic, log_dir / f"k-{uuid.uuid4().hex[:6]}", command=command)

    def until(self, condition: Any, what: str) -> Any:
        """:meth:`wait`, looking twice a second (reading the state topic takes a while)."""

        def alive_and() -> Any:
            value = condition()
            if not value and self.process.poll() is not None:
                raise AssertionError(f"the daemon exited while waiting for {what}:\n"
                                     f"{self.log_tail()}")  # fmt: skip
            return value

        try:
            return wait_for(alive_and, timeout=LEARN_TIMEOUT, interval=0.5, what=what)
        except TimeoutError as error:
            raise TimeoutError(f"{error}; the daemon's log:\n{self.log_tail()}") from error

    def learned(self) -> float:
        """Examples this process has learned (its metrics; 0 before they answer)."""
        return self.metric("streamlearn_examples_total", outcome="learned") or 0.0

    def predict(self, key: str, body: bytes, path: str = "/predict") -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}{path}?key={key}",
            data=body,
            headers={"content-type": "text/plain"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


def models(broker: Tansu, state_topic: str) -> dict[bytes, ModelRecord]:
    """The latest record of every key on the state topic (what compaction keeps)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             fetch_max_bytes=64 << 20)  # fmt: skip
    try:
        found = consumer.partitions_for_topic(state_topic) or set()
        partitions = [TopicPartition(state_topic, p) for p in sorted(found)]
        latest: dict[bytes, bytes] = {}
        if partitions:
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            ends = consumer.end_offsets(partitions)
            while any(consumer.position(tp) < end for tp, end in ends.items()):
                for batch in consumer.poll(timeout_ms=500).values():
                    for record in batch:
                        latest[record.key] = record.value
        return {key: decode_record(value, key) for key, value in latest.items()}
    finally:
        consumer.close()


def learned(broker: Tansu, state_topic: str) -> int:
    """Labelled examples the models on the state topic hold, all keys together."""
    return sum(record.examples for record in models(broker, state_topic).values())


def run_to_end(serve: Keyed, broker: Tansu, state_topic: str, total: int) -> dict[bytes, Any]:
    """The models on the state topic once they hold ``total`` examples and the daemon
    stopped cleanly."""
    serve.until(lambda: learned(broker, state_topic) >= total, f"{total} examples learned")
    assert serve.stop() == 0, serve.log_tail()
    assert "Traceback" not in serve.log_path.read_text(), serve.log_tail()
    return models(broker, state_topic)


def same(ours: dict[bytes, ModelRecord], theirs: dict[bytes, ModelRecord]) -> None:
    """Every key's model is the same, bit for bit, and has learned as many examples."""
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        assert ours[key].examples == theirs[key].examples, key
        state_a = encode(ours[key].state, created=0.0)
        assert state_a == encode(theirs[key].state, created=0.0), key


def topics(broker: Tansu) -> tuple[str, str]:
    topic, predictions = (f"{n}-{uuid.uuid4().hex[:8]}" for n in ("t", "p"))
    broker.create_topic(topic, PARTITIONS)
    broker.create_topic(predictions, 1)
    return topic, predictions


def test_each_tenant_is_answered_by_its_own_model_and_spills_change_nothing(
    broker: Tansu, tmp_path: Path
) -> None:
    topic, predictions = topics(broker)
    messages = tenant_messages(1500, seed=1)
    tight_state, free_state = f"s-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    # at most two of the ten models in memory: each poll spills and restores most of them
    window = ("--buffer-size", "1000")  # every example of a tenant
    tight = Keyed(broker, topic, f"g-{uuid.uuid4().hex[:8]}", tight_state, tmp_path, *window,
                  "--max-models", "2", "--predictions-topic", predictions)  # fmt: skip
    free = Keyed(broker, topic, f"g-{uuid.uuid4().hex[:8]}", free_state, tmp_path, *window)
    for first in range(0, 1500, 100):  # in rounds, each learned before the next comes
        produce(broker, topic, messages[first : first + 100])
        tight.wait(lambda n=first + 100: tight.learned() >= n, f"{first + 100} examples")
    produce(broker, topic, [(b"tenant-0", QUESTION), (b"tenant-1", QUESTION)])
    tight.until(lambda: learned(broker, tight_state) >= 1500, "every example learned")

    # Kafka answers: keyed like the question, by that key's model
    answers = {r.key: r.value.split() for r in read_topic(broker, predictions, 2)}
    truth = 1 if np.array([0.8, 0.3, -0.4, 1.1, 0.2, -0.6]) @ DIRECTION > 0 else -1
    assert int(answers[b"tenant-0"][1]) == truth and int(answers[b"tenant-1"][1]) == -truth
    # HTTP answers: by the key the request names, in memory or not
    x = np.random.default_rng(7).normal(size=(40, FEATURES))
    body = "".join(" ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(row)) + "\n" for row in x)
    for tenant in range(KEYS):
        status, answer = tight.predict(f"tenant-{tenant}", body.encode())
        assert status == 200, answer
        labels = np.array([p["label"] for p in answer["predictions"]])
        rule = np.where(x @ DIRECTION > 0, 1, -1) * (-1 if tenant % 2 else 1)
        assert np.mean(labels == rule) >= 0.9, tenant
    for key in (b"tenant-0", b"tenant-1"):  # the model that answered over Kafka, copied
        status, answer = tight.predict(key.decode(), QUESTION)
        assert answer["predictions"][0]["score"] == float(answers[key][0])
    status, answer = tight.predict("tenant-99", QUESTION)
    assert status == 404, answer
    restored = tight.metric("streamlearn_keyed_models_total", event="restored")
    spilled = tight.metric("streamlearn_keyed_models_total", event="spilled")
    assert restored is not None and spilled is not None and restored > 50 and spilled > 50
    assert (tight.metric("streamlearn_keyed_models_resident") or 0) <= 2
    assert tight.metric("streamlearn_keyed_models_stored") == KEYS
    checkpoint = urllib.request.Request(
        f"http://127.0.0.1:{tight.metrics_port}/checkpoint", data=b"", method="POST"
    )
    with urllib.request.urlopen(checkpoint, timeout=10) as response:
        assert response.status == 202  # the models' records are the checkpoint

    ours = run_to_end(tight, broker, tight_state, 1500)
    theirs = run_to_end(free, broker, free_state, 1500)
    assert sum(record.examples for record in ours.values()) == 1500
    same(ours, theirs)
    by_key: dict[bytes, int] = {}
    for key, _ in messages:
        by_key[key] = by_key.get(key, 0) + 1
    assert {key: record.examples for key, record in ours.items()} == by_key


def test_examples_posted_for_a_key_reach_its_record_on_the_state_topic(
    broker: Tansu, tmp_path: Path
) -> None:
    """``POST /learn?key=K`` on a real ``serve --model-key --http-learn``: K's model
    learns the examples, its record on the state topic holds them after the stop, the
    other keys' records do not, and a key without a model gets 404."""
    topic, _ = topics(broker)
    messages = tenant_messages(300, seed=5)
    state = f"s-{uuid.uuid4().hex[:8]}"
    serve = Keyed(broker, topic, f"g-{uuid.uuid4().hex[:8]}", state, tmp_path, "--http-learn")
    produce(broker, topic, messages)
    serve.until(lambda: serve.learned() >= 300, "the topic's examples learned")
    posted = b"".join(b"+1 " + QUESTION + b"\n" for _ in range(25))
    status, answer = serve.predict("tenant-3", posted, path="/learn")
    assert status == 200 and answer["learned"] == 25, answer
    status, answer = serve.predict("tenant-99", posted, path="/learn")
    assert status == 404, answer
    records = run_to_end(serve, broker, state, 325)
    by_key: dict[bytes, int] = {}
    for key, _ in messages:
        by_key[key] = by_key.get(key, 0) + 1
    by_key[b"tenant-3"] += 25
    assert {key: record.examples for key, record in records.items()} == by_key


@pytest.mark.parametrize("kind", ["binary", "one-vs-rest"])
def test_a_kill_9_loses_nothing_and_learns_nothing_twice(
    broker: Tansu, tmp_path: Path, kind: str
) -> None:
    """The victim commits no offset (no checkpoint before it dies) and is killed once it
    has spilled a model: its successor reads the topic from the start, restores the
    models the victim spilled and skips exactly the examples their records hold. The
    same with each key's model a one-vs-rest bank of three classes."""
    topic, _ = topics(broker)
    banks = kind == "one-vs-rest"
    messages = tenant_messages(3000, seed=2, classes=3 if banks else 0)
    ends = produce(broker, topic, messages)
    state, reference_state = f"s-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    model = ("--one-vs-rest",) if banks else ()
    reference = Keyed(broker, topic, f"g-{uuid.uuid4().hex[:8]}", reference_state, tmp_path,
                      *model)  # fmt: skip
    victim = Keyed(broker, topic, group, state, tmp_path, "--max-models", "5",
                   "--checkpoint-interval", "1h", *model)  # fmt: skip
    victim.until(lambda: learned(broker, state) > 0, "a model spilled")
    victim.kill()
    held = learned(broker, state)  # the models in memory died with it
    assert 0 < held < 3000
    assert broker.committed(topic, group, PARTITIONS) == dict.fromkeys(range(PARTITIONS))
    restarted = Keyed(broker, topic, group, state, tmp_path, "--max-models", "5", *model)
    restarted.until(lambda: learned(broker, state) >= 3000, "every example learned")
    assert restarted.learned() == 3000 - held
    skipped = "streamlearn_keyed_skipped_examples_total"  # read from the last snapshot
    restarted.until(lambda: restarted.metric(skipped) == held, f"{held} examples skipped")
    ours = run_to_end(restarted, broker, state, 3000)
    assert sum(record.examples for record in ours.values()) == 3000
    same(ours, run_to_end(reference, broker, reference_state, 3000))
    assert broker.committed(topic, group, PARTITIONS) == ends
    formats = {record.state["format"] for record in ours.values()}
    assert formats == {"streamlearn.bank" if banks else "streamlearn.learner"}


def test_two_members_share_the_keys_by_partition_and_hand_them_over(
    broker: Tansu, tmp_path: Path
) -> None:
    """A second member joins mid-stream: the first writes the models of the partitions
    it gives up, the second restores them. Each key is then answered by the one member
    that owns its partition, and every model ends as one daemon alone would leave it."""
    topic, _ = topics(broker)
    messages = tenant_messages(3000, seed=3)
    state, reference_state = f"s-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    reference = Keyed(broker, topic, f"g-{uuid.uuid4().hex[:8]}", reference_state, tmp_path)
    first = Keyed(broker, topic, group, state, tmp_path, "--max-models", "4")
    produce(broker, topic, messages[:1000])
    first.wait(lambda: first.learned() >= 1000, "the first thousand learned")
    second = Keyed(broker, topic, group, state, tmp_path, "--max-models", "4")
    second.wait(lambda: second.metric("streamlearn_ready") == 1.0, "the second member ready")
    for start in range(1000, 3000, 500):
        produce(broker, topic, messages[start : start + 500])
    second.until(lambda: learned(broker, state) >= 3000, "every example learned")
    assert second.learned() > 0 and first.learned() > 1000
    assert "left to their next owner" in first.log_path.read_text()  # the handover
    for tenant in range(KEYS):
        codes = sorted(m.predict(f"tenant-{tenant}", QUESTION)[0] for m in (first, second))
        assert codes == [200, 404], tenant
    ours = run_to_end(first, broker, state, 3000)
    ours = run_to_end(second, broker, state, 3000)
    assert sum(record.examples for record in ours.values()) == 3000
    same(ours, run_to_end(reference, broker, reference_state, 3000))
