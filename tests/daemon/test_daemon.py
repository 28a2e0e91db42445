"""The serve loop's logic over an in-memory source: restart exactness, predictions,
rejections, checkpoint-then-commit."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from memory_source import ListSink, MemorySource

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon, DaemonSettings, FirstLines
from streamlearn.errors import CheckpointError, StateError
from streamlearn.parse.messages import MessageDecoder
from streamlearn.parse.svmlight import ParsedRows
from streamlearn.replay import ReplaySchedule
from streamlearn.sources.base import MessageBatch, Undelivered
from streamlearn.sources.headers import Header

SETTINGS = DaemonSettings(
    replay=ReplaySchedule(every=50, passes=1),
    checkpoint_every=10**9,
    checkpoint_interval=1e9,
    idle_replay=False,
)


def decode(messages: MessageBatch) -> tuple[ParsedRows, FirstLines]:
    return MessageDecoder().decode_columns(messages.data, messages.spans)


def messages(n: int, lines_per_message: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=8)
    out = []
    for _ in range(n):
        lines = []
        for _ in range(lines_per_message):
            x = rng.normal(size=8)
            label = "+1" if x @ direction + rng.normal(scale=0.3) > 0 else "-1"
            lines.append(label + " " + " ".join(f"{i + 1}:{v:.5f}" for i, v in enumerate(x)))
        out.append(("\n".join(lines) + "\n").encode())
    return out


def daemon(
    source: MemorySource, store: CheckpointStore | None, sink: ListSink | None = None
) -> Daemon:
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05})
    return Daemon(spec, source, decode=decode, settings=SETTINGS, store=store, sink=sink)


def test_a_crash_and_restart_gives_the_uninterrupted_model(tmp_path: Path) -> None:
    values = messages(120, 7, seed=1)  # 840 examples, replays every 50 cross messages
    whole = daemon(MemorySource({0: values}), None)
    whole.run()

    store = CheckpointStore(tmp_path / "ckpt", keep=2)
    source = MemorySource({0: values})
    first = daemon(source, store)
    first.restore()
    for _ in range(10):
        first.process(source.poll(0.0, 1000))
    first.checkpoint()
    assert source.committed == {0: 30}
    for _ in range(7):  # learned after the checkpoint, then lost in the crash
        first.process(source.poll(0.0, 1000))

    restarted = daemon(MemorySource({0: values}), store)
    restarted.run()
    assert restarted.stream_examples == whole.stream_examples == 840
    assert np.array_equal(restarted.learner.coef_, whole.learner.coef_)
    assert restarted.learner.intercept_ == whole.learner.intercept_
    assert restarted.learner.summary() == whole.learner.summary()


def noisy_messages(n: int, seed: int, flip: float) -> tuple[list[bytes], np.ndarray, np.ndarray]:
    """``n`` messages of 10 lines from a fixed direction with a share ``flip`` of the
    labels flipped; also the examples as arrays."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(10 * n, 6))
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 1.5, -1.0, 0.8]) + 0.3 > 0, 1, -1)
    y[rng.random(y.shape[0]) < flip] *= -1
    lines = [("+1 " if label > 0 else "-1 ") + " ".join(f"{i + 1}:{v:.5f}" for i, v in
             enumerate(x)) + "\n" for x, label in zip(X, y, strict=True)]  # fmt: skip
    return ["".join(lines[i : i + 10]).encode() for i in range(0, len(lines), 10)], X, y


