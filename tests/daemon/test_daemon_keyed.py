"""The serve loop with one model per message key, over an in-memory source and state
store: answers by the key's model, rejections of keyless lines, checkpoints that write
the models before the offsets are committed, the metrics, and the HTTP API by key."""

from __future__ import annotations

import contextlib
import dataclasses
import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from memory_source import ListSink, MemorySource
from prometheus_client import CollectorRegistry
from test_daemon import SETTINGS, decode

from streamlearn.config import LearnerSpec, ModelSpec
from streamlearn.daemon import Daemon
from streamlearn.http.api import api_handler
from streamlearn.http.live import LiveModel
from streamlearn.http.server import HttpServer
from streamlearn.keyed import KeyedModels, MemoryStates, decode_record
from streamlearn.learn.export import load_json
from streamlearn.metrics import DaemonMetrics
from streamlearn.parse.messages import MessageDecoder
from streamlearn.sources.base import Message, MessageBatch

SPEC = ModelSpec(LearnerSpec.from_options("pdm", {"eps": 0.1, "delta": "1", "buffer_size": 200}))
DIRECTION = np.random.default_rng(0).normal(size=6)
#: answers that stand for "the model says +1 here" on a feature the keys disagree on
PROBE = b"1:1 2:1 3:1 4:1 5:1 6:1\n"


def keyed_values(n: int, seed: int) -> list[tuple[bytes | None, bytes]]:
    """``n`` messages of two keys that disagree (b's labels are a's flipped), some
    without a key, and after them a question for each key."""
    rng = np.random.default_rng(seed)
    out: list[tuple[bytes | None, bytes]] = []
    for i in range(n):
        x = rng.normal(size=6)
        key = b"a" if i % 2 else b"b"
        sign = (1 if x @ DIRECTION > 0 else -1) * (1 if key == b"a" else -1)
        line = f"{sign:+d} " + " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x))
        out.append((None if i % 50 == 7 else key, line.encode() + b"\n"))
    return [*out, (b"a", PROBE), (b"b", PROBE), (b"nobody", PROBE)]


class KeyedSource(MemorySource):
    """Messages with the keys given, one partition; with ``endless``, never exhausted
    (the daemon turns until it is stopped)."""

    def __init__(self, messages: list[tuple[bytes | None, bytes]], endless: bool = False) -> None:
        super().__init__({0: [value for _, value in messages]}, per_poll=40)
        self.keys = [key for key, _ in messages]
        self.endless = endless

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        start = self.next[0]
        stop = min(start + self.per_poll, len(self.keys))
        if start == stop:
            time.sleep(timeout)  # as a real source waits for messages
        self.next[0] = stop
        return MessageBatch.from_messages(
            [Message(self.partitions[0][i], self.keys[i], {}, 0, i) for i in range(start, stop)]
        )

    def exhausted(self) -> bool:
        return not self.endless and super().exhausted()


def keyed_daemon(
    source: MemorySource, store: MemoryStates, max_models: int = 1, **parts: Any
) -> Daemon:
    models = KeyedModels(SPEC.build, SPEC.restore, store, max_models=max_models)
    return Daemon(SPEC, source, decode=decode, settings=SETTINGS, keyed=models, **parts)


