"""The HTTP API over a real aiohttp server on a free port: answers, learning through a
stand-in for the daemon's turns, and every kind of bad request."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np
import pytest

from streamlearn.http.api import api_handler
from streamlearn.http.live import Learned, LiveModel, Published
from streamlearn.http.openapi import openapi_document
from streamlearn.http.server import HttpServer
from streamlearn.learn import PDM, ModelBank
from streamlearn.learn.export import load_json
from streamlearn.parse import ParsedRows
from streamlearn.parse.features import stable_hash
from streamlearn.parse.messages import MessageDecoder

DECODER = MessageDecoder(hash_features=64)
TOKEN = "t0ken"


def decode(body: bytes, body_format: str) -> ParsedRows:
    return {
        "svmlight": DECODER.decode_svmlight,
        "json": DECODER.decode_json,
        "msgpack": DECODER.decode_msgpack,
    }[body_format](body)


def trained() -> PDM:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = np.where(X @ np.arange(1.0, 7.0) > 0, 1, -1)
    return PDM(eps=0.1, delta=0.5).fit(X, y)


@dataclass
class Observed:
    requests: list[tuple[str, int]] = field(default_factory=list)

    def observe_http(self, endpoint: str, status: int, seconds: float) -> None:
        assert seconds >= 0.0
        self.requests.append((endpoint, status))


@dataclass
class Api:
    """A served API, the live model behind it and what its observer saw."""

    port: int
    live: LiveModel
    observed: Observed
    model: Any

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str | None = "text/plain",
        token: str | None = None,
    ) -> tuple[int, dict[str, Any], http.client.HTTPResponse]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Content-Type": content_type} if content_type else {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        connection.close()
        return response.status, json.loads(data), response


def serve(
    model: Any,
    *,
    learn: bool = False,
    token: str | None = None,
    max_body: int = 1 << 16,
    live: LiveModel | None = None,
) -> Iterator[Api]:
    live = live if live is not None else LiveModel(max_pending=50)
    live.publish(Published(version=7, predictor=model.predictor()))
    live.wanted(7, 0.05)  # the daemon is at version 7
    live.describe({"algorithm": "pdm", "certificate": {"certified_gap": float("nan")}})
    observed = Observed()
    server = HttpServer()
    handler = api_handler(live, decode, learn=learn, token=token, observer=observed,
                          max_body=max_body, body_timeout=1.0)  # fmt: skip
    port = server.serve_handler(handler, "127.0.0.1", 0, max_body=max_body)
    try:
        yield Api(port, live, observed, model)
    finally:
        server.stop()


@pytest.fixture
def api() -> Iterator[Api]:
    yield from serve(trained())


@pytest.fixture
def learning() -> Iterator[Api]:
    yield from serve(trained(), learn=True)


class Turns:
    """A stand-in for the daemon's turns: learns what is posted, publishes, tells."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.learned: list[ParsedRows] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        live, model = self.api.live, self.api.model
        version = 7
        while not self.stop.is_set():
            for posted in live.take_posted():
                rows = posted.rows
                labels = rows.labels[rows.label_ptr[:-1]]
                model.learn((rows.indptr, rows.indices, rows.values), labels)
                self.learned.append(rows)
                version += 1
                live.publish(Published(version, model.predictor()))
                posted.done.set_result(Learned(rows.n_rows, [], version))
            time.sleep(0.005)

    def __enter__(self) -> Turns:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)


def test_predict_svmlight_answers_as_the_model(api: Api) -> None:
    status, answer, response = api.request("POST", "/predict", b"1:0.5 3:-2\n2:1 6:0.25\n4:1")
    assert status == 200 and response.getheader("Content-Type").startswith("application/json")
    assert answer["version"] == 7
    X = np.zeros((3, 6))
    X[0, [0, 2]] = [0.5, -2]
    X[1, [1, 5]] = [1, 0.25]
    X[2, 3] = 1
    scores = api.model.decision_function(X)
    probabilities = api.model.predict_proba(X)[:, 1]
    got = answer["predictions"]
    np.testing.assert_allclose([p["score"] for p in got], scores, rtol=1e-12)
    np.testing.assert_allclose([p["probability"] for p in got], probabilities, rtol=1e-12)
    assert [p["label"] for p in got] == [1 if s > 0 else -1 for s in scores]


def test_predict_takes_labels_and_ignores_them(api: Api) -> None:
    _, with_labels, _ = api.request("POST", "/predict", b"+1 1:0.5 3:-2\n")
    _, without, _ = api.request("POST", "/predict", b"1:0.5 3:-2\n")
    assert with_labels == without