def test_a_window_that_evicts_ends_with_a_good_model_and_restarts_exactly(
    tmp_path: Path,
) -> None:
    """``--replay-every 100 --idle-replay off`` over a 300-example window of noisy data:
    evicted examples used to leave the model one by one, which unbalanced the rest (the
    final model, 30 evictions after its last replay, had 0.63 accuracy). Those a replay
    saw leave when the next one starts now, and a checkpoint holds how many are left."""
    values, _, _ = noisy_messages(123, seed=1, flip=0.15)
    spec = LearnerSpec.from_options("pdm", {"eps": 0.01, "delta": "0.3", "buffer_size": 300})
    settings = replace(SETTINGS, replay=ReplaySchedule(every=100, passes=1))
    whole = Daemon(spec, MemorySource({0: values}), decode=decode, settings=settings)
    whole.run()
    _, X_test, y_test = noisy_messages(200, seed=2, flip=0.0)
    assert whole.learner.summary()["evictions_to_forget"] == 30
    assert np.mean(whole.learner.predict(X_test) == y_test) >= 0.88

    store = CheckpointStore(tmp_path / "ckpt", keep=2)
    source = MemorySource({0: values})
    first = Daemon(spec, source, decode=decode, settings=settings, store=store)
    first.restore()
    for _ in range(36):  # 1080 examples: 80 evicted since the replay at 1000
        first.process(source.poll(0.0, 1000))
    first.checkpoint()
    restarted = Daemon(spec, MemorySource({0: values}), decode=decode, settings=settings,
                       store=store)  # fmt: skip
    restarted.run()
    assert np.array_equal(restarted.learner.coef_, whole.learner.coef_)
    assert restarted.learner.summary() == whole.learner.summary()


def test_several_partitions_nothing_lost_nothing_twice(tmp_path: Path) -> None:
    parts = {p: messages(20 + 5 * p, 3, seed=p) for p in range(3)}
    store = CheckpointStore(tmp_path / "ckpt")
    source = MemorySource(parts)
    run = daemon(source, store)
    run.run()
    assert run.stream_examples == sum(len(v) for v in parts.values()) * 3
    latest = store.latest()
    assert latest is not None
    assert latest[1].payload["positions"] == {str(p): len(v) for p, v in parts.items()}
    assert source.committed == {p: len(v) for p, v in parts.items()}


def test_unlabelled_examples_are_predicted_and_bad_lines_counted() -> None:
    values = messages(30, 5, seed=3)
    values.append(b"1:0.5 2:-1.0\n3:2.0\n")  # two examples without labels
    values.append(b"+1 1:nan\n-1 2:1.0\n")  # one bad line, one good
    sink = ListSink()
    run = daemon(MemorySource({0: values}), None, sink)
    run.run()
    assert run.stream_examples == 30 * 5 + 1
    assert [key for key, _ in sink.sent] == [b"k30", b"k30"]
    for _, value in sink.sent:
        score, label = value.split()
        assert int(label) == (1 if float(score) > 0 else -1)


def test_a_prediction_comes_from_the_model_that_learned_every_example_before_it() -> None:
    lines = b"".join(messages(40, 5, seed=7)).splitlines()
    requests = [b"1:0.5 2:-1.0", b"3:2.0 4:1.0", b"1:-1.0 5:0.3"]
    stream: list[bytes] = []
    for i, line in enumerate(lines):
        stream.append(line)
        if i % 37 == 5:
            stream.append(requests[i % 3])
    one_a_poll = [line + b"\n" for line in stream]
    mixed = [b"\n".join(stream[i : i + 25]) + b"\n" for i in range(0, len(stream), 25)]
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1"})
    answers = []
    for values, per_poll in ((one_a_poll, 1), (mixed, 1000)):
        sink = ListSink()
        run = Daemon(spec, MemorySource({0: values}, per_poll=per_poll), decode=decode,
                     settings=SETTINGS, sink=sink)  # fmt: skip
        run.run()
        assert run.stream_examples == 200
        answers.append([value for _, value in sink.sent])
    assert len(answers[0]) == len(stream) - 200 == 6
    assert answers[1] == answers[0]  # one poll of everything answers as one line a poll