def test_each_key_is_learned_and_answered_by_its_own_model() -> None:
    store, sink, dead = MemoryStates(), ListSink(), ListSink()
    metrics = DaemonMetrics(CollectorRegistry(), lambda: daemon.snapshot)
    source = KeyedSource(keyed_values(600, seed=1))
    daemon = keyed_daemon(source, store, sink=sink, dead_letters=dead, observer=metrics)
    daemon.run()
    keyless = sum(1 for i in range(600) if i % 50 == 7)
    assert daemon.stream_examples == 600 - keyless
    assert [key for key, _ in dead.sent] == [None] * keyless
    answers = dict(sink.sent)
    assert set(answers) == {b"a", b"b", b"nobody"} and len(sink.sent) == 3
    assert answers[b"a"].split()[1] == b"1" and answers[b"b"].split()[1] == b"-1"
    assert answers[b"nobody"] == b"0.0 -1"  # no model: a blank one answers
    # the final checkpoint wrote every model, then committed the offsets
    assert source.committed == {0: 603}
    records = {key: decode_record(value, key) for key, value in store._latest.items()}
    assert sorted(records) == [b"a", b"b"]
    assert sum(record.examples for record in records.values()) == 600 - keyless
    assert records[b"a"].positions == {0: 601}  # after its last message (the question)
    body = metrics.render()[0].decode()
    for sample in (
        f'streamlearn_examples_total{{outcome="learned"}} {600 - keyless}.0',
        f'streamlearn_rejected_lines_total{{reason="no_key"}} {keyless}.0',
        "streamlearn_keyed_models_resident 1.0",
        "streamlearn_keyed_models_stored 2.0",
        'streamlearn_keyed_models_total{event="created"} 2.0',
        "streamlearn_keyed_max_models 1.0",
    ):
        assert sample in body
    assert 'streamlearn_keyed_models_total{event="spilled"}' in body
    assert "streamlearn_keyed_state_records_written_total" in body
    assert 'key="' not in body  # no series per key


def test_a_checkpoint_that_cannot_write_the_models_commits_nothing() -> None:
    store = MemoryStates()
    source = KeyedSource(keyed_values(200, seed=2))
    daemon = keyed_daemon(source, store, max_models=10)
    daemon.restore()
    daemon.process(source.poll(0.0, 1000))
    daemon.checkpoint()
    assert source.committed == {0: 40}
    daemon.process(source.poll(0.0, 1000))
    store.failing = True
    daemon._checkpoint_or_carry_on()  # logged; learning goes on
    assert source.committed == {0: 40}
    store.failing = False
    daemon.checkpoint()
    assert source.committed == {0: 80}


# -- the HTTP API by key --------------------------------------------------------------------


