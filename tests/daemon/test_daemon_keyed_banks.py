"""Keyed models that are one-vs-rest banks (``serve --model-key --one-vs-rest``): each
key's bank learns its own classes, spills to the state topic and comes back from it bit
for bit, answers with a ranking, is described by label on ``GET /model?key=``, and a
record of the other kind of model is refused with the key starting anew."""

from __future__ import annotations

import dataclasses
import http.client
import json

import numpy as np
from memory_source import ListSink
from test_daemon import SETTINGS, decode
from test_daemon_keyed import KeyedSource, turning

from streamlearn.checkpoint.codec import encode
from streamlearn.config import LearnerSpec, ModelSpec
from streamlearn.daemon import Daemon
from streamlearn.http.api import api_handler
from streamlearn.http.live import LiveModel
from streamlearn.http.server import HttpServer
from streamlearn.keyed import KeyedModels, MemoryStates, decode_record
from streamlearn.learn import ModelBank
from streamlearn.modes import KeyedMode
from streamlearn.parse.messages import MessageDecoder

LEARNER = LearnerSpec.from_options("pdm", {"eps": 0.1, "delta": "1", "buffer_size": 300})
BANKS = ModelSpec(LEARNER, one_vs_rest=True)
BINARY = ModelSpec(LEARNER)
CENTRES = np.eye(6)[:3] * 3.0
#: each key's class of the point at centre c (the keys disagree on every class)
CLASS_OF = {b"a": (1, 2, 3), b"b": (3, 1, 2)}


def keyed_classes(n: int, seed: int) -> list[tuple[bytes | None, bytes]]:
    """``n`` messages of keys a and b, each a point near one of three centres whose class
    depends on the key; then one question per key at each centre."""
    rng = np.random.default_rng(seed)
    out: list[tuple[bytes | None, bytes]] = []
    for i in range(n):
        key = b"a" if i % 2 else b"b"
        centre = int(rng.integers(3))
        x = CENTRES[centre] + rng.normal(scale=0.3, size=6)
        features = " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x))
        out.append((key, f"{CLASS_OF[key][centre]} {features}\n".encode()))
    for key in (b"a", b"b"):
        for centre in CENTRES:
            out.append(
                (key, " ".join(f"{j + 1}:{v:g}" for j, v in enumerate(centre)).encode() + b"\n")
            )
    return out


def run(spec: ModelSpec, store: MemoryStates, max_models: int) -> tuple[Daemon, ListSink]:
    sink = ListSink()
    source = KeyedSource(keyed_classes(600, seed=1))
    models = KeyedModels(spec.build, spec.restore, store, max_models=max_models)
    daemon = Daemon(spec, source, decode=decode, settings=SETTINGS, keyed=models, sink=sink)
    daemon.run()
    return daemon, sink


def test_each_key_has_a_bank_of_its_own_classes_and_spills_change_nothing() -> None:
    tight, free = MemoryStates(), MemoryStates()
    daemon, sink = run(BANKS, tight, max_models=1)
    run(BANKS, free, max_models=10)
    assert daemon.stream_examples == 600
    assert (
        isinstance(daemon.mode, KeyedMode) and daemon.mode.keyed.spilled > 10
    )  # one bank in memory
    answers: dict[bytes | None, list[int]] = {}
    for key, value in sink.sent:
        answers.setdefault(key, []).append(json.loads(value)["label"])
    assert answers == {key: list(classes) for key, classes in CLASS_OF.items()}
    for key in (b"a", b"b"):
        ours, theirs = (
            decode_record(tight.find(key) or b"", key),
            decode_record(free.find(key) or b"", key),
        )
        assert ours.examples == theirs.examples == 300
        assert encode(ours.state, created=0.0) == encode(theirs.state, created=0.0)
        assert isinstance(BANKS.restore(ours.state), ModelBank)


def test_a_key_whose_record_holds_the_other_kind_starts_anew() -> None:
    store = MemoryStates()
    run(BINARY, store, max_models=10)  # binary models' records (labels 1, 2, 3 refused)
    daemon, _ = run(BANKS, store, max_models=10)
    assert isinstance(daemon.mode, KeyedMode) and daemon.mode.keyed.refused == 2
    for key in (b"a", b"b"):
        record = decode_record(store.find(key) or b"", key)
        assert isinstance(BANKS.restore(record.state), ModelBank) and record.examples == 300


def test_get_model_by_key_describes_the_bank_by_label() -> None:
    live, store = LiveModel(), MemoryStates()
    source = KeyedSource(keyed_classes(600, seed=2), endless=True)
    models = KeyedModels(BANKS.build, BANKS.restore, store, max_models=1)
    settings = dataclasses.replace(SETTINGS, poll_timeout=0.01, publish_interval=0.0)
    daemon = Daemon(BANKS, source, decode=decode, settings=settings, keyed=models, live=live)
    server = HttpServer()
    port = server.serve_handler(api_handler(live, MessageDecoder().decode_as), "127.0.0.1", 0)
    try:
        with turning(daemon, source):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", "/model?key=b")
            response = connection.getresponse()
            described = json.loads(response.read())
            assert response.status == 200, described
            assert described["kind"] == "one-vs-rest" and described["key"] == "b"
            per_label = described["certificate"]["per_label"]
            assert sorted(figures["label"] for figures in per_label) == [1.0, 2.0, 3.0]
            text = {"Content-Type": "text/plain"}
            connection.request("POST", "/predict?key=b", b"1:3\n", headers=text)
            response = connection.getresponse()
            answer = json.loads(response.read())
            assert response.status == 200 and answer["predictions"][0]["label"] == 3, answer
    finally:
        server.stop()
