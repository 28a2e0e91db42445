"""StdinSource: whole lines from pipes and streams, positions in lines, seek, the end."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon, DaemonSettings
from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.parse.messages import MessageDecoder
from streamlearn.sources.base import Message, MessageBatch
from streamlearn.sources.stdin import LONGEST_KEPT, StdinSource


@pytest.fixture
def pipe() -> Iterator[tuple[io.BufferedReader, int]]:
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "rb")
    try:
        yield reader, write_fd
    finally:
        reader.close()
        with contextlib.suppress(OSError):
            os.close(write_fd)


def lines_of(messages: Iterable[Message]) -> list[bytes]:
    return [line for m in messages for line in m.value.splitlines()]


def drain(source: StdinSource, *, timeout: float = 5.0) -> list[Message]:
    out: list[Message] = []
    deadline = time.monotonic() + timeout
    while not source.exhausted() and time.monotonic() < deadline:
        out += source.poll(0.1, 1000)
    return out


def test_groups_lines_and_numbers_messages_by_first_line() -> None:
    data = b"".join(b"%d 1:1\n" % i for i in range(7))
    source = StdinSource(io.BytesIO(data), lines_per_message=3)
    messages = drain(source)
    assert [m.offset for m in messages] == [0, 3, 6]
    assert [m.value.count(b"\n") for m in messages] == [3, 3, 1]
    assert b"".join(m.value for m in messages) == data
    assert all(m.partition == 0 and m.key is None and m.headers == {} for m in messages)
    assert source.position() == {0: 7}
    assert source.exhausted()
    assert source.ready() and source.lag() == {}
    assert len(source.poll(0.0, 10)) == 0


def test_max_messages_bounds_each_poll_and_position_follows() -> None:
    data = b"".join(b"1 %d:1\n" % (i + 1) for i in range(10))
    source = StdinSource(io.BytesIO(data), lines_per_message=2)
    first = source.poll(1.0, 2)
    assert [m.offset for m in first] == [0, 2]
    assert source.position() == {0: 4}
    assert not source.exhausted()
    rest = drain(source)
    assert [m.offset for m in rest] == [4, 6, 8]
    assert source.position() == {0: 10}


def test_last_line_without_newline_is_a_line() -> None:
    source = StdinSource(io.BytesIO(b"1 1:1\n-1 2:1"), lines_per_message=10)
    messages = drain(source)
    assert [m.value for m in messages] == [b"1 1:1\n", b"-1 2:1"]
    assert source.position() == {0: 2}


def test_pipe_partial_lines_across_reads(pipe: tuple[io.BufferedReader, int]) -> None:
    reader, write_fd = pipe
    source = StdinSource(reader, lines_per_message=100)
    os.write(write_fd, b"1 1:1\n-1 2:")
    first = source.poll(2.0, 10)
    assert [m.value for m in first] == [b"1 1:1\n"]
    os.write(write_fd, b"0.5")
    assert len(source.poll(0.05, 10)) == 0  # the line has not ended: nothing yet
    os.write(write_fd, b"\n1 3:1\n")
    second = source.poll(2.0, 10)
    assert lines_of(second) == [b"-1 2:0.5", b"1 3:1"]
    assert second[0].offset == 1
    assert source.position() == {0: 3}
    os.close(write_fd)
    assert drain(source) == []
    assert source.exhausted()


def test_poll_waits_at_most_timeout_and_returns_data_as_it_comes(
    pipe: tuple[io.BufferedReader, int],
) -> None:
    reader, write_fd = pipe
    source = StdinSource(reader)
    started = time.monotonic()
    assert len(source.poll(0.2, 10)) == 0
    assert 0.15 <= time.monotonic() - started < 2.0
    timer = threading.Timer(0.1, os.write, (write_fd, b"1 1:1\n"))
    timer.start()
    started = time.monotonic()
    messages = source.poll(5.0, 10)
    timer.join()
    assert lines_of(messages) == [b"1 1:1"]
    assert time.monotonic() - started < 2.0  # returned when the line came, not at the timeout
    assert not source.exhausted()


def test_seek_skips_lines_and_keeps_stream_offsets() -> None:
    data = b"".join(b"1 %d:1\n" % (i + 1) for i in range(10))
    source = StdinSource(io.BytesIO(data), lines_per_message=4, read_size=7)
    source.seek({0: 5})
    assert source.position() == {0: 5}
    messages = drain(source)
    assert messages[0].offset == 5
    assert lines_of(messages) == data.splitlines()[5:]
    assert source.position() == {0: 10}


def test_seek_beyond_the_end_leaves_nothing_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A restart given a shorter input than the checkpoint's learns none of it: a
    warning says so rather than let the run end as if all were well."""
    source = StdinSource(io.BytesIO(b"1 1:1\n1 2:1\n"))
    source.seek({0: 5})
    with caplog.at_level(logging.WARNING, logger="streamlearn.source"):
        assert drain(source) == []
    assert source.exhausted() and source.position() == {0: 5}
    assert "standard input ended 3 lines before the position to resume from (line 5)" in (
        caplog.text
    )


