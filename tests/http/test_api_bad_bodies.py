"""Bodies the API cannot read get 400 with the reason, never 500: the inputs of issue 36
through the real aiohttp handler, for /predict and /learn."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import msgpack
import pytest
from test_api import Api, Turns, serve, trained

DEEP_JSON = b"[" * 100_000
LONG_LABEL = b'{"indices": [1], "values": [1.0], "label": ' + b"9" * 400 + b"}"
THREE_LINES = b"-1 2:1 6:7 10:3\n-1 2:1 10:1\n1 2:1 6:2 10:1e120\n"


@pytest.fixture(scope="module")
def learning() -> Iterator[Api]:
    yield from serve(trained(), learn=True, max_body=1 << 20)


@pytest.mark.parametrize("path", ["/predict", "/learn"])
@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (DEEP_JSON, "application/json", "bad message"),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", "bad message"),
        (LONG_LABEL, "application/json", "bad label"),
        (
            b'{"indices": [1], "values": [' + b"9" * 400 + b"]}",
            "application/json",
            "not a finite value",
        ),
        (b'{"features": {"\\ud800": 1e30}, "label": 1}', "application/json", "values too large"),
        (b"\x91" * 100_000 + b"\x90", "application/msgpack", "bad message"),
        (b"\xdd\xff\xff\xff\xff", "application/msgpack", "bad message"),
        (
            msgpack.packb({"indices": [1], "values": [1e26], "label": 1}),
            "application/msgpack",
            "values too large",
        ),
        (THREE_LINES, "text/plain", "values too large"),
    ],
)
def test_an_unreadable_body_is_400_with_its_reason(
    learning: Api, path: str, body: bytes, content_type: str, reason: str
) -> None:
    status, answer, _ = learning.request("POST", path, body, content_type)
    assert status == 400, answer
    assert reason in [r["reason"] for r in answer["rejected"]]
    assert all(r["reason"] for r in answer["rejected"])


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_body_that_is_not_in_its_content_encoding_is_400(learning: Api, encoding: str) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", learning.port, timeout=10)
    headers = {"Content-Type": "text/plain", "Content-Encoding": encoding}
    connection.request("POST", "/predict", body=b"1 1:1\n", headers=headers)
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == 400, answer
    assert answer["error"].startswith("the body cannot be read")


def test_no_request_of_these_was_a_server_error(learning: Api) -> None:
    learning.request("POST", "/learn", DEEP_JSON, "application/json")
    assert all(status < 500 for _, status in learning.observed.requests)


def test_the_two_readable_lines_of_the_three_are_learned() -> None:
    for api in serve(trained(), learn=True):
        with Turns(api) as turns:
            status, answer, _ = api.request("POST", "/learn", THREE_LINES[:-19])
            assert status == 200, answer
            assert answer["learned"] == 2
        (rows,) = turns.learned
        assert rows.n_rows == 2
