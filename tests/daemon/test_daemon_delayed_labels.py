"""Delayed labels in one process: examples kept by id (as POST /predict keeps them) and
labels posted by id, learned by the daemon as posted examples are; checkpoints hold the
kept examples, and one written without them still loads."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
from memory_source import MemorySource
from test_daemon import SETTINGS, decode

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import LearnerSpec, ModelSpec
from streamlearn.daemon import Daemon
from streamlearn.http.live import LiveModel
from streamlearn.http.pending import SharedPending
from streamlearn.parse.messages import MessageDecoder
from streamlearn.pending import PendingExamples

SPEC = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1"})
EVERY_TURN = dataclasses.replace(SETTINGS, publish_interval=0.0, decode_ahead=False)
BODY = b"+1 1:1 2:0.5\n-1 3:2\n+1 1:0.5 4:1\n"


class Progressive:
    """An observer that keeps the progressive counts (the rest of the daemon's reports
    are ignored)."""

    def __init__(self) -> None:
        self.correct = self.mistakes = 0

    def count_progressive(self, correct: int, mistakes: int) -> None:
        self.correct += correct
        self.mistakes += mistakes

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def live_daemon(
    store: CheckpointStore | None = None, spec: Any = SPEC, observer: Any = None
) -> tuple[Daemon, LiveModel]:
    live = LiveModel(pending=SharedPending(PendingExamples(100, 3600.0)))
    daemon = Daemon(spec, MemorySource({0: []}), decode=decode, settings=EVERY_TURN,
                    live=live, store=store, observer=observer)  # fmt: skip
    daemon.restore()
    return daemon, live


def keep(live: LiveModel, ids: list[str | None], body: bytes = BODY) -> None:
    """What POST /predict does with examples that have an id."""
    rows = MessageDecoder().decode_svmlight(body)
    features = (rows.indptr, rows.indices, rows.values)
    published = live.published()
    assert published is not None
    assert live.pending is not None
    assert (
        live.pending.add(ids, features, published.predictor.predicted_labels(features), time.time())
        == []
    )


def test_labels_by_id_learn_the_kept_examples_as_posting_them_would() -> None:
    observer = Progressive()
    daemon, live = live_daemon(observer=observer)
    daemon._publish()
    keep(live, ["a", "b", "c"])
    # labels in another order than the predictions: learned in the order they come
    future = live.post(MessageDecoder().decode_svmlight(b""), None,
                       [(1, "c", [1.0]), (2, "a", [1.0]), (3, "b", [-1.0])])  # fmt: skip
    daemon.run()
    learned = future.result(timeout=5)
    assert (learned.learned, learned.rejected) == (3, [])
    assert daemon.stream_examples == 3
    # the empty model named -1 for every example: right on the one negative
    assert (observer.correct, observer.mistakes) == (1, 2)

    alone, alone_live = live_daemon()
    rows = MessageDecoder().decode_svmlight(b"+1 1:0.5 4:1\n+1 1:1 2:0.5\n-1 3:2\n")
    posted = alone_live.post(rows)
    alone.run()
    assert posted.result(timeout=5).learned == 3
    weights = daemon.learner.decision_function(np.eye(4))
    assert np.array_equal(weights, alone.learner.decision_function(np.eye(4)))


def test_refused_labels_say_why_and_a_bad_label_leaves_its_example_waiting() -> None:
    daemon, live = live_daemon()
    daemon._publish()
    keep(live, ["a", "b", None])
    first = live.post(MessageDecoder().decode_svmlight(b""), None,
                      [(1, "a", [3.0]), (2, "b", [-1.0]), (3, "zz", [1.0])])  # fmt: skip
    second = live.post(MessageDecoder().decode_svmlight(b""), None,
                       [(1, "a", [1.0]), (2, "b", [1.0]), (3, "a", [1.0])])  # fmt: skip
    daemon.run()
    one, two = first.result(timeout=5), second.result(timeout=5)
    assert one.learned == 1
    assert [(r.line, r.reason) for r in one.rejected] == [(1, "bad label"), (3, "unknown id")]
    assert two.learned == 1
    assert [(r.line, r.reason, r.text) for r in two.rejected] == [
        (2, "already labelled", "b"), (3, "already labelled", "a"),
    ]  # fmt: skip
    assert live.pending is not None
    assert live.pending.counts()["joined"] == 2


def test_checkpoints_hold_the_kept_examples_and_older_ones_still_load(tmp_path: Path) -> None:
    # a checkpoint of a daemon that kept nothing by id (as one written before ids were)
    plain = Daemon(SPEC, MemorySource({0: []}), decode=decode, settings=EVERY_TURN,
                   store=CheckpointStore(tmp_path))  # fmt: skip
    plain.restore()
    plain.checkpoint()
    daemon, live = live_daemon(CheckpointStore(tmp_path))
    assert live.pending is not None and live.pending.counts()["examples"] == 0
    daemon._publish()
    keep(live, ["a", "b", "c"])
    assert daemon._checkpoint_due() is False  # the interval has not passed
    daemon.request_checkpoint()
    daemon.checkpoint()
    again, again_live = live_daemon(CheckpointStore(tmp_path))
    assert again_live.pending is not None
    assert again_live.pending.counts()["examples"] == 3
    future = again_live.post(MessageDecoder().decode_svmlight(b""), None,
                             [(1, "b", [-1.0]), (2, "a", [1.0])])  # fmt: skip
    again.run()
    assert future.result(timeout=5).learned == 2
    assert again_live.pending.counts()["examples"] == 1


def test_a_change_of_the_kept_examples_makes_a_checkpoint_due(tmp_path: Path) -> None:
    settings = dataclasses.replace(EVERY_TURN, checkpoint_interval=0.001)
    live = LiveModel(pending=SharedPending(PendingExamples(100, 3600.0)))
    daemon = Daemon(SPEC, MemorySource({0: []}), decode=decode, settings=settings,
                    live=live, store=CheckpointStore(tmp_path))  # fmt: skip
    daemon.restore()
    daemon._publish()
    daemon.checkpoint()
    assert not daemon._checkpoint_due()
    keep(live, ["a"])
    assert daemon._checkpoints.due(
        daemon._checkpoints.last + 1.0, daemon.stream_examples, daemon._state_version()
    )


def test_a_bank_takes_label_sets_by_id() -> None:
    spec = ModelSpec(SPEC, one_vs_rest=True)
    daemon, live = live_daemon(spec=spec)
    daemon._publish()
    keep(live, ["x", "y"], body=b"1 1:1\n2 2:1\n")
    future = live.post(MessageDecoder().decode_svmlight(b""), None,
                       [(1, "x", [1.0, 3.0]), (2, "y", [2.0])])  # fmt: skip
    daemon.run()
    assert future.result(timeout=5).learned == 2
    assert sorted(daemon.learner.predictor().labels) == [1, 2, 3]
