"""Delayed labels through ``--labels-topic`` on a real broker: unlabelled a9a.test
messages with a key are kept, the daemon is killed (-9) after a checkpoint and
restarted, then their labels arrive on the labels topic (key = the message's key) in
shuffled order: each learned exactly once, a second label refused."""

from __future__ import annotations

import random
import urllib.request
import uuid
from pathlib import Path

import pytest
from serve_process import Serve, latest
from services import Tansu

#: the shared data folder beside the repository (../shared/data)
ADULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"
EXAMPLES = 300

pytestmark = pytest.mark.kafka


def checkpoint_now(serve: Serve) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{serve.metrics_port}/checkpoint", method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202


def test_labels_on_their_topic_after_a_kill_are_each_learned_once(
    broker: Tansu, tmp_path: Path
) -> None:
    if not (ADULT / "a9a.test").exists():
        pytest.skip(f"shared data set missing: {ADULT / 'a9a.test'}")
    lines = (ADULT / "a9a.test").read_bytes().splitlines()[:EXAMPLES]
    topic, labels_topic = f"t-{uuid.uuid4().hex[:8]}", f"l-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    broker.create_topic(labels_topic, 1)
    truth = {}
    for i, line in enumerate(lines):
        label, features = line.split(b" ", 1)
        truth[b"a9a-%d" % i] = label
        broker.producer.send(topic, value=features + b"\n", key=b"a9a-%d" % i, partition=0)
    broker.producer.flush(timeout=30)
    options = ("--labels-topic", labels_topic, "--delta", "1")

    first = Serve(broker, topic, tmp_path / "ckpt", *options)
    first.wait(lambda: first.metric("streamlearn_pending_examples") == EXAMPLES,
               "the examples kept")  # fmt: skip
    checkpoint_now(first)
    first.wait(lambda: (latest(first.directory) or {}).get("positions") == {"0": EXAMPLES},
               "the checkpoint")  # fmt: skip
    payload = latest(first.directory)
    assert payload is not None and len(payload["pending"]["ids"]) == EXAMPLES
    first.kill()

    keys = list(truth)
    random.Random(39).shuffle(keys)
    for key in [*keys, keys[0]]:  # the last: a second label for an id
        broker.producer.send(labels_topic, value=truth[key], key=key, partition=0)
    broker.producer.flush(timeout=30)

    again = Serve(broker, topic, tmp_path / "ckpt", *options)
    again.wait(lambda: again.metric("streamlearn_pending_joined_total") == EXAMPLES,
               "the labels joined")  # fmt: skip
    again.wait(
        lambda: again.metric("streamlearn_pending_refused_labels_total",
                             reason="already_labelled") == 1,
        "the second label refused",
    )  # fmt: skip
    assert again.metric("streamlearn_pending_examples") == 0
    assert again.metric("streamlearn_examples_total", outcome="learned") == EXAMPLES
    assert again.metric("streamlearn_pending_refused_labels_total", reason="unknown_id") == 0
    assert again.stop() == 0, again.log_tail()
    payload = latest(again.directory)
    assert payload is not None
    assert payload["job"]["stream_examples"] == EXAMPLES
    assert payload["labels_positions"] == {"0": EXAMPLES + 1}
    assert payload["pending"]["counts"]["joined"] == EXAMPLES