def test_seek_after_reading_only_to_the_current_position() -> None:
    source = StdinSource(io.BytesIO(b"1 1:1\n1 2:1\n"), lines_per_message=1)
    source.poll(1.0, 1)
    source.seek({0: 1})  # where it is: fine
    source.seek({})
    with pytest.raises(StateError):
        source.seek({0: 0})
    source.commit({0: 1})  # a no-op
    source.close()


def test_bad_parameters() -> None:
    with pytest.raises(InvalidParameterError):
        StdinSource(io.BytesIO(b""), lines_per_message=0)
    with pytest.raises(InvalidParameterError):
        StdinSource(io.BytesIO(b"")).seek({0: -1})


def test_empty_input_is_exhausted() -> None:
    source = StdinSource(io.BytesIO(b""))
    assert len(source.poll(1.0, 10)) == 0
    assert source.exhausted() and source.position() == {0: 0}


def test_a_line_without_end_is_kept_bounded_and_still_counted_as_one_line() -> None:
    """Megabytes without a newline: at most LONGEST_KEPT bytes of them are held, and the
    line comes out cut to that (longer than the parser's longest line: rejected there
    as too long), the lines around it in place."""
    long = b"1 " + b"7" * (5 << 20)
    stream = io.BytesIO(b"+1 1:1\n" + long + b"\n-1 2:1\n" + long)
    source = StdinSource(stream, read_size=1 << 16)
    tails = []
    out: list[Message] = []
    while not source.exhausted():
        out += source.poll(0.0, 1000)
        tails.append(len(source._tail))
    assert max(tails) <= LONGEST_KEPT
    got = lines_of(out)
    assert got[0] == b"+1 1:1" and got[2] == b"-1 2:1"
    assert len(got) == 4
    assert len(got[1]) == len(got[3]) == LONGEST_KEPT
    assert got[1] == long[:LONGEST_KEPT]
    assert source.position() == {0: 4}


# -- a restart: skipping what the checkpoint holds ------------------------------------------


def numbered_lines(n: int, start: int = 0) -> bytes:
    return b"".join(b"%d 1:%d\n" % (i, i) for i in range(start, start + n))


@pytest.mark.parametrize("read_size", [1, 2, 3, 5, 8, 64])
@pytest.mark.parametrize("skip", [0, 1, 2, 6, 7, 8, 9, 12])
@pytest.mark.parametrize("last_newline", [True, False])
def test_seek_drops_exactly_the_lines_it_is_asked_to(
    read_size: int, skip: int, last_newline: bool
) -> None:
    data = numbered_lines(8)[: None if last_newline else -1]  # "7 1:7" may end without one
    source = StdinSource(io.BytesIO(data), lines_per_message=3, read_size=read_size)
    source.seek({0: skip})
    messages = drain(source)
    kept = data.split(b"\n")[:8][skip:]
    assert lines_of(messages) == kept
    offset = skip  # each message starts at the line after the previous one's last
    for message in messages:
        assert message.offset == offset
        offset += len(message.value.splitlines())
    assert source.position() == {0: max(skip, 8)} and source.exhausted()