def test_predict_json_msgpack_and_hashed_features_agree(api: Api) -> None:
    example = {"indices": [0, 2], "values": [0.5, -2.0]}
    _, by_svmlight, _ = api.request("POST", "/predict", b"1:0.5 3:-2")
    _, by_json, _ = api.request(
        "POST", "/predict", json.dumps(example).encode(), "application/json"
    )
    batch = msgpack.packb({"examples": [example, example]})
    _, by_msgpack, _ = api.request("POST", "/predict", batch, "application/msgpack")
    assert by_json == by_svmlight
    assert by_msgpack["predictions"] == by_svmlight["predictions"] * 2
    named = {"features": {"age": 1.5, "height": -1.0}}
    _, by_name, _ = api.request(
        "POST", "/predict", json.dumps([named]).encode(), "application/json"
    )
    index = {name: stable_hash(name) % 64 for name in named["features"]}
    x = np.zeros((1, 64))
    for name, value in named["features"].items():
        x[0, index[name]] += value
    assert by_name["predictions"][0]["score"] == pytest.approx(api.model.decision_function(x)[0])


def test_a_bank_answers_with_a_ranking_and_probabilities() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 4))
    y = [[int(np.argmax(row[:3]))] for row in X]
    bank = ModelBank(PDM(eps=0.1, delta=0.5)).fit(X, y)
    for api in serve(bank):
        status, answer, _ = api.request("POST", "/predict", b"1:2 2:-1 3:-1")
        assert status == 200
        (prediction,) = answer["predictions"]
        scores = bank.decision_function(np.array([[2.0, -1.0, -1.0, 0.0]]))[0]
        ranking = prediction["ranking"]
        assert [r["label"] for r in ranking] == bank.labels_[np.argsort(-scores)].tolist()
        assert prediction["label"] == ranking[0]["label"] == 0
        assert prediction["labels"] == [r["label"] for r in ranking if r["score"] > 0]
        assert all(0.0 < r["probability"] < 1.0 for r in ranking)


def test_learn_is_refused_unless_allowed(api: Api) -> None:
    status, answer, _ = api.request("POST", "/learn", b"+1 1:1\n")
    assert status == 403 and "--http-learn" in answer["error"]


def test_learn_learns_in_order_and_a_later_predict_sees_it(learning: Api) -> None:
    with Turns(learning) as turns:
        before = learning.request("POST", "/predict", b"5:1")[1]
        # the first row goes against the model, which learns from it
        status, answer, _ = learning.request("POST", "/learn", b"-1 5:3\n-1 5:-3\n+1 1:1 5:3\n")
        assert status == 200 and answer["learned"] == 3 and answer["version"] == 8
        after = learning.request("POST", "/predict", b"5:1")[1]
    assert [rows.n_rows for rows in turns.learned] == [3]
    assert turns.learned[0].labels.tolist() == [-1.0, -1.0, 1.0]
    assert after["version"] == 8 > before["version"]
    x = np.zeros((1, 6))
    x[0, 4] = 1.0
    assert after["predictions"][0]["score"] == pytest.approx(learning.model.decision_function(x)[0])
    assert after["predictions"][0]["score"] != before["predictions"][0]["score"]


def test_learn_refuses_rows_without_labels_whole(learning: Api) -> None:
    status, answer, _ = learning.request("POST", "/learn", b"+1 1:1\n2:1\n")
    assert status == 400
    assert answer["rejected"] == [{"line": 2, "reason": "no label", "text": "2:1"}]
    assert not learning.live.has_posted()


def test_learn_says_busy_when_too_much_waits(learning: Api) -> None:
    lines = b"".join(b"+1 1:1\n" for _ in range(40))
    learning.live.post(decode(lines, "svmlight"))  # nobody takes it
    status, answer, response = learning.request("POST", "/learn", lines)
    assert status == 503 and response.getheader("Retry-After") == "1"
    assert "waiting" in answer["error"]


@pytest.mark.parametrize(
    ("body", "content_type", "status", "reason"),
    [
        (b"1:nan\n", "text/plain", 400, "not a finite value"),
        (b"1:1 1:2\n", "text/plain", 400, "unsorted or duplicate index"),
        (b"garbage here\n", "text/plain", 400, None),
        (b'{"indices": [1], "values": [NaN]}', "application/json", 400, "bad message"),
        (b'{"indices": [1], "values": [1', "application/json", 400, "bad message"),
        (b'{"indices": [1], "values": [1e999]}', "application/json", 400, "not a finite value"),
        (b'{"features": {"a": "x"}}', "application/json", 400, "bad message"),
        (b"\xc1", "application/msgpack", 400, "bad message"),
        (b"", "text/plain", 400, None),
        (b"1:1", "application/x-www-form-urlencoded", 415, None),
        (b"1:1", None, 415, None),
    ],
)
def test_bad_bodies_get_4xx_and_are_counted(
    api: Api, body: bytes, content_type: str | None, status: int, reason: str | None
) -> None:
    got, answer, response = api.request("POST", "/predict", body, content_type)
    assert got == status, answer
    assert response.getheader("Content-Type").startswith("application/json")
    assert answer["error"]
    if reason is not None:
        assert answer["rejected"][0]["reason"] == reason
    assert api.observed.requests == [("/predict", status)]