def test_mixed_formats_in_one_poll_keep_order_keys_and_dead_letters() -> None:
    import msgpack

    from streamlearn.sources.base import Message

    def pack(document: object) -> bytes:
        return bytes(msgpack.packb(document))

    svm: dict[str, bytes] = {}
    mp = {"content-type": b"application/msgpack"}
    polled = [
        Message(b"+1 1:1\n-1 2:1", b"a", svm, 0, 0),  # two lines, the last without newline
        Message(pack({"examples": [{"indices": [0], "values": [1.0], "label": 1},
                                   {"indices": [4], "values": [2.0]}]}), b"b", mp, 0, 1),
        Message(b"\xc1", b"c", mp, 0, 2),  # not msgpack: dead letter
        Message(b"3:1\n", b"d", {"content-type": b"text/svmlight; charset=utf-8"}, 0, 3),
        Message(b"+1 1:1", b"e", {"content-type": b"image/png"}, 0, 4),  # unknown type
        Message(b"", None, svm, 0, 5),  # no line at all
        Message(b"-1 5:1\n+1 1:nan\n", b"g", svm, 0, 6),  # one good line, one bad
    ]  # fmt: skip
    sink, dead = ListSink(), ListSink()
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05})
    source = MemorySource({0: []})
    run = Daemon(spec, source, decode=decode, settings=SETTINGS, sink=sink, dead_letters=dead)
    run.process(MessageBatch.from_messages(polled))
    assert run.stream_examples == 4  # two svmlight lines, one msgpack example, one more
    assert [key for key, _ in sink.sent] == [b"b", b"d"]  # predictions keyed like input
    assert dead.sent == [(b"c", b"\xc1"), (b"e", b"+1 1:1"), (b"g", b"-1 5:1\n+1 1:nan\n")]
    # learned in arrival order: as the same four examples in one svmlight message
    same = Daemon(spec, MemorySource({0: []}), decode=decode, settings=SETTINGS)
    same.process(MessageBatch.from_messages([Message(b"+1 1:1\n-1 2:1\n+1 1:1\n-1 5:1\n")]))
    assert np.array_equal(run.learner.coef_, same.learner.coef_)
    assert run.learner.summary() == same.learner.summary()