def test_the_lines_still_to_skip_are_the_lag(pipe: tuple[io.BufferedReader, int]) -> None:
    """While a seek skips, the lines it still has to drop wait in the input: the daemon
    reads on rather than take a dry pipe for idle time."""
    reader, write_fd = pipe
    source = StdinSource(reader, lines_per_message=10)
    source.seek({0: 1000})
    assert source.lag() == {0: 1000}
    os.write(write_fd, numbered_lines(600))
    assert len(source.poll(0.1, 10)) == 0
    assert source.lag() == {0: 400} and source.position() == {0: 1000}
    os.write(write_fd, numbered_lines(450, start=600))
    assert [m.offset for m in source.poll(1.0, 10)][:1] == [1000]
    assert source.lag() == {}
    os.close(write_fd)
    drain(source)
    assert source.position() == {0: 1050}


class CountingObserver:
    """The daemon's observer, counting replay passes and examples learned."""

    def __init__(self) -> None:
        self.replays = 0
        self.learned = 0

    def observe_replay(self, seconds: float) -> None:
        self.replays += 1

    def count_examples(self, outcome: str, n: int) -> None:
        self.learned += n

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def random_lines(n: int, seed: int) -> bytes:
    """Lines of random labels: a window that replay does not make converge soon."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(n, 6))
    labels = rng.choice([-1, 1], size=n)
    return b"".join(
        b"%+d " % label + b" ".join(b"%d:%.4f" % (j + 1, v) for j, v in enumerate(row)) + b"\n"
        for label, row in zip(labels, rows, strict=True)
    )


def test_a_restart_on_a_pipe_skips_without_replaying_in_between(
    tmp_path: Path, pipe: tuple[io.BufferedReader, int]
) -> None:
    """A restart on standard input skips what its checkpoint holds. When the pipe runs
    dry for a moment meanwhile (its producer is slower than counting newlines), that is
    no idle time to replay in: before, every such moment took a replay pass, and with a
    window that did not converge the skip went at one pipe's worth a pass (about 1 MB/s),
    nothing learned for minutes."""
    learned, new = random_lines(3000, seed=1), random_lines(500, seed=2)
    spec = LearnerSpec.from_options("pdm", {"eps": 0.001, "delta": 0.01})
    settings = DaemonSettings(checkpoint_every=10**9, checkpoint_interval=1e9)

    def decode(messages: MessageBatch) -> tuple[Any, Any]:
        return MessageDecoder().decode_columns(messages.data, messages.spans)

    store = CheckpointStore(tmp_path)
    first = Daemon(spec, StdinSource(io.BytesIO(learned)), decode=decode, store=store,
                   settings=replace(settings, idle_replay=False))  # fmt: skip
    first.run()
    assert store.latest() is not None and not first.learner.converged

    reader, write_fd = pipe
    observer = CountingObserver()
    second = Daemon(spec, StdinSource(reader), decode=decode, store=store, settings=settings,
                    observer=observer)  # fmt: skip
    running = threading.Thread(target=second.run)
    running.start()
    try:
        os.write(write_fd, learned[: len(learned) // 2])
        time.sleep(0.6)  # a dry pipe, half the lines still to skip
        replays_while_skipping = observer.replays
        assert observer.learned == 0
        os.write(write_fd, learned[len(learned) // 2 :] + new)
        deadline = time.monotonic() + 30
        while observer.learned < 500 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        second.request_stop()  # before the end of the input: no replay to convergence
        running.join(timeout=30)
        os.close(write_fd)
    assert not running.is_alive()
    assert replays_while_skipping <= 1  # the first turn's, before the source's lag is known
    assert second.stream_examples == 3500 and observer.learned == 500
