"""Examples with an id on the HTTP API: kept by /predict, labelled by /learn; what each
refuses, and why."""

from __future__ import annotations

import json
from collections.abc import Iterator

import msgpack
import pytest
from test_api import Api, serve, trained

from streamlearn.http.live import LiveModel
from streamlearn.http.pending import SharedPending
from streamlearn.pending import PendingExamples

EXAMPLE = {"indices": [0, 2], "values": [1.0, 0.5]}


@pytest.fixture
def keeping() -> Iterator[Api]:
    live = LiveModel(max_pending=50, pending=SharedPending(PendingExamples(10, 3600.0)))
    yield from serve(trained(), learn=True, live=live)


def post(api: Api, path: str, document: object) -> tuple[int, dict[str, object]]:
    status, answer, _ = api.request("POST", path, json.dumps(document).encode(),
                                    "application/json")  # fmt: skip
    return status, answer


def test_predict_keeps_examples_with_ids_and_answers_as_without(keeping: Api) -> None:
    plain = post(keeping, "/predict", [EXAMPLE, EXAMPLE])
    status, answer = post(keeping, "/predict", [{**EXAMPLE, "id": "a"}, {**EXAMPLE, "id": 7}])
    assert status == 200 and answer == plain[1]
    assert keeping.live.pending is not None
    assert keeping.live.pending.counts()["examples"] == 2
    # msgpack carries ids too
    body = msgpack.packb({"examples": [{**EXAMPLE, "id": "m"}]})
    assert keeping.request("POST", "/predict", body, "application/msgpack")[0] == 200
    assert keeping.live.pending.counts()["examples"] == 3


def test_an_id_taken_is_refused_whole(keeping: Api) -> None:
    assert post(keeping, "/predict", [{**EXAMPLE, "id": "a"}])[0] == 200
    status, answer = post(keeping, "/predict", [{**EXAMPLE, "id": "b"}, {**EXAMPLE, "id": "a"}])
    assert status == 409
    assert answer["rejected"] == [{"line": 2, "reason": "id pending", "text": "a"}]
    status, answer = post(keeping, "/predict", [{**EXAMPLE, "id": "c"}, {**EXAMPLE, "id": "c"}])
    assert status == 409 and answer["rejected"][0]["reason"] == "id twice"
    assert keeping.live.pending is not None
    assert keeping.live.pending.counts()["examples"] == 1  # nothing of them kept


@pytest.mark.parametrize("bad", [True, "", 1.5, None, [1], "x" * 257])
def test_a_bad_id_is_refused(keeping: Api, bad: object) -> None:
    status, answer = post(keeping, "/predict", [{**EXAMPLE, "id": bad}])
    assert status == 400 and "an id is" in str(answer["error"])


def test_a_daemon_that_keeps_no_example_by_id_ignores_ids_as_before() -> None:
    for api in serve(trained(), learn=True):
        plain = post(api, "/predict", [EXAMPLE])
        assert post(api, "/predict", [{**EXAMPLE, "id": "a"}]) == plain
        assert post(api, "/predict", [{**EXAMPLE, "id": True}]) == plain
        # a label by id is an example without features, which the decoder refuses
        status, answer = post(api, "/learn", [{"id": "a", "label": 1}])
        assert status == 400 and answer["rejected"][0]["reason"] == "bad message"


def test_a_label_by_id_has_no_features_and_a_body_does_not_mix(keeping: Api) -> None:
    status, answer = post(keeping, "/learn", [{"id": "a", "label": 1},
                                             {**EXAMPLE, "label": 1}])  # fmt: skip
    assert status == 400 and answer["rejected"][0]["line"] == 2
    status, answer = post(keeping, "/learn", [{"id": "a", "label": 1, **EXAMPLE}])
    assert status == 400 and answer["rejected"][0]["reason"] == "bad message"
    status, answer = post(keeping, "/learn", [{"id": "a"}])
    assert status == 400 and answer["rejected"][0]["reason"] == "bad label"
    status, answer = post(keeping, "/learn", [{"id": False, "label": 1}])
    assert status == 400 and answer["rejected"][0]["reason"] == "bad id"