class RecordingStore(CheckpointStore):
    """A checkpoint store that also remembers what each checkpoint held."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, keep=2)
        self.held: list[tuple[dict[str, int], int]] = []

    def write(self, payload: Mapping[str, Any], created: float | None = None) -> Path:
        self.held.append((dict(payload["positions"]), int(payload["job"]["stream_examples"])))
        return super().write(payload, created)


def test_decoding_ahead_changes_nothing_but_the_threads(tmp_path: Path) -> None:
    values = messages(90, 4, seed=5)
    values.insert(40, b"1:0.5 2:-1.0\n")  # a prediction request
    values.insert(60, b"+1 1:nan\n-1 2:1.0\n")  # a dead letter
    runs = {}
    for ahead in (False, True):
        settings = DaemonSettings(
            replay=ReplaySchedule(every=50, passes=1), checkpoint_every=30,
            checkpoint_min_interval=0.0,
            checkpoint_interval=1e9, idle_replay=False, decode_ahead=ahead,
        )  # fmt: skip
        sink, dead = ListSink(), ListSink()
        store = RecordingStore(tmp_path / f"ahead-{ahead}")
        spec = LearnerSpec.from_options("pdm", {"eps": 0.05})
        run = Daemon(
            spec, MemorySource({0: values}, per_poll=4), decode=decode, settings=settings,
            store=store, sink=sink, dead_letters=dead,
        )  # fmt: skip
        run.run()
        runs[ahead] = (run, sink.sent, dead.sent, store.held)
    (plain, sent, dead_sent, held), (ahead_run, ahead_sent, ahead_dead, ahead_held) = (
        runs[False],
        runs[True],
    )
    assert ahead_run.stream_examples == plain.stream_examples == 90 * 4 + 1
    assert np.array_equal(ahead_run.learner.coef_, plain.learner.coef_)
    assert ahead_run.learner.summary() == plain.learner.summary()
    assert ahead_sent == sent and len(sent) == 1
    assert ahead_dead == dead_sent and len(dead_sent) == 1
    # every checkpoint holds the positions of what was learned, not of what was polled
    assert len(ahead_held) > 10
    for positions, examples in ahead_held:
        offset = positions["0"]
        learned_before = sum(1 for v in values[:offset] for line in v.splitlines()
                             if line[:1] in (b"+", b"-"))  # fmt: skip
        assert examples == learned_before - (1 if offset > 60 else 0)
    assert ahead_held[-1] == held[-1] == ({"0": len(values)}, 90 * 4 + 1)


class StoppingSource(MemorySource):
    """Asks the daemon to stop during its ``stop_at``-th poll."""

    def __init__(self, partitions: dict[int, list[bytes]], stop_at: int) -> None:
        super().__init__(partitions, per_poll=2)
        self.stop_at = stop_at
        self.polls = 0
        self.daemon: Daemon | None = None

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        self.polls += 1
        if self.polls == self.stop_at and self.daemon is not None:
            self.daemon.request_stop()
        return super().poll(timeout, max_messages)


def test_a_stop_learns_the_batch_in_flight_before_the_last_checkpoint(tmp_path: Path) -> None:
    values = messages(40, 3, seed=6)
    source = StoppingSource({0: values}, stop_at=5)
    store = RecordingStore(tmp_path / "ckpt")
    run = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.05}), source, decode=decode,
        settings=SETTINGS, store=store,
    )  # fmt: skip
    source.daemon = run
    run.run()
    assert source.polls == 5
    assert run.stream_examples == 5 * 2 * 3  # the fifth poll's batch was learned too
    assert store.held == [({"0": 10}, 30)]
    assert source.committed == {0: 10}


class CountingObserver:
    """Keeps the example counts the daemon reports."""

    def __init__(self) -> None:
        self.examples: dict[str, int] = {}
        self.rejected: dict[str, int] = {}

    def count_examples(self, outcome: str, n: int) -> None:
        self.examples[outcome] = self.examples.get(outcome, 0) + n

    def count_rejected(self, reason: str, n: int) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + n

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


def test_a_rejected_line_among_labelled_ones_is_counted_once() -> None:
    observer = CountingObserver()
    dead = ListSink()
    values = [b"+1 1:nan\n-1 2:1.0\n", b"+1 1:1\n2 2:1\n+1 3:inf\n"]
    run = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.05}), MemorySource({0: values}),
        decode=decode, settings=SETTINGS, dead_letters=dead, observer=observer,
    )  # fmt: skip
    run.run()
    assert observer.examples == {"learned": 2, "rejected": 3}
    assert observer.rejected == {"not a finite value": 2, "bad label": 1}
    assert [value for _, value in dead.sent] == values


class SteppingClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_slow_summaries_are_taken_less_often() -> None:
    clock = SteppingClock()
    source = MemorySource({0: messages(60, 2, seed=7)}, per_poll=1)
    run = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.05}), source, decode=decode,
        settings=SETTINGS, clock=clock,
    )  # fmt: skip
    summaries: list[float] = []
    summary = run.learner.summary

    def slow_summary() -> dict[str, Any]:  # each summary takes 0.2 s of the clock
        summaries.append(clock.now)
        clock.now += 0.2
        return summary()

    run.learner.summary = slow_summary  # type: ignore[method-assign]
    polled = source.poll

    def poll_taking_a_second(timeout: float, max_messages: int) -> MessageBatch:
        clock.now += 1.0
        return polled(timeout, max_messages)

    source.poll = poll_taking_a_second  # type: ignore[method-assign]
    run.run()
    gaps = np.diff(summaries[:-1])  # the last one is the final snapshot at the end
    # at most 5% of the time: one 0.2 s summary per 4 s at least, not one per second
    assert len(gaps) > 5
    assert gaps.min() >= 4.0


class FillingStore(CheckpointStore):
    """A store whose disk is full for the writes numbered in ``failing`` (1-based)."""

    def __init__(self, directory: Path, failing: set[int]) -> None:
        super().__init__(directory, keep=2)
        self.failing = failing
        self.writes = 0

    def write(self, payload: Mapping[str, Any], created: float | None = None) -> Path:
        self.writes += 1
        if self.writes in self.failing:
            raise CheckpointError(f"cannot write a checkpoint in {self.directory}: disk full")
        return super().write(payload, created)


def test_a_failed_checkpoint_is_logged_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A full disk during the run costs checkpoints, not the daemon: it goes on learning
    and the next checkpoint holds everything; the source commits only what is saved."""
    values = messages(60, 4, seed=7)
    settings = DaemonSettings(
        replay=ReplaySchedule(every=50, passes=1), checkpoint_every=40, checkpoint_min_interval=0.0,
        checkpoint_interval=1e9, idle_replay=False, decode_ahead=False,
    )  # fmt: skip
    store = FillingStore(tmp_path / "full", failing={2, 3})
    source = MemorySource({0: values}, per_poll=5)
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05})
    run = Daemon(spec, source, decode=decode, settings=settings, store=store)
    with caplog.at_level(logging.ERROR, logger="streamlearn.daemon"):
        run.run()
    assert store.writes > 3 and run.stream_examples == 240
    assert sum("learning goes on" in r.getMessage() for r in caplog.records) == 2
    _, checkpoint = store.latest()
    assert checkpoint.payload["job"]["stream_examples"] == 240
    assert source.committed == {0: len(values)}

    final = FillingStore(tmp_path / "full-at-the-end", failing={1})
    last = Daemon(spec, MemorySource({0: values[:3]}), decode=decode, settings=settings,
                  store=final)  # fmt: skip
    with pytest.raises(CheckpointError):
        last.run()  # the last checkpoint's failure is the run's: what it learned is lost