def test_unknown_paths_methods_and_large_bodies(api: Api) -> None:
    assert api.request("GET", "/nowhere")[0] == 404
    status, answer, response = api.request("GET", "/predict")
    assert status == 405 and response.getheader("Allow") == "POST"
    status, answer, _ = api.request("POST", "/predict", b"1:1\n" * 20_000)
    assert status == 413 and "exceeded" in answer["error"]
    assert api.observed.requests == [("other", 404), ("/predict", 405), ("/predict", 413)]


def test_model_describes_with_the_version_and_no_nan(api: Api) -> None:
    status, answer, _ = api.request("GET", "/model")
    assert status == 200
    assert answer == {"algorithm": "pdm", "certificate": {"certified_gap": None}, "version": 7}


def test_the_weights_endpoint_gives_a_document_that_answers_as_the_api_does(api: Api) -> None:
    status, document, _ = api.request("GET", "/model/weights")
    assert status == 200 and document["version"] == 7 and document["kind"] == "binary"
    assert document["certificate"] == {"certified_gap": None}  # as /model says it
    lines = b"1:0.5 3:-2\n2:1 6:0.25\n4:3\n"
    status, answer, _ = api.request("POST", "/predict", lines)
    assert status == 200
    rows = decode(lines, "svmlight")
    reloaded = load_json(document).scores((rows.indptr, rows.indices, rows.values))
    assert reloaded.tolist() == [p["score"] for p in answer["predictions"]]
    assert api.request("GET", "/model/weights?key=a")[0] == 400  # one model: no key


def test_a_token_is_asked_for_everywhere_but_the_description() -> None:
    for api in serve(trained(), token=TOKEN):
        status, _, response = api.request("POST", "/predict", b"1:1")
        assert status == 401 and response.getheader("WWW-Authenticate") == "Bearer"
        assert api.request("POST", "/predict", b"1:1", token="wrong")[0] == 401
        assert api.request("POST", "/predict", b"1:1", token=TOKEN)[0] == 200
        assert api.request("GET", "/model", token=TOKEN)[0] == 200
        assert api.request("GET", "/model")[0] == 401
        assert api.request("GET", "/openapi.json")[0] == 200


def test_the_description_lists_exactly_the_routes(api: Api) -> None:
    status, document, _ = api.request("GET", "/openapi.json")
    assert status == 200 and document == json.loads(json.dumps(openapi_document(1 << 16)))
    served = {"/predict": {"post"}, "/learn": {"post"}, "/model": {"get"},
              "/model/weights": {"get"}, "/openapi.json": {"get"}}  # fmt: skip
    assert {path: set(item) for path, item in document["paths"].items()} == served
    for path, methods in served.items():
        for method in methods:
            responses = document["paths"][path][method]["responses"]
            assert "200" in responses


def test_a_slow_body_gets_408_and_learning_goes_on(learning: Api) -> None:
    with Turns(learning) as turns, socket.create_connection(("127.0.0.1", learning.port)) as sock:
        sock.sendall(
            b"POST /learn HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 100\r\n\r\n+1 1:1\n"
        )
        status, answer, _ = learning.request("POST", "/learn", b"-1 2:1\n")  # others go on
        assert status == 200 and answer["learned"] == 1
        sock.settimeout(30)
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 408")
    assert [rows.labels.tolist() for rows in turns.learned] == [[-1.0]]


def test_predict_waits_for_a_fresher_copy_when_the_model_moved() -> None:
    now = [100.0]
    live = LiveModel(clock=lambda: now[0])
    model = trained()
    for api in serve(model, live=live):
        now[0] += 10.0  # the copy is 10 s old, and the daemon's model has moved since

        def daemon_turns() -> None:
            while not live.wanted(12, 0.05):
                time.sleep(0.001)
            live.publish(Published(12, model.predictor()))

        thread = threading.Thread(target=daemon_turns)
        thread.start()
        status, answer, _ = api.request("POST", "/predict", b"1:1")
        thread.join(5)
        assert status == 200 and answer["version"] == 12


def test_a_fresh_copy_answers_at_once_and_an_idle_daemon_is_not_asked() -> None:
    now = [100.0]
    live = LiveModel(clock=lambda: now[0])
    for api in serve(trained(), live=live):
        now[0] += 10.0  # old, but the model has not moved: still the model
        assert api.request("POST", "/predict", b"1:1")[1]["version"] == 7
        assert not live.wanted(7, 0.05)
        now[0] += 60.0  # readers gone: a moved model is not copied for nobody
        assert not live.wanted(9, 0.05)


def test_json_gives_features_by_index_or_by_name_not_both(api: Api) -> None:
    both = {"indices": [0], "values": [1.0], "features": {"age": 2.0}}
    status, answer, _ = api.request("POST", "/predict", json.dumps(both).encode(),
                                    "application/json")  # fmt: skip
    assert status == 400 and answer["rejected"][0]["reason"] == "bad message"


def test_a_daemon_of_one_model_refuses_a_key(api: Api) -> None:
    status, answer, _ = api.request("POST", "/predict?key=tenant-1", b"1:0.5 3:-2\n")
    assert status == 400 and "drop the key" in answer["error"]
    status, answer, _ = api.request("GET", "/model?key=tenant-1")
    assert status == 400 and "--model-key" in answer["error"]
