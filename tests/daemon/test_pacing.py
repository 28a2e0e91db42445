"""Ingestion first: without a count-based schedule the daemon replays only in the time
that learning the stream leaves (``replay_share`` while behind, none while the lag
grows), and all of its idle time once caught up."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory_source import MemorySource
from test_daemon import decode, messages

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon, DaemonSettings
from streamlearn.sources.base import MessageBatch, Positions


class Replays:
    """An observer that counts replay passes, and those while the source still had
    messages (ignoring everything else)."""

    def __init__(self, source: MemorySource) -> None:
        self.source = source
        self.passes = 0
        self.during_stream = 0

    def observe_replay(self, seconds: float) -> None:
        self.passes += 1
        self.during_stream += not self.source.exhausted()

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def run(source: MemorySource, share: float, idle: bool = False) -> tuple[Daemon, Replays]:
    ticks = itertools.count()
    replays = Replays(source)
    settings = DaemonSettings(
        replay_share=share, idle_replay=idle, checkpoint_every=10**9, checkpoint_interval=1e9
    )
    daemon = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.01, "delta": "0.5"}), source, decode=decode,
        settings=settings, observer=replays, clock=lambda: next(ticks) * 0.05,
    )  # fmt: skip
    daemon.run()
    return daemon, replays


def test_behind_the_stream_it_replays_a_share_of_the_time() -> None:
    values = messages(60, 5, seed=1)
    daemon, replays = run(MemorySource({0: values}), share=0.3)
    assert daemon.stream_examples == 300
    assert replays.passes > 0


def test_without_a_share_it_only_learns() -> None:
    daemon, replays = run(MemorySource({0: messages(60, 5, seed=1)}), share=0.0)
    assert daemon.stream_examples == 300 and replays.passes == 0
    assert daemon.learner.summary()["passes"] == 0


class Flooding(MemorySource):
    """A source whose backlog grows at every poll, as under an input faster than the
    daemon: its lag counts messages produced beyond those polled."""

    def __init__(self, values: list[bytes]) -> None:
        super().__init__({0: values}, per_poll=2)
        self.polls = 0

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        self.polls += 1
        return super().poll(timeout, max_messages)

    def lag(self) -> Positions:
        return {0: 10 * self.polls}


def test_no_replay_while_the_lag_grows() -> None:
    daemon, replays = run(Flooding(messages(60, 5, seed=2)), share=0.9)
    assert daemon.stream_examples == 300 and replays.passes == 0


class Pausing(MemorySource):
    """A source that pauses (polls with nothing) for a while before ending."""

    def __init__(self, values: list[bytes], pause: int) -> None:
        super().__init__({0: values})
        self.pause = pause

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        batch = super().poll(timeout, max_messages)
        if not len(batch) and self.pause:
            self.pause -= 1
        return batch

    def exhausted(self) -> bool:
        return super().exhausted() and self.pause == 0


def test_once_caught_up_idle_time_replays_until_converged() -> None:
    daemon, replays = run(Pausing(messages(40, 5, seed=3), pause=200), share=0.0, idle=True)
    summary = daemon.learner.summary()
    assert summary["converged"] and summary["certified_gap"] <= 0.01
    assert 0 < replays.passes == summary["passes"] < 200


class Trickling(MemorySource):
    """A steady stream slower than the daemon and faster than its poll timeout: a poll
    that waits always gets a message, one that does not gets one every third time."""

    def __init__(self, values: list[bytes]) -> None:
        super().__init__({0: values}, per_poll=1)
        self.polls = 0

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        self.polls += 1
        if timeout > 0 or self.polls % 3 == 0:
            return super().poll(timeout, max_messages)
        return MessageBatch.from_messages([])

    def lag(self) -> Positions:
        return {0: 0}  # each message arrives when polled: none waits


def test_the_gaps_of_a_steady_stream_are_idle_time() -> None:
    daemon, replays = run(Trickling(messages(150, 2, seed=4)), share=0.0, idle=True)
    assert daemon.stream_examples == 300
    assert replays.passes >= 20
    assert daemon.learner.summary()["certified_gap"] <= 0.01


class Fetching(MemorySource):
    """A backlog behind a fetch that is not always back: every other poll is empty
    although messages wait (as kafka-python's is while its fetch is under way)."""

    def __init__(self, values: list[bytes]) -> None:
        super().__init__({0: values}, per_poll=1)
        self.polls = 0

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        self.polls += 1
        if self.polls % 2:
            return MessageBatch.from_messages([])
        return super().poll(timeout, max_messages)


def test_an_empty_poll_while_messages_wait_is_not_idle_time() -> None:
    source = Fetching(messages(100, 3, seed=5))
    daemon, replays = run(source, share=0.0, idle=True)
    assert daemon.stream_examples == 300 and replays.during_stream == 0
    assert source.polls >= 200
    assert replays.passes == 1 and daemon.learner.converged  # at the end of the input


def test_without_idle_replay_the_end_of_the_input_is_not_replayed() -> None:
    daemon, replays = run(MemorySource({0: messages(100, 3, seed=5)}), share=0.0)
    assert replays.passes == 0 and daemon.learner.summary()["passes"] == 0


class Late(MemorySource):
    """A burst that arrives after ``pause`` empty polls with nothing waiting."""

    def __init__(self, values: list[bytes], pause: int) -> None:
        super().__init__({0: values}, per_poll=2)
        self.pause = pause

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        if self.pause:
            self.pause -= 1
            return MessageBatch.from_messages([])
        return super().poll(timeout, max_messages)

    def lag(self) -> Positions:
        return {0: 0} if self.pause else super().lag()


def test_idle_time_is_not_banked_for_the_next_burst() -> None:
    counts = []
    for pause in (0, 400):
        daemon, replays = run(Late(messages(60, 5, seed=6), pause), share=0.3)
        assert daemon.stream_examples == 300
        counts.append(replays.passes)
    assert counts[0] == counts[1]


class PauseRecordingStore(CheckpointStore):
    """A checkpoint store that notes, at each write, whether its source was pausing (every
    message learned, the end not come) and whether the learner had converged."""

    def __init__(self, directory: Path, source: Pausing) -> None:
        super().__init__(directory, keep=1000)
        self.source = source
        self.daemon: Daemon | None = None
        self.writes: list[tuple[bool, bool]] = []

    def write(self, payload: Mapping[str, Any], created: float | None = None) -> Path:
        assert self.daemon is not None
        pausing = MemorySource.exhausted(self.source) and self.source.pause > 0
        self.writes.append((pausing, bool(self.daemon.learner.summary()["converged"])))
        return super().write(payload, created)


def test_the_replays_after_the_last_example_are_checkpointed_while_the_model_changes(
    tmp_path: Path,
) -> None:
    """A checkpoint is due every interval while the model changes, not only after new
    examples: the idle replays that converge the window once the stream pauses are
    written then (a restart would otherwise start from the unreplayed window), and once
    the model stops changing no more checkpoints come."""
    source = Pausing(messages(40, 5, seed=3), pause=400)
    store = PauseRecordingStore(tmp_path, source)
    ticks = itertools.count()
    settings = DaemonSettings(replay_share=0.0, idle_replay=True, checkpoint_interval=0.5)
    daemon = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.01, "delta": "0.5"}), source, decode=decode,
        settings=settings, store=store, clock=lambda: next(ticks) * 0.05,
    )  # fmt: skip
    store.daemon = daemon
    daemon.run()
    during_pause = [converged for pausing, converged in store.writes if pausing]
    assert during_pause and during_pause[-1], store.writes
    assert len(during_pause) < 20  # none once the converged model was written