class RefusingSink(ListSink):
    """A sink whose every message fails, as a producer refuses one too large."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: list[Undelivered] = []

    def send(
        self,
        key: bytes | None,
        value: bytes | None,
        *,
        origin: tuple[int, int],
        headers: Sequence[Header] = (),
    ) -> None:
        super().send(key, value, origin=origin)
        self.failed.append(Undelivered(*origin, "MessageSizeTooLargeError()"))

    def undelivered(self) -> list[Undelivered]:
        failed, self.failed = self.failed, []
        return failed


class UndeliveredObserver(CountingObserver):
    def __init__(self) -> None:
        super().__init__()
        self.undelivered: dict[str, int] = {}

    def count_undelivered(self, sink: str, n: int) -> None:
        self.undelivered[sink] = self.undelivered.get(sink, 0) + n


def test_undelivered_predictions_and_dead_letters_are_logged_counted_and_passed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A sink that cannot deliver (a dead letter over the producer's size limit) costs
    that message, not the stream: it is logged with its input's partition and offset
    and counted, and the daemon learns, checkpoints and commits the rest."""
    values = messages(20, 3, seed=8)
    values.insert(5, b"1:0.5 2:-1.0\n")  # a prediction request, offset 5
    values.insert(9, b"+1 1:nan\n-1 2:1.0\n")  # a dead letter, offset 9
    sink, dead = RefusingSink(), RefusingSink()
    observer = UndeliveredObserver()
    source = MemorySource({0: values})
    run = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.05}), source, decode=decode,
        settings=SETTINGS, store=CheckpointStore(tmp_path / "ckpt"), sink=sink,
        dead_letters=dead, observer=observer,
    )  # fmt: skip
    with caplog.at_level(logging.ERROR, logger="streamlearn.daemon"):
        run.run()
    assert run.stream_examples == 20 * 3 + 1
    assert source.committed == {0: len(values)}
    assert observer.undelivered == {"predictions": 1, "dead_letters": 1}
    errors = [r.getMessage() for r in caplog.records]
    assert any("prediction of partition 0 offset 5 not delivered" in e for e in errors), errors
    assert any("dead letter of partition 0 offset 9 not delivered" in e for e in errors), errors
    assert all("MessageSizeTooLargeError" in e for e in errors)


class StalledSink(ListSink):
    """A sink whose messages stay on their way while ``stalled`` (a broker outage)."""

    def __init__(self) -> None:
        super().__init__()
        self.stalled = True
        self.waited: list[float] = []

    def flush(self, timeout: float) -> int:
        self.waited.append(timeout)
        return len(self.sent) if self.stalled else 0


