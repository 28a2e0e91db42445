"""The daemon and its HTTP API's live model, in one process: what a reader sees while the
daemon learns, and examples posted to learn."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest
from memory_source import MemorySource
from test_daemon import SETTINGS, decode, messages

from streamlearn.config import LearnerSpec, ModelSpec
from streamlearn.daemon import Daemon
from streamlearn.http.live import ClosedError, LiveModel
from streamlearn.parse.messages import MessageDecoder
from streamlearn.sources.base import MessageBatch

SPEC = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1"})
PROBE = (np.array([0, 3]), np.array([0, 2, 5], dtype=np.int32), np.array([1.0, -0.5, 2.0]))
#: publish at every turn a reader wants it (the default waits 0.05 s between copies)
EVERY_TURN = dataclasses.replace(SETTINGS, publish_interval=0.0, decode_ahead=False)


class SlowSource(MemorySource):
    """Polls that take a millisecond (as a network would), so that a reader thread runs
    while the daemon learns."""

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        time.sleep(0.002)
        return super().poll(timeout, max_messages)


def test_a_reader_only_ever_sees_the_model_between_two_batches() -> None:
    values = messages(150, 4, seed=11)
    # the model after each batch, as a daemon without readers learns them one by one
    reference = Daemon(SPEC, MemorySource({0: values}), decode=decode, settings=EVERY_TURN)
    reference.restore()
    after_batch = {0: float(reference.learner.decision_function(PROBE)[0])}
    while not reference.source.exhausted():
        reference.process(reference.source.poll(0.0, 1000))
        after_batch[reference.version] = float(reference.learner.decision_function(PROBE)[0])

    live = LiveModel()
    daemon = Daemon(SPEC, SlowSource({0: values}), decode=decode, settings=EVERY_TURN,
                    live=live)  # fmt: skip
    seen: list[tuple[int, float]] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            published = live.published()
            if published is not None:
                (answer,) = published.predictor.answer(PROBE)
                seen.append((published.version, answer["score"]))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        daemon.run()
    finally:
        done.set()
        reader.join(10)
    versions = {version for version, _ in seen}
    assert len(versions) >= 3  # the reader saw the model move, batch by batch
    for version, score in seen:
        assert score == pytest.approx(after_batch[version], rel=1e-12, abs=1e-12)


def test_posted_examples_are_learned_in_order_with_the_stream() -> None:
    live = LiveModel()
    values = messages(20, 3, seed=2)
    daemon = Daemon(SPEC, MemorySource({0: values}), decode=decode, settings=EVERY_TURN,
                    live=live)  # fmt: skip
    daemon.restore()
    daemon.process(daemon.source.poll(0.0, 1000))
    posted_rows = MessageDecoder().decode_svmlight(b"+1 1:1 2:0.5\n-1 3:2\n")
    future = live.post(posted_rows)
    assert not future.done()
    daemon.run()  # learns what was posted at its first turn, then the rest of the stream
    learned = future.result(timeout=5)
    assert learned.learned == 2 and learned.rejected == []
    assert daemon.stream_examples == 20 * 3 + 2

    # the same examples in the same order, without the API
    alone = Daemon(SPEC, MemorySource({0: values}), decode=decode, settings=EVERY_TURN)
    alone.restore()
    alone.process(alone.source.poll(0.0, 1000))
    batch = alone.learner.admit(posted_rows, SETTINGS.limits)[0]
    assert SETTINGS.replay is not None
    alone.stream_examples = alone.learner.learn_on_schedule(
        batch, SETTINGS.replay, alone.stream_examples
    )
    while not alone.source.exhausted():
        alone.process(alone.source.poll(0.0, 1000))
    assert np.array_equal(alone.learner.coef_, daemon.learner.coef_)
    with pytest.raises(ClosedError):  # the daemon has stopped
        live.post(posted_rows)


def test_examples_the_model_refuses_are_reported_and_counted() -> None:
    live = LiveModel()
    spec = ModelSpec(SPEC, one_vs_rest=True)
    settings = dataclasses.replace(EVERY_TURN, max_labels=2)
    daemon = Daemon(spec, MemorySource({0: []}), decode=decode, settings=settings, live=live)
    daemon.restore()
    future = live.post(MessageDecoder().decode_svmlight(b"1 1:1\n2 2:1\n3 3:1\n"))
    daemon.run()
    learned = future.result(timeout=5)
    assert learned.learned == 2
    assert [(r.line, r.reason) for r in learned.rejected] == [(3, "too many labels")]
    published = live.published()
    assert published is not None and published.version == learned.version
    assert [a["label"] for a in published.predictor.answer(PROBE)] != []


def test_examples_posted_under_delta_auto_are_learned_at_once() -> None:
    """With delta='auto' the first examples are learned under a provisional Delta: a post
    says none is held, and answers come from the model that learned them."""
    live = LiveModel()
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05})  # delta auto
    daemon = Daemon(spec, MemorySource({0: []}), decode=decode, settings=EVERY_TURN, live=live)
    daemon.restore()
    future = live.post(MessageDecoder().decode_svmlight(b"+1 1:1 2:0.5\n-1 3:2\n"))
    daemon.run()
    learned = future.result(timeout=5)
    assert (learned.learned, learned.held) == (2, 0)
    published = live.published()
    assert published is not None
    assert [a["score"] for a in published.predictor.answer(PROBE)] != [0.0]
