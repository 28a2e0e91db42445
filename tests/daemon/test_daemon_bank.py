"""The serve loop with a one-vs-rest model bank, over an in-memory source: restart
exactness, label sets from svmlight and msgpack, JSON predictions, progressive accuracy,
checkpoint kinds, idle replay and metrics."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from memory_source import ListSink, MemorySource
from prometheus_client import CollectorRegistry
from services import wait_for

from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import LearnerSpec, ModelSpec
from streamlearn.daemon import Daemon, DaemonSettings, FirstLines
from streamlearn.errors import StateError
from streamlearn.jobs.serve import info, warm_up
from streamlearn.learn import ModelBank
from streamlearn.learn.state import unpacked_weights
from streamlearn.metrics import DaemonMetrics
from streamlearn.parse.messages import MessageDecoder
from streamlearn.parse.svmlight import ParsedRows, SvmlightParser
from streamlearn.replay import ReplaySchedule
from streamlearn.sources.base import Message, MessageBatch

SETTINGS = DaemonSettings(
    replay=ReplaySchedule(every=40, passes=1),
    checkpoint_every=10**9,
    checkpoint_interval=1e9,
    idle_replay=False,
)
BANK = ModelSpec(LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "0.5"}), True)
MSGPACK = {"content-type": b"application/msgpack"}


def decode(messages: MessageBatch) -> tuple[ParsedRows, FirstLines]:
    return MessageDecoder().decode_columns(messages.data, messages.spans)


def label_set_lines(n: int, seed: int) -> list[str]:
    """svmlight lines with label sets from 5 linear rules; label 5 appears from line 60."""
    rng = np.random.default_rng(seed)
    rules = rng.normal(size=(5, 10))
    lines = []
    for i in range(n):
        x = rng.normal(size=10) * (rng.random(10) < 0.6)
        scores = rules @ x
        members = [k + 1 for k in range(5) if scores[k] > 0.4 and (k < 4 or i >= 60)]
        if not members:
            members = [int(np.argmax(scores[:4])) + 1]
        features = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x) if v != 0.0)
        lines.append(",".join(map(str, members)) + " " + features)
    return lines


def messages(n: int, per_message: int, seed: int) -> list[bytes]:
    lines = label_set_lines(n * per_message, seed)
    return [
        ("\n".join(lines[i : i + per_message]) + "\n").encode()
        for i in range(0, len(lines), per_message)
    ]


def daemon(
    source: MemorySource,
    store: CheckpointStore | None = None,
    sink: ListSink | None = None,
    spec: ModelSpec = BANK,
    settings: DaemonSettings = SETTINGS,
    **kwargs: Any,
) -> Daemon:
    return Daemon(spec, source, decode=decode, settings=settings, store=store, sink=sink, **kwargs)


def bank_of(run: Daemon) -> ModelBank:
    assert isinstance(run.learner, ModelBank)
    return run.learner


def assert_same_bank(ours: ModelBank, theirs: ModelBank) -> None:
    a, b = ours.state_dict(), theirs.state_dict()
    for key in ("label_values", "weights", "scalars", "stats", "progressive"):
        assert np.array_equal(unpacked(a, key), unpacked(b, key)), key
    assert ours.summary() == theirs.summary()


def test_the_daemon_learns_what_learn_one_vs_rest_learns() -> None:
    values = messages(50, 4, seed=1)
    run = daemon(MemorySource({0: values}))
    run.run()
    assert run.stream_examples == 200
    rows = SvmlightParser().feed(b"".join(values))
    bank = ModelBank(BANK.learner.build())
    bank.learn_on_schedule(rows, SETTINGS.replay, 0)
    assert_same_bank(bank_of(run), bank)
    assert sorted(bank.labels_.tolist()) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert bank.labels_[-1] == 5.0  # the label that appears mid-stream comes last


def test_a_crash_and_restart_gives_the_uninterrupted_bank(tmp_path: Path) -> None:
    values = messages(90, 3, seed=2)  # label 5 arrives after the checkpoint
    whole = daemon(MemorySource({0: values}))
    whole.run()

    store = CheckpointStore(tmp_path / "ckpt", keep=2)
    source = MemorySource({0: values})
    first = daemon(source, store)
    first.restore()
    for _ in range(6):
        first.process(source.poll(0.0, 1000))
    first.checkpoint()
    assert source.committed == {0: 18} and bank_of(first).n_labels == 4
    for _ in range(8):  # learned after the checkpoint, then lost in the crash
        first.process(source.poll(0.0, 1000))

    restarted = daemon(MemorySource({0: values}), store)
    restarted.run()
    assert restarted.stream_examples == whole.stream_examples == 270
    assert_same_bank(bank_of(restarted), bank_of(whole))


def test_unlabelled_examples_get_a_json_prediction_keyed_like_their_message() -> None:
    values = messages(40, 5, seed=3)
    values.append(b"1:0.5 2:-1.0\n+1 3:1\n3:2.0 7:1\n")  # two to predict, one to learn
    sink = ListSink()
    source = MemorySource({0: values}, per_poll=1)
    run = daemon(source, sink=sink)
    for _ in range(40):
        run.process(source.poll(0.0, 1000))
    asked = np.array([[0.5, -1.0, 0, 0, 0, 0, 0], [0, 0, 2.0, 0, 0, 0, 1]])
    before = bank_of(run).decision_function(asked[:1])
    run.run()
    bank = bank_of(run)  # the second question comes after "+1 3:1": answered after it
    expected = np.vstack([before, bank.decision_function(asked[1:])])
    labels = bank.labels_.tolist()
    assert [key for key, _ in sink.sent] == [b"k40", b"k40"]
    for (_, value), scores in zip(sink.sent, expected, strict=True):
        answer = json.loads(value)
        assert set(answer) == {"label", "score", "labels", "ranking"}
        best = int(np.argmax(scores))
        assert answer["label"] == int(labels[best]) and isinstance(answer["label"], int)
        assert answer["score"] == scores[best]
        assert [score for _, score in answer["ranking"]] == sorted(scores.tolist(), reverse=True)
        assert sorted(label for label, _ in answer["ranking"]) == [1, 2, 3, 4, 5]
        positive = {int(v) for v, s in zip(labels, scores, strict=True) if s > 0}
        assert set(answer["labels"]) == positive
    assert run.stream_examples == 201  # "+1 3:1" is a class label for a bank


def test_msgpack_labels_are_label_sets_and_bad_ones_are_rejected() -> None:
    def pack(document: object) -> bytes:
        return bytes(msgpack.packb(document))

    lines = label_set_lines(30, seed=4)
    rows = SvmlightParser().feed(("\n".join(lines) + "\n").encode())
    examples = []
    for i in range(rows.n_rows):
        lo, hi = rows.indptr[i], rows.indptr[i + 1]
        labels = rows.labels[rows.label_ptr[i] : rows.label_ptr[i + 1]].tolist()
        example = {"indices": rows.indices[lo:hi].tolist(), "values": rows.values[lo:hi].tolist()}
        # a one-label set may come as "label" too
        key = "label" if len(labels) == 1 and i % 2 else "labels"
        example[key] = labels[0] if key == "label" else [int(v) for v in labels]
        examples.append(example)
    bad = [
        {"indices": [0], "values": [1.0], "labels": []},
        {"indices": [0], "values": [1.0], "labels": [1, float("nan")]},
        {"indices": [0], "values": [1.0], "labels": 3},
        {"indices": [0], "values": [1.0], "labels": [True]},
        {"indices": [0], "values": [1.0], "label": 1, "labels": [1]},
    ]
    polled = [
        Message(pack({"examples": examples[:10]}), b"a", MSGPACK, 0, 0),
        Message(pack({"examples": bad}), b"b", MSGPACK, 0, 1),
        Message(pack({"examples": examples[10:]}), b"c", MSGPACK, 0, 2),
        Message(pack({"indices": [1, 4], "values": [1.0, -2.0]}), b"d", MSGPACK, 0, 3),
    ]
    sink, dead = ListSink(), ListSink()
    reasons: list[str] = []

    class Reasons(DaemonMetrics):
        def count_rejected(self, reason: str, n: int = 1) -> None:
            reasons.append(reason)

    observer = Reasons(CollectorRegistry(), state=lambda: None)
    run = daemon(MemorySource({0: []}), sink=sink, dead_letters=dead, observer=observer)
    run.process(MessageBatch.from_messages(polled))
    assert run.stream_examples == 30
    assert reasons == ["bad label"] * 5
    assert dead.sent == [(b"b", polled[1].value)]
    assert [key for key, _ in sink.sent] == [b"d"]
    same = ModelBank(BANK.learner.build())
    same.learn_on_schedule(rows, SETTINGS.replay, 0)
    assert_same_bank(bank_of(run), same)


def test_progressive_accuracy_is_the_argmax_in_the_label_set() -> None:
    values = messages(60, 5, seed=5)
    counted: list[tuple[int, int]] = []

    class Progress(DaemonMetrics):
        def count_progressive(self, correct: int, mistakes: int) -> None:
            counted.append((correct, mistakes))

    observer = Progress(CollectorRegistry(), state=lambda: None)
    run = daemon(MemorySource({0: values}), observer=observer)
    run.run()
    bank = bank_of(run)
    correct = sum(c for c, _ in counted)
    mistakes = sum(m for _, m in counted)
    assert correct + mistakes == bank.stream_judged == 300
    assert mistakes == bank.stream_mistakes
    assert 0 < mistakes < 150  # it learns: far fewer mistakes than a guess among 5 labels


def test_a_checkpoint_of_one_kind_does_not_load_into_the_other(tmp_path: Path) -> None:
    banks = CheckpointStore(tmp_path / "bank")
    daemon(MemorySource({0: messages(5, 3, seed=6)}), banks).run()
    binary = ModelSpec(LearnerSpec.from_options("pdm", {"eps": 0.05}))
    with pytest.raises(StateError, match=r"one-vs-rest model bank.*with --one-vs-rest"):
        daemon(MemorySource({0: []}), banks, spec=binary).restore()

    binaries = CheckpointStore(tmp_path / "binary")
    daemon(MemorySource({0: [b"+1 1:1\n-1 2:1\n"]}), binaries, spec=binary).run()
    with pytest.raises(StateError, match=r"binary model.*without --one-vs-rest"):
        daemon(MemorySource({0: []}), binaries).restore()


class IdleSource(MemorySource):
    """Messages, then empty polls (never exhausted) until the daemon is stopped."""

    def __init__(self, values: list[bytes], idle_polls: int) -> None:
        super().__init__({0: values}, per_poll=len(values))
        self.idle_polls = idle_polls
        self.run: Daemon | None = None

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        batch = super().poll(timeout, max_messages)
        if not len(batch):
            self.idle_polls -= 1
            if self.idle_polls <= 0 and self.run is not None:
                self.run.request_stop()
        return batch

    def exhausted(self) -> bool:
        return False


def test_idle_replay_replays_every_label_towards_convergence() -> None:
    values = messages(40, 5, seed=7)
    settings = DaemonSettings(replay=ReplaySchedule(every=10**9, passes=1), idle_replay=True,
                              checkpoint_every=10**9, checkpoint_interval=1e9)  # fmt: skip
    source = IdleSource(values, idle_polls=200)
    run = daemon(source, settings=settings)
    source.run = run
    run.run()
    bank = bank_of(run)
    assert bank.summary()["passes"] > 1
    assert bank.converged
    idle = IdleSource(values, idle_polls=3)
    without = daemon(idle, settings=replace(settings, idle_replay=False))
    idle.run = without
    without.run()
    assert bank_of(without).summary()["passes"] == 0


def test_metrics_per_label_series_on_request_and_info_says_one_vs_rest() -> None:
    run = daemon(MemorySource({0: messages(20, 5, seed=8)}))
    run.run()
    rendered = {}
    for per_label in (False, True):
        metrics = DaemonMetrics(CollectorRegistry(), lambda: run.snapshot, per_label=per_label)
        metrics.set_info(*info(run.learner), version="test")
        rendered[per_label] = metrics.render()[0].decode()
    assert "streamlearn_labels 5.0" in rendered[False]
    assert "streamlearn_label_updates_total" not in rendered[False]
    assert 'streamlearn_label_updates_total{label="3"}' in rendered[True]
    assert "one_vs_rest=True" in rendered[False]
    kappa = ModelSpec(LearnerSpec("paum", {"tau_pos": 2.0}), True, tau_pos_kappa=-1.0).build()
    assert info(kappa)[1]["tau_pos_kappa"] == -1.0
    assert "one_vs_rest" not in info(ModelSpec(LearnerSpec("pdm")).build())[1]


def test_warm_up_runs_the_bank_path() -> None:
    warm_up(ModelSpec(LearnerSpec("paum", {"tau_pos": 2.0}), True, tau_pos_kappa=-2.0))
    warm_up(BANK)


def process_counting_rejections(
    polled: list[Message], settings: DaemonSettings
) -> tuple[Daemon, ListSink, list[str]]:
    """A bank daemon with ``settings`` that has processed ``polled`` as one poll; its
    dead letters, and the reason of every line it counted as rejected."""
    dead = ListSink()
    reasons: list[str] = []

    class Reasons(DaemonMetrics):
        def count_rejected(self, reason: str, n: int = 1) -> None:
            reasons.append(reason)

    observer = Reasons(CollectorRegistry(), state=lambda: None)
    run = daemon(MemorySource({0: []}), settings=settings, dead_letters=dead, observer=observer)
    run.process(MessageBatch.from_messages(polled))
    return run, dead, reasons


def test_lines_that_would_take_the_bank_past_max_labels_are_rejected() -> None:
    lines = label_set_lines(120, seed=5)  # labels 1 to 4, and 5 from line 60 on
    polled = [
        Message(("\n".join(lines[:50]) + "\n").encode(), b"a", {}, 0, 0),
        # a label set that brings three new labels at once, then one that brings one
        Message(b"1,7,8,9 1:1\n2 2:1\n", b"b", {}, 0, 1),
        Message(b"6 3:1\n", b"c", {}, 0, 2),
        Message(("\n".join(lines[50:]) + "\n").encode(), b"d", {}, 0, 3),
    ]
    run, dead, reasons = process_counting_rejections(polled, replace(SETTINGS, max_labels=5))
    bank = bank_of(run)
    # 1 to 4 from the first 50 lines, then 6: 5 labels, so 7-8-9 and 5 do not fit
    assert sorted(bank.labels_.tolist()) == [1.0, 2.0, 3.0, 4.0, 6.0]
    fitting = [line for line in lines[50:] if "5" not in line.split(" ")[0].split(",")]
    assert run.stream_examples == 50 + 2 + len(fitting)
    assert reasons == ["too many labels"] * (1 + len(lines) - 50 - len(fitting))
    assert [key for key, _ in dead.sent] == [b"b", b"d"]
    with pytest.raises(ValueError, match="--max-labels must be >= 1"):
        DaemonSettings(max_labels=0)


def test_lines_that_would_take_the_bank_past_max_weights_are_rejected() -> None:
    polled = [
        Message(b"1 1:1\n2 2:1 3:1\n", b"a", {}, 0, 0),  # 2 labels x 3 features
        Message(b"3 1:1\n1 4:1\n", b"b", {}, 0, 1),  # 3 x 3 fits, then 3 x 4 does not
        Message(b"2 3:1\n2 5:1\n", b"c", {}, 0, 2),  # known labels: 3 x 3, then 3 x 5
    ]
    run, dead, reasons = process_counting_rejections(polled, replace(SETTINGS, max_weights=9))
    bank = bank_of(run)
    assert sorted(bank.labels_.tolist()) == [1.0, 2.0, 3.0] and bank.n_features_in_ == 3
    assert run.stream_examples == 4
    assert reasons == ["too many weights"] * 2
    assert [key for key, _ in dead.sent] == [b"b", b"c"]
    with pytest.raises(ValueError, match="--max-weights must be >= 1"):
        DaemonSettings(max_weights=0)


def test_the_weights_bound_counts_the_examples_learned_before_delta_settles() -> None:
    """With delta auto the bank learns from the first example (a provisional Delta): its
    features count at once, poll after poll."""
    spec = ModelSpec(LearnerSpec.from_options("pdm", {"eps": 0.05}), True)  # delta auto
    run = daemon(MemorySource({0: []}), spec=spec, settings=replace(SETTINGS, max_weights=100))
    run.process(MessageBatch.from_messages([Message(b"1 60:1\n", b"a", {}, 0, 0)]))
    assert bank_of(run).n_features_in_ == 60 and bank_of(run).features_to_learn() == 60
    run.process(MessageBatch.from_messages([Message(b"2 1:1\n1 2:1\n", b"b", {}, 0, 1)]))
    assert bank_of(run).labels_to_learn().tolist() == [1.0]  # 2 x 60 would pass 100
    assert run.stream_examples == 2


def test_serve_one_vs_rest_on_stdin(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    command = [
        sys.executable, "-m", "streamlearn", "serve", "--algo", "paum", "--tau-neg", "-1",
        "--tau-pos", "2", "--tau-pos-kappa", "-3", "--delta", "0.5", "--one-vs-rest",
        "--per-label-metrics", "--metrics-addr", "127.0.0.1:0", "--checkpoint-dir",
        str(directory), "--checkpoint-interval", "0.1s", "--idle-replay", "off",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None
    process.stdin.write(("\n".join(label_set_lines(300, seed=9)) + "\n").encode())
    process.stdin.flush()

    def learned() -> int:
        found = CheckpointStore(directory).latest() if directory.exists() else None
        return int(found[1].payload["job"]["stream_examples"]) if found else 0

    try:
        wait_for(lambda: learned() == 300, timeout=60, what="300 examples learned")
        out, err = process.communicate(b"1:0.5 2:1.0\n", timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err.decode()[-2000:]
    answer = json.loads(out.decode())
    assert answer["label"] in {1, 2, 3, 4, 5} and len(answer["ranking"]) == 5
    assert answer["label"] == answer["ranking"][0][0]
    found = CheckpointStore(directory).latest()
    assert found is not None
    assert found[1].payload["learner"]["tau_pos_kappa"] == -3.0


def unpacked(state: dict[str, Any], key: str) -> Any:
    """``state[key]``, with the weights as one array (a state may store their nonzeros)."""
    return unpacked_weights(state[key]) if key == "weights" else state[key]
