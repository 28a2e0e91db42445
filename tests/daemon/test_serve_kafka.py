"""``streamlearn serve`` as a real process on a real Kafka-compatible broker (Tansu):
kill -9 and restarts change nothing, nothing is lost or learned twice, predictions and
dead letters reach their topics, and offsets are committed after checkpoints."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from serve_process import Serve, latest, learned, read_topic
from services import Tansu

from streamlearn.learn import learner_from_state
from streamlearn.parse.svmlight import SvmlightParser

#: the shared data folder beside the repository (../shared/data)
ADULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"

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


def finish(serve: Serve, total: int) -> dict[str, Any]:
    """The last checkpoint of ``serve`` once it has learned ``total`` examples and stopped."""
    serve.wait_learned(total)
    assert serve.stop() == 0, serve.log_tail()
    payload = latest(serve.directory)
    assert payload is not None
    return payload


def run_to_end(broker: Tansu, topic: str, directory: Path, total: int) -> dict[str, Any]:
    return finish(Serve(broker, topic, directory), total)


def test_kill_9_and_restarts_give_the_uninterrupted_model(broker: Tansu, tmp_path: Path) -> None:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    # a poll takes up to 1000 messages: 4000 examples between checkpoint chances
    broker.produce(topic, svmlight_messages(5000, 4, seed=1))
    total = 20_000

    # the uninterrupted run, in a group of its own, alongside the interrupted ones
    whole = Serve(broker, topic, tmp_path / "whole")

    crashed = tmp_path / "crashed"
    kills = 0
    for _ in range(3):
        before = learned(crashed)
        serve = Serve(broker, topic, crashed)
        serve.wait(lambda b=before: learned(crashed) > b, "a new checkpoint")
        if learned(crashed) == total:
            assert serve.stop() == 0
            break
        serve.kill()
        kills += 1
        if kills == 2:
            break
    assert kills == 2, "the daemon finished before it could be killed mid-stream twice"
    final = run_to_end(broker, topic, crashed, total)
    reference = finish(whole, total)

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
    serve.wait(lambda: learned(directory) > 0, "a first checkpoint")
    serve.kill()
    final = run_to_end(broker, topic, directory, produced)
    assert final["positions"] == ends == {"0": 300, "1": 400, "2": 500}
    assert final["job"]["stream_examples"] == produced


def test_predictions_dead_letters_and_commits(broker: Tansu, tmp_path: Path) -> None:
    topic, predictions, dead = (f"{n}-{uuid.uuid4().hex[:8]}" for n in ("t", "p", "d"))
    for name in (topic, predictions, dead):
        broker.create_topic(name, 1)
    broker.produce(topic, svmlight_messages(50, 10, seed=3))
    broker.produce(topic, [b"1:0.5 3:1.0\n2:-1.0\n"], key=b"ask-1")
    broker.produce(topic, [b"\xff\xfe garbage\n"], key=b"bad-1")
    directory = tmp_path / "pred"
    serve = Serve(broker, topic, directory, "--predictions-topic", predictions,
                  "--dead-letter-topic", dead, "--checkpoint-interval", "1s")  # fmt: skip
    serve.wait_learned(500)
    assert serve.stop() == 0

    answers = read_topic(broker, predictions, 2)
    assert [r.key for r in answers] == [b"ask-1", b"ask-1"]
    assert all(r.headers == [("content-type", b"text/plain; charset=utf-8")] for r in answers)
    for record in answers:
        score, label = record.value.split()
        assert int(label) == (1 if float(score) > 0 else -1)
    assert [r.value for r in read_topic(broker, dead, 1)] == [b"\xff\xfe garbage\n"]
    payload = latest(directory)
    assert payload is not None and payload["positions"] == {"0": 52}


def test_a_backlog_is_answered_by_the_model_that_learned_it(broker: Tansu, tmp_path: Path) -> None:
    """Questions behind a backlog polled at once are answered by the model that learned
    everything before them, not by the model from before the poll."""
    if not (ADULT / "a9a.train").exists():
        pytest.skip(f"shared data set missing: {ADULT / 'a9a.train'}")
    topic, predictions = (f"{n}-{uuid.uuid4().hex[:8]}" for n in ("t", "p"))
    for name in (topic, predictions):
        broker.create_topic(name, 1)
    lines = (ADULT / "a9a.train").read_bytes().splitlines(keepends=True)
    asks = [line.split(b" ", 1)[1] for line in (ADULT / "a9a.test").read_bytes().splitlines()[:3]]
    broker.produce(topic, lines)
    broker.produce(topic, [ask + b"\n" for ask in asks], key=b"ask")
    directory = tmp_path / "backlog"
    serve = Serve(broker, topic, directory, "--predictions-topic", predictions)
    answers = read_topic(broker, predictions, 3)  # the last three messages: all learned
    assert serve.stop() == 0, serve.log_tail()
    payload = latest(directory)
    assert payload is not None and payload["positions"] == {"0": len(lines) + 3}
    assert payload["job"]["stream_examples"] == len(lines)
    model = learner_from_state(payload["learner"])
    assert model.summary()["examples"] == len(lines)
    rows = SvmlightParser().feed(b"".join(ask + b"\n" for ask in asks))
    expected = model.decision_function((rows.indptr, rows.indices, rows.values))
    got = [float(r.value.split()[0]) for r in answers]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert np.all(expected != 0.0)


def test_the_daemon_survives_a_paused_broker(broker: Tansu, tmp_path: Path) -> None:
    """A frozen broker keeps its connections open and answers nothing (its requests time
    out only after 30 s): /readyz says so within seconds (a heartbeat unanswered for
    3 s), and is 200 again once the broker answers; the daemon goes on learning."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    broker.produce(topic, svmlight_messages(100, 5, seed=4))
    directory = tmp_path / "pause"
    serve = Serve(broker, topic, directory, "--checkpoint-interval", "1s")

    def ready() -> bool:
        return serve.answers("/readyz")

    serve.wait(ready, "ready")
    broker.pause()
    try:
        frozen = time.monotonic()
        serve.wait(lambda: not ready(), "not ready while the broker is paused", timeout=20)
        took = time.monotonic() - frozen
        assert serve.process.poll() is None
    finally:
        broker.resume()
    print(f"/readyz false {took:.1f} s after the broker froze")
    assert took < 10.0
    serve.wait(ready, "ready again")
    broker.produce(topic, svmlight_messages(100, 5, seed=5))
    serve.wait_learned(1000)
    assert serve.stop() == 0
