"""``streamlearn serve --one-vs-rest`` as a real process on a real Kafka-compatible broker
(Tansu): kill -9 and restarts leave the bank the uninterrupted run's, bit for bit, and
predictions of a bank reach their topic as JSON, keyed like their message."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from serve_process import Serve, latest, learned, read_topic
from services import Tansu

from streamlearn.learn import ModelBank, model_from_state
from streamlearn.learn.state import unpacked_weights

pytestmark = pytest.mark.kafka

YEAST = Path(__file__).resolve().parents[3] / "shared" / "data" / "yeast" / "yeast.all"
BANK_OPTIONS = ("--one-vs-rest", "--delta", "5")


def yeast_messages(lines_per_message: int, repeats: int) -> list[bytes]:
    """yeast's label-set lines (14 labels), ``repeats`` times over, a few per message."""
    if not YEAST.exists():
        pytest.skip(f"the yeast data set is not at {YEAST} (see ../shared/datasets)")
    lines = [line for line in YEAST.read_bytes().splitlines() if line.strip()] * repeats
    return [
        b"\n".join(lines[i : i + lines_per_message]) + b"\n"
        for i in range(0, len(lines), lines_per_message)
    ]


def bank_of(payload: dict[str, Any]) -> ModelBank:
    model = model_from_state(payload["learner"])
    assert isinstance(model, ModelBank)
    return model


def finish(serve: Serve, total: int) -> dict[str, Any]:
    """The last checkpoint of ``serve`` once it has learned ``total`` examples and stopped."""
    serve.wait_learned(total)
    assert serve.stop() == 0, serve.log_tail()
    payload = latest(serve.directory)
    assert payload is not None
    return payload


def run_to_end(
    broker: Tansu, topic: str, directory: Path, total: int, *extra: str
) -> dict[str, Any]:
    return finish(Serve(broker, topic, directory, *BANK_OPTIONS, *extra), total)


@pytest.mark.slow
def test_kill_9_and_restarts_give_the_uninterrupted_bank(broker: Tansu, tmp_path: Path) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    values = yeast_messages(1, repeats=2)  # 4834 examples, one a message
    broker.produce(topic, values)
    total = len(values)
    # a poll takes up to 1000 messages: a checkpoint after each, the last (834) included
    extra = ("--checkpoint-every", "400", "--checkpoint-min-interval", "0", "--replay-every", "500")

    # the uninterrupted run, in a group of its own, alongside the interrupted ones
    whole = Serve(broker, topic, tmp_path / "whole", *BANK_OPTIONS, *extra)

    crashed = tmp_path / "crashed"
    for _ in range(2):
        before = learned(crashed)
        serve = Serve(broker, topic, crashed, *BANK_OPTIONS, *extra)
        serve.wait(lambda b=before: learned(crashed) > b, "a new checkpoint")
        assert learned(crashed) < total, "the daemon finished before it could be killed"
        serve.kill()
    final = run_to_end(broker, topic, crashed, total, *extra)
    reference = finish(whole, total)

    assert final["positions"] == reference["positions"] == {"0": len(values)}
    ours, theirs = bank_of(final), bank_of(reference)
    assert ours.n_labels == 14
    a, b = ours.state_dict(), theirs.state_dict()
    for key in ("label_values", "weights", "scalars", "stats", "progressive"):
        assert np.array_equal(unpacked(a, key), unpacked(b, key)), key
    assert ours.summary() == theirs.summary()


def test_a_bank_learns_and_predicts_onto_a_topic(broker: Tansu, tmp_path: Path) -> None:
    topic, predictions = (f"{n}-{uuid.uuid4().hex[:8]}" for n in ("t", "p"))
    for name in (topic, predictions):
        broker.create_topic(name, 1)
    values = yeast_messages(10, repeats=1)[:100]  # 1000 examples
    broker.produce(topic, values)
    directory = tmp_path / "pred"
    serve = Serve(broker, topic, directory, *BANK_OPTIONS, "--predictions-topic", predictions,
                  "--checkpoint-interval", "0.2s")  # fmt: skip
    serve.wait_learned(1000)
    features = [1, 5, 17]
    broker.produce(topic, [b" ".join(b"%d:0.1" % (j + 1) for j in features) + b"\n"], key=b"ask-1")
    example = {"indices": features, "values": [0.1] * 3, "labels": [1, 2]}
    asked = {"indices": features, "values": [0.1] * 3}
    broker.produce(
        topic,
        [msgpack.packb({"examples": [example, asked]})],
        key=b"ask-2",
        headers={"content-type": b"application/msgpack"},
    )
    serve.wait_learned(1001)
    assert serve.stop() == 0
    payload = latest(directory)
    assert payload is not None and payload["positions"] == {"0": 102}

    answers = read_topic(broker, predictions, 2)
    assert [r.key for r in answers] == [b"ask-1", b"ask-2"]
    bank = bank_of(payload)
    labels = sorted(int(v) for v in bank.labels_.tolist())
    for record in answers:
        answer = json.loads(record.value)
        ranked = [label for label, _ in answer["ranking"]]
        assert sorted(ranked) == labels
        assert answer["label"] == ranked[0]
        scores = [score for _, score in answer["ranking"]]
        assert scores == sorted(scores, reverse=True) and answer["score"] == scores[0]
        assert answer["labels"] == [label for label, score in answer["ranking"] if score > 0]


def unpacked(state: dict[str, Any], key: str) -> Any:
    """``state[key]``, with the weights as one array (a state may store their nonzeros)."""
    return unpacked_weights(state[key]) if key == "weights" else state[key]