def test_predictions_on_their_way_hold_checkpoints_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """While predictions are on their way a checkpoint is neither written nor
    committed (a restart answers their requests again), and the run goes on; once they
    are delivered, the next checkpoint due holds everything. If the final checkpoint
    cannot deliver them, the run ends with an error that says what happens next."""
    values = messages(40, 3, seed=9)
    values.insert(2, b"1:0.5 2:-1.0\n")  # a prediction request
    settings = DaemonSettings(
        replay=ReplaySchedule(every=50, passes=1), checkpoint_every=20, checkpoint_min_interval=0.0,
        checkpoint_interval=1e9, idle_replay=False, decode_ahead=False, flush_timeout=0.5,
    )  # fmt: skip
    sink = StalledSink()
    store = RecordingStore(tmp_path / "ckpt")
    source = MemorySource({0: values})
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05})
    run = Daemon(spec, source, decode=decode, settings=settings, store=store, sink=sink)
    run.restore()
    with caplog.at_level(logging.ERROR, logger="streamlearn.daemon"):
        for _ in range(4):  # 3 messages a poll: 33 examples, a checkpoint due at 20
            run.process(source.poll(0.0, 1000))
            if run._checkpoint_due():
                run._checkpoint_or_carry_on()
    assert sink.waited == [pytest.approx(0.5, abs=0.05)]
    assert store.held == [] and source.committed == {}
    assert "1 prediction still on their way after 0.5 s" in caplog.text
    assert "learning goes on" in caplog.text

    with pytest.raises(CheckpointError, match=r"final checkpoint failed: .* reads the messages"):
        run.run()  # the rest, then the final checkpoint: still stalled
    assert store.held == [] and source.committed == {}

    sink.stalled = False  # delivered: a checkpoint goes through
    run.checkpoint()
    assert store.held == [({"0": len(values)}, 120)]
    assert source.committed == {0: len(values)}


def test_without_checkpoints_nothing_is_committed() -> None:
    """Offsets are committed only once a checkpoint holding them is on disk: without a
    checkpoint directory, a restart in the same group must not skip what the lost model
    had learned."""
    source = MemorySource({0: messages(10, 3, seed=10)})
    run = daemon(source, None)
    run.run()
    run.checkpoint()  # on request (SIGHUP) too
    assert run.stream_examples == 30
    assert source.committed == {}


def flip_last_byte(path: Path) -> None:
    """Corrupt a checkpoint file (its checksum no longer matches)."""
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def test_unreadable_checkpoints_are_refused_not_skipped(tmp_path: Path) -> None:
    """When checkpoints exist but none reads, starting an empty model would resume from
    the group's committed offsets, past everything they had learned: the daemon refuses
    to start and says how to start afresh. An older readable one is still used."""
    store = CheckpointStore(tmp_path / "ckpt", keep=2)
    first = daemon(MemorySource({0: messages(30, 3, seed=11)}), store)
    first.restore()
    for _ in range(2):
        first.process(first.source.poll(0.0, 1000))
        first.checkpoint()
    newest, older = store.paths()
    flip_last_byte(newest)
    fallback = daemon(MemorySource({0: []}), store)
    fallback.restore()
    assert fallback.stream_examples == 9

    flip_last_byte(older)
    refusing = daemon(MemorySource({0: []}), store)
    with pytest.raises(CheckpointError, match=r"none of the checkpoints in .* can be read"):
        refusing.restore()
    assert not refusing.restored


def test_a_checkpoint_of_another_stream_is_refused(tmp_path: Path) -> None:
    """Positions are per partition of one stream: a checkpoint of topic A must not seek
    topic B. Checkpoints written before they named their stream are still read."""
    store = CheckpointStore(tmp_path / "ckpt")
    first = daemon(MemorySource({0: messages(10, 3, seed=12)}), store)
    first.run()
    other = MemorySource({0: []})
    other.stream = "memory:another"
    with pytest.raises(StateError, match="holds positions in memory, not in memory:another"):
        daemon(other, store).restore()

    found = store.latest()
    assert found is not None and found[1].payload["stream"] == "memory"
    older = {k: v for k, v in found[1].payload.items() if k != "stream"}
    store.write(older)
    source = MemorySource({0: []})
    restored = daemon(source, store)
    restored.restore()
    assert restored.stream_examples == 30 and source.next == {0: 10}


