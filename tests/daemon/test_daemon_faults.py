"""The daemon's logic around faults, in one process with sources and sinks in memory: what
a source skips as unreadable, messages without examples, partitions that make no
progress, and a stop whose deliveries do not come."""

from __future__ import annotations

import dataclasses
import itertools
import logging
from pathlib import Path
from typing import Any

import pytest
from memory_source import ListSink, MemorySource
from test_daemon import SETTINGS, decode, messages

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon
from streamlearn.errors import CheckpointError, StateError
from streamlearn.sources.base import MessageBatch, SkipsUnreadable, Unreadable

SPEC = LearnerSpec.from_options("pdm", {"eps": 0.1, "delta": "1"})


class Counting:
    """An observer that keeps what it is told of faults (the rest is ignored)."""

    def __init__(self) -> None:
        self.unreadable: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.stalled: list[int] = []

    def count_unreadable(self, reason: str, n: int) -> None:
        self.unreadable[reason] = self.unreadable.get(reason, 0) + n

    def count_skipped(self, reason: str, n: int) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def set_stalled(self, partitions: int) -> None:
        self.stalled.append(partitions)

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class Skipping(MemorySource):
    """Messages of one partition, with an unreadable batch at offsets ``gap`` (which the
    source skips, as Kafka's does, and reports)."""

    def __init__(self, values: list[bytes | None], gap: tuple[int, int]) -> None:
        super().__init__({0: [v or b"" for v in values]}, per_poll=2)
        self.values = values
        self.gap = gap
        self._found: list[Unreadable] = []

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        first, last = self.gap
        if self.next[0] == first:
            self.next[0] = last + 1
            self._found.append(Unreadable(0, first, last, "codec failed", "lz4: bad frame",
                                          b"raw batch", None))  # fmt: skip
            return MessageBatch.empty()
        stop = min(self.next[0] + 2, first if self.next[0] < first else len(self.values))
        out = MessageBatch.from_records(
            self.values[self.next[0] : stop], [None] * (stop - self.next[0]),
            [[] for _ in range(stop - self.next[0])], [0] * (stop - self.next[0]),
            list(range(self.next[0], stop)),
        )  # fmt: skip
        self.next[0] = stop
        return out

    def unreadable(self) -> list[Unreadable]:
        found, self._found = self._found, []
        return found


def test_what_a_source_skips_is_counted_dead_lettered_and_passed(tmp_path: Path) -> None:
    values: list[bytes | None] = list(messages(10, 2, seed=1))
    values[3] = None  # a tombstone
    values[4] = b""  # an empty value
    values.extend(messages(2, 2, seed=2))  # offsets 10, 11: to be skipped as unreadable
    source = Skipping(values, gap=(10, 11))
    assert isinstance(source, SkipsUnreadable)
    observer, dead = Counting(), ListSink()
    store = CheckpointStore(tmp_path / "ckpt")
    daemon = Daemon(SPEC, source, decode=decode, settings=SETTINGS, store=store,
                    dead_letters=dead, observer=observer)  # fmt: skip
    daemon.run()
    assert observer.unreadable == {"codec failed": 1}
    assert observer.skipped == {"null value": 1, "empty value": 1}
    assert dead.sent == [(None, b"raw batch")]
    assert dead.origins == [(0, 10)]
    assert dict(dead.headers[0])["streamlearn-offsets"] == b"10-11"
    assert daemon.stream_examples == 8 * 2
    latest = store.latest()
    assert latest is not None and latest[1].payload["positions"] == {"0": 12}


class Stuck(MemorySource):
    """A partition with messages waiting that nothing is fetched from for ``stuck`` polls."""

    def __init__(self, values: list[bytes], stuck: int) -> None:
        super().__init__({0: values}, per_poll=1)
        self.stuck = stuck
        self.polls = 0

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        self.polls += 1
        if 2 <= self.polls < 2 + self.stuck:
            return MessageBatch.empty()
        return super().poll(timeout, max_messages)


def test_a_partition_that_makes_no_progress_is_reported_and_not_ready() -> None:
    ticks = itertools.count()
    source = Stuck(messages(5, 2, seed=3), stuck=40)
    observer = Counting()
    settings = dataclasses.replace(SETTINGS, stall_timeout=3.0)
    daemon = Daemon(SPEC, source, decode=decode, settings=settings, observer=observer,
                    clock=lambda: next(ticks) * 0.05)  # fmt: skip
    readiness: list[bool] = []
    observer.set_ready = readiness.append  # type: ignore[method-assign]
    daemon.run()
    assert observer.stalled == [1, 0]  # on while stuck, off once it moved again
    assert False in readiness and readiness[-1] is True
    assert daemon.stream_examples == 10


class Undelivering(ListSink):
    """A sink whose messages never arrive (a broker that went away)."""

    def flush(self, timeout: float) -> int:
        return len(self.sent)


def test_a_stop_with_deliveries_on_their_way_keeps_the_last_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped while a prediction waits on a broker: no checkpoint past it (it would be
    lost), the run ends normally (settled), and says so; at the end of an input instead,
    the final checkpoint's failure is an error."""
    values = [*messages(3, 2, seed=4), b"1:0.5 2:1\n"]  # three labelled, one question

    class Stopping(MemorySource):
        """An endless source: a stop is asked for once every message was polled."""

        def poll(self, timeout: float, max_messages: int) -> MessageBatch:
            batch = super().poll(timeout, max_messages)
            if self.next[0] >= len(values):
                daemon.request_stop()
            return batch

        def exhausted(self) -> bool:
            return False

    source = Stopping({0: values}, per_poll=4)
    store = CheckpointStore(tmp_path / "stop")
    daemon = Daemon(SPEC, source, decode=decode, settings=SETTINGS, store=store,
                    sink=Undelivering())  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="streamlearn.daemon"):
        daemon.run()
    assert daemon.settled
    assert store.latest() is None  # nothing written past the question's message
    assert "the last checkpoint written stands" in caplog.text

    ended = Daemon(SPEC, MemorySource({0: values}), decode=decode, settings=SETTINGS,
                   store=CheckpointStore(tmp_path / "end"), sink=Undelivering())  # fmt: skip
    with pytest.raises(CheckpointError, match="final checkpoint failed"):
        ended.run()
    assert not ended.settled


def test_the_stall_timeout_is_checked() -> None:
    from streamlearn.daemon import DaemonSettings
    from streamlearn.errors import InvalidParameterError

    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(InvalidParameterError, match="--stall-timeout"):
            DaemonSettings(stall_timeout=bad)


def test_a_group_members_checkpoint_is_refused_by_a_daemon_of_one_model(tmp_path: Path) -> None:
    """A member's checkpoint holds the other members' shares in its model: a daemon that
    is no member could not take them out, and refuses to start from it."""
    store = CheckpointStore(tmp_path / "member")
    learner = SPEC.build()
    store.write({"kind": "streamlearn.daemon", "learner": learner.state_dict(), "positions": {},
                 "stream": "memory", "job": {"stream_examples": 0},
                 "group": {"member": "m", "sequence": 1}})  # fmt: skip
    source = MemorySource({0: messages(2, 2, seed=3)})
    daemon = Daemon(SPEC, source, decode=decode, settings=SETTINGS, store=store)
    with pytest.raises(StateError, match="learning group member"):
        daemon.restore()