class Served:
    def __init__(self, port: int) -> None:
        self.port = port

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request(method, path, body=body, headers={"Content-Type": "text/plain"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        connection.close()
        return response.status, answer


@pytest.fixture
def served() -> Iterator[Served]:
    """A keyed daemon that has learned its stream and goes on turning, with its API."""
    live = LiveModel()
    store = MemoryStates()
    source = KeyedSource(keyed_values(400, seed=3), endless=True)
    settings = dataclasses.replace(SETTINGS, poll_timeout=0.01, publish_interval=0.0)
    models = KeyedModels(SPEC.build, SPEC.restore, store, max_models=1)
    daemon = Daemon(SPEC, source, decode=decode, settings=settings, keyed=models, live=live)
    server = HttpServer()
    decoder = MessageDecoder()
    handler = api_handler(live, decoder.decode_as, learn=True)
    port = server.serve_handler(handler, "127.0.0.1", 0)
    try:
        with turning(daemon, source):
            yield Served(port)
    finally:
        server.stop()


@contextlib.contextmanager
def turning(daemon: Daemon, source: KeyedSource) -> Iterator[None]:
    """``daemon`` running on a thread of its own, once it has learned all of ``source``
    (60 s at most: read, and the last poll, decoded ahead, applied too); stopped at the
    end."""
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while daemon.positions.get(0, 0) < len(source.keys) and time.monotonic() < deadline:
            time.sleep(0.01)
        yield
    finally:
        daemon.request_stop()
        thread.join(30)


def test_the_weights_of_a_key_are_that_keys_model(served: Served) -> None:
    status, document = served.request("GET", "/model/weights?key=b")
    assert status == 200 and document["kind"] == "binary", document
    status, answer = served.request("POST", "/predict?key=b", PROBE)
    assert status == 200, answer
    rows = (np.array([0, 6]), np.arange(6, dtype=np.int32), np.ones(6))
    assert load_json(document).scores(rows).tolist() == [answer["predictions"][0]["score"]]
    status, other = served.request("GET", "/model/weights?key=a")
    assert status == 200 and other["weights"] != document["weights"]
    assert served.request("GET", "/model/weights")[0] == 400  # keyed: name the key
    assert served.request("GET", "/model/weights?key=nobody")[0] == 404


def test_the_api_answers_with_the_model_a_request_names(served: Served) -> None:
    status, a = served.request("POST", "/predict?key=a", PROBE * 2)
    assert status == 200, a
    status, b = served.request("POST", "/predict?key=b", PROBE)
    assert status == 200, b
    assert [p["label"] for p in a["predictions"]] == [1, 1]
    assert [p["label"] for p in b["predictions"]] == [-1]
    status, described = served.request("GET", "/model?key=b")
    assert status == 200 and described["key"] == "b" and described["examples"] > 100
    assert described["certificate"]["window_examples"] == 200
    status, overall = served.request("GET", "/model")
    assert status == 200 and overall["kind"] == "keyed"
    assert overall["keyed"]["max_models"] == 1


def test_the_api_says_which_key_is_missing_or_unknown(served: Served) -> None:
    status, answer = served.request("POST", "/predict", PROBE)
    assert status == 400 and "?key=" in answer["error"]
    status, answer = served.request("POST", "/predict?key=nobody", PROBE)
    assert status == 404 and "nobody" in answer["error"]
    status, answer = served.request("GET", "/model?key=nobody")
    assert status == 404


def test_a_post_to_learn_teaches_the_model_it_names(served: Served) -> None:
    """POST /learn?key=K learns by K's model (restored from its record when it left
    memory: the daemon holds one model at most); the other key's model is left alone."""
    status, before = served.request("GET", "/model?key=b")
    assert status == 200, before
    status, other = served.request("GET", "/model?key=a")
    assert status == 200, other
    lines = b"".join(b"+1 " + PROBE for _ in range(30))  # b says -1 on the probe: taught +1
    status, answer = served.request("POST", "/learn?key=b", lines)
    assert status == 200 and answer["learned"] == 30, answer
    status, after = served.request("GET", "/model?key=b")
    assert status == 200 and after["examples"] == before["examples"] + 30, after
    status, a_after = served.request("GET", "/model?key=a")
    assert status == 200 and a_after["examples"] == other["examples"], a_after


def test_a_post_to_learn_names_a_key_this_daemon_has(served: Served) -> None:
    status, answer = served.request("POST", "/learn", b"+1 " + PROBE)
    assert status == 400 and "?key=" in answer["error"]
    status, answer = served.request("POST", "/learn?key=nobody", b"+1 " + PROBE)
    assert status == 404 and "nobody" in answer["error"], answer


def test_the_daemon_removes_keys_idle_for_the_ttl_while_it_turns() -> None:
    """The serve loop looks for keys idle for ``--key-ttl`` at its turns, with or without
    messages: once the stream has gone quiet for the TTL, both keys' models are removed
    from memory and from the state topic."""
    now = [5000.0]
    store = MemoryStates(wall=lambda: now[0])
    models = KeyedModels(SPEC.build, SPEC.restore, store, max_models=1,
                         wall=lambda: now[0], key_ttl=600.0)  # fmt: skip
    source = KeyedSource(keyed_values(100, seed=4), endless=True)
    settings = dataclasses.replace(SETTINGS, poll_timeout=0.01)
    daemon = Daemon(SPEC, source, decode=decode, settings=settings, keyed=models)
    with turning(daemon, source):
        assert models.expired == 0
        now[0] += 700.0  # the stream has been quiet for longer than the TTL
        deadline = time.monotonic() + 60
        while models.expired < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert models.expired == 2 and len(models.resident) == 0
    assert store.find(b"a") is None and store.find(b"b") is None
