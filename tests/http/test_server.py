"""The HTTP server's limits: idle and slow clients are cut off, clients that vanish are
no error, and connections cost no thread."""

from __future__ import annotations

import logging
import os
import socket
import struct
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from aiohttp import web

from streamlearn.http.server import HttpServer


async def hello(request: web.Request) -> web.Response:
    return web.Response(text="hello\n" * 1000)


@pytest.fixture
def served() -> Iterator[int]:
    app = web.Application()
    app.router.add_get("/", hello)
    server = HttpServer(idle_timeout=0.5)
    port = server.serve(app, "127.0.0.1", 0)
    yield port
    server.stop()


def closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the server closes ``sock`` (fails after ``seconds``)."""
    started = time.monotonic()
    sock.settimeout(seconds)
    while sock.recv(4096):
        pass
    return time.monotonic() - started


def test_a_client_that_never_finishes_its_request_head_is_cut_off(served: int) -> None:
    with socket.create_connection(("127.0.0.1", served)) as silent:
        assert closed_within(silent, 10.0) < 5.0
    with socket.create_connection(("127.0.0.1", served)) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\n")
        for _ in range(3):  # a header line now and then does not keep it open
            time.sleep(0.2)
            slow.sendall(b"X-Slow: 1\r\n")
        assert closed_within(slow, 10.0) < 5.0


def test_clients_that_reset_their_connection_leave_no_trace(
    served: int, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    for _ in range(100):
        sock = socket.create_connection(("127.0.0.1", served))
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        # RST instead of FIN: the answer being written meets a reset connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    with urllib.request.urlopen(f"http://127.0.0.1:{served}/", timeout=5) as response:
        assert response.status == 200  # still serving
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert capfd.readouterr().err == ""


def test_open_connections_cost_no_thread(served: int) -> None:
    before = threading.active_count()
    sockets = [socket.create_connection(("127.0.0.1", served)) for _ in range(200)]
    try:
        for sock in sockets[:50]:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        with urllib.request.urlopen(f"http://127.0.0.1:{served}/", timeout=5) as response:
            assert response.status == 200
        assert threading.active_count() == before
    finally:
        for sock in sockets:
            sock.close()


def test_an_address_in_use_raises_and_stop_frees_it() -> None:
    app = web.Application()
    first = HttpServer()
    port = first.serve(app, "127.0.0.1", 0)
    second = HttpServer()
    with pytest.raises(OSError):
        second.serve(web.Application(), "127.0.0.1", port)
    second.stop()
    first.stop()
    first.stop()  # twice is harmless
    again = HttpServer()
    assert again.serve(web.Application(), "127.0.0.1", port) == port
    again.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_the_serving_thread_runs_below_the_process_priority() -> None:
    seen: list[int] = []

    async def priority(request: web.Request) -> web.Response:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", priority)
    server = HttpServer(nice=3)
    port = server.serve(app, "127.0.0.1", 0)
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).close()
    finally:
        server.stop()
    process = os.getpriority(os.PRIO_PROCESS, 0)
    assert seen == [min(19, process + 3)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == process  # ours
