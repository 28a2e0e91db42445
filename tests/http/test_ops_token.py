"""The operations address asks for the API's token before it does anything: POST
/checkpoint with a token set needs ``Authorization: Bearer <token>`` (401 otherwise,
nothing requested), while /metrics, /healthz and /readyz stay open to scrapers. Before,
anyone who reached the metrics address could make the daemon write checkpoints."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from services import OpsEndpoint, free_port, wait_for

TOKEN = "s3cret-token"


class Metrics:
    def render(self) -> tuple[bytes, str]:
        return b"up 1\n", "text/plain; version=0.0.4; charset=utf-8"


def ask(
    port: int, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(method, path, body=b"" if method == "POST" else None, headers=headers or {})
    response = connection.getresponse()
    response.read()
    connection.close()
    return response.status, dict(response.getheaders())


@pytest.fixture
def guarded() -> Iterator[tuple[OpsEndpoint, list[int]]]:
    requests: list[int] = []
    endpoint = OpsEndpoint("127.0.0.1", 0, metrics=Metrics(), ready=lambda: True,
                           request_checkpoint=lambda: requests.append(1), token=TOKEN)  # fmt: skip
    endpoint.start()
    yield endpoint, requests
    endpoint.stop()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": "Bearer"},
    ],
    ids=["none", "wrong", "longer", "basic", "no scheme", "empty"],
)
def test_a_checkpoint_request_without_the_token_is_refused(
    guarded: tuple[OpsEndpoint, list[int]], headers: dict[str, str]
) -> None:
    endpoint, requests = guarded
    status, answer = ask(endpoint.port, "POST", "/checkpoint", headers)
    assert status == 401 and answer["WWW-Authenticate"] == "Bearer"
    assert requests == []


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])
def test_a_checkpoint_request_with_the_token_is_taken(
    guarded: tuple[OpsEndpoint, list[int]], scheme: str
) -> None:
    endpoint, requests = guarded
    assert (
        ask(endpoint.port, "POST", "/checkpoint", {"Authorization": f"{scheme} {TOKEN}"})[0] == 202
    )
    assert requests == [1]


def test_what_only_reads_stays_open(guarded: tuple[OpsEndpoint, list[int]]) -> None:
    endpoint, _ = guarded
    for path in ("/metrics", "/healthz", "/readyz"):
        assert ask(endpoint.port, "GET", path)[0] == 200
        assert ask(endpoint.port, "HEAD", path)[0] == 200


def test_any_other_change_needs_the_token_too(guarded: tuple[OpsEndpoint, list[int]]) -> None:
    endpoint, requests = guarded
    for method, path in (("POST", "/metrics"), ("PUT", "/checkpoint"), ("DELETE", "/x")):
        assert ask(endpoint.port, method, path)[0] == 401
    assert ask(endpoint.port, "POST", "/nothing", {"Authorization": f"Bearer {TOKEN}"})[0] == 404
    assert requests == []


def test_without_a_token_the_address_is_as_before() -> None:
    requests: list[int] = []
    endpoint = OpsEndpoint("127.0.0.1", 0, metrics=Metrics(), ready=lambda: True,
                           request_checkpoint=lambda: requests.append(1)).start()  # fmt: skip
    try:
        assert ask(endpoint.port, "POST", "/checkpoint")[0] == 202
    finally:
        endpoint.stop()
    assert requests == [1]


@pytest.mark.parametrize("api", ["on", "off"])
def test_serve_asks_for_the_token_on_its_metrics_address(tmp_path: Path, api: str) -> None:
    """A real ``serve`` with ``STREAMLEARN_HTTP_TOKEN`` set, its API on or off: a request
    for a checkpoint without the token writes none; with it, one is written."""
    metrics_port = free_port()
    directory = tmp_path / "ckpt"
    http_addr = "127.0.0.1:0" if api == "on" else "off"
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        [sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--delta", "1",
         "--checkpoint-dir", str(directory), "--checkpoint-interval", "1h",
         "--metrics-addr", f"127.0.0.1:{metrics_port}", "--http-addr", http_addr],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
        env={**os.environ, "STREAMLEARN_HTTP_TOKEN": TOKEN},
    )  # fmt: skip
    assert serve.stdin is not None
    try:
        serve.stdin.write(b"+1 1:1\n-1 2:1\n")
        serve.stdin.flush()

        def ready() -> bool:
            try:
                return ask(metrics_port, "GET", "/readyz")[0] == 200
            except OSError:
                assert serve.poll() is None, (tmp_path / "serve.log").read_text()
                return False

        wait_for(ready, timeout=60, what="serve to be ready")
        assert ask(metrics_port, "POST", "/checkpoint")[0] == 401
        assert ask(metrics_port, "POST", "/checkpoint", {"Authorization": "Bearer no"})[0] == 401
        assert ask(metrics_port, "GET", "/metrics")[0] == 200
        time.sleep(0.5)  # turns of the daemon (its poll waits 0.2 s at most)
        assert not list(directory.glob("checkpoint-*.ckpt"))
        authorized = {"Authorization": f"Bearer {TOKEN}"}
        assert ask(metrics_port, "POST", "/checkpoint", authorized)[0] == 202
        wait_for(lambda: list(directory.glob("checkpoint-*.ckpt")), timeout=30,
                 what="the checkpoint asked for")  # fmt: skip
    finally:
        serve.stdin.close()
        code = serve.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "serve.log").read_text()