def test_dead_letters_go_whole_and_are_delivered_before_a_checkpoint(tmp_path: Path) -> None:
    """A dead letter keeps its null value and every header (a consumer of the
    dead-letter topic needs its content type); and a checkpoint waits for the dead
    letters as for the predictions, so that none is lost behind committed offsets."""
    polled = MessageBatch.from_records(
        [b"+1 1:nan\n", None, b"-1 2:1\n"],
        [b"a", b"b", None],
        [[("content-type", b"text/svmlight"), ("trace", b"7"), ("trace", None)],
         [("content-type", b"application/msgpack")], []],
        [0, 0, 0],
        [0, 1, 2],
    )  # fmt: skip
    dead = StalledSink()
    store = RecordingStore(tmp_path / "ckpt")
    run = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.05}), MemorySource({0: []}), decode=decode,
        settings=DaemonSettings(flush_timeout=0.1), store=store, dead_letters=dead,
    )  # fmt: skip
    run.process(polled)
    assert dead.sent == [(b"a", b"+1 1:nan\n"), (b"b", None)]
    assert dead.headers == [
        [("content-type", b"text/svmlight"), ("trace", b"7"), ("trace", None)],
        [("content-type", b"application/msgpack")],
    ]
    with pytest.raises(CheckpointError, match="2 dead letters still on their way"):
        run.checkpoint()
    assert store.held == []


def test_predictions_say_their_content_type() -> None:
    """A binary model's answers are text lines, a bank's JSON objects: each prediction
    carries its content type (none was sent)."""
    from streamlearn.config import ModelSpec

    values = [*messages(20, 3, seed=9), b"1:0.5 2:-1.0\n"]
    for spec, content_type in ((LearnerSpec.from_options("pdm", {"delta": "1"}), b"text/plain"),
                               (ModelSpec(LearnerSpec.from_options("pdm", {"delta": "1"}),
                                          one_vs_rest=True), b"application/json")):  # fmt: skip
        sink = ListSink()
        Daemon(spec, MemorySource({0: values}), decode=decode, settings=SETTINGS, sink=sink).run()
        (headers,) = sink.headers
        assert len(headers) == 1 and headers[0][0] == "content-type"
        assert headers[0][1] is not None and headers[0][1].startswith(content_type)


class TickingSource(MemorySource):
    """A source whose every poll takes ``tick`` seconds of a fake clock."""

    def __init__(self, partitions: dict[int, list[bytes]], tick: float) -> None:
        super().__init__(partitions, per_poll=1)
        self.now = 0.0
        self.tick = tick

    def clock(self) -> float:
        return self.now

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        self.now += self.tick
        return super().poll(timeout, max_messages)


@pytest.mark.parametrize(
    ("every", "expected"),
    [(None, 2), (100, 7)],  # 31 s of stream: at 30 s (+ the last); every 5 s at most (+ it)
)
def test_time_paces_checkpoints_and_the_count_is_held_to_a_minimum_interval(
    tmp_path: Path, every: int | None, expected: int
) -> None:
    """Checkpoints every 100 000 examples wrote 827 of 20 MB in 3 minutes at 2 million
    examples a second: time paces them now, and a count triggers one only 5 s apart."""
    source = TickingSource({0: messages(3100, 1, seed=4)}, tick=0.01)  # 100 a second
    store = CheckpointStore(tmp_path, keep=1000)
    settings = replace(SETTINGS, checkpoint_every=every, checkpoint_interval=30.0,
                       checkpoint_min_interval=5.0, decode_ahead=False)  # fmt: skip
    Daemon(LearnerSpec.from_options("pdm", {"delta": "1"}), source, decode=decode,
           settings=settings, store=store, clock=source.clock).run()  # fmt: skip
    assert len(store.paths()) == expected
