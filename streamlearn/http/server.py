"""One asyncio event loop in one background thread that serves aiohttp applications.

Every connection is a coroutine of that loop, not a thread: many slow or idle clients
cost memory, never threads. Limits, the same for every application:

- a connection that has not sent a whole request head within ``idle_timeout`` seconds
  of opening, or after its last answer, is closed (aiohttp's keep-alive time-out, which
  it starts when a connection opens);
- a body larger than ``max_body`` bytes is refused with 413 (aiohttp's
  ``client_max_size``), and handlers read bodies within ``body_timeout`` seconds
  (:func:`read_body`: 408 when a client sends too slowly);
- a client that goes away mid-answer is not an error of the server: nothing is logged
  for it;
- with ``nice`` (Linux), the thread runs that much below the process's priority, so
  that a flood of requests takes CPU time from the rest of the process (a daemon's
  learning) only when there is time to spare.

>>> from aiohttp import web
>>> async def hello(request: web.Request) -> web.Response:
...     return web.Response(text="hello")
>>> app = web.Application()
>>> _ = app.router.add_get("/", hello)
>>> server = HttpServer()
>>> port = server.serve(app, "127.0.0.1", 0)
>>> import urllib.request
>>> urllib.request.urlopen(f"http://127.0.0.1:{port}/").read()
b'hello'
>>> server.stop()
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from aiohttp import web

T = TypeVar("T")
#: a request handler of aiohttp's low-level server
Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]

#: seconds a connection may stay without a whole request head (new or between requests)
IDLE_TIMEOUT = 15.0
#: seconds a handler waits for a request body
BODY_TIMEOUT = 10.0
#: bytes of the largest request body
MAX_BODY = 4 << 20
#: seconds :meth:`HttpServer.stop` gives open requests to finish (an answer takes
#: milliseconds; a stop of the daemon has 5 s in all)
SHUTDOWN_TIMEOUT = 0.5


async def read_body(request: web.BaseRequest, timeout: float = BODY_TIMEOUT) -> bytes:
    """The request's body, read within ``timeout`` seconds (408 after it; 413 when it is
    larger than the application's ``client_max_size``)."""
    if request.content.is_eof():  # all here already (a small body): nothing to wait for
        return await request.read()
    try:
        async with asyncio.timeout(timeout):
            return await request.read()
    except TimeoutError:
        raise web.HTTPRequestTimeout(
            text=f"the request body did not arrive within {timeout:g} s\n"
        ) from None


def application(*, max_body: int = MAX_BODY) -> web.Application:
    """A new aiohttp application with the server's body limit."""
    return web.Application(client_max_size=max_body)


class HttpServer:
    """aiohttp applications served from one event loop on one background thread.

    :meth:`serve` binds an application to an address (port 0: a free one, returned);
    :meth:`stop` closes every address and ends the thread.
    """

    def __init__(self, *, idle_timeout: float = IDLE_TIMEOUT, nice: int = 0) -> None:
        self.idle_timeout = idle_timeout
        self.nice = nice
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runners: list[web.BaseRunner] = []

    def serve(self, app: web.Application, host: str, port: int) -> int:
        """Serve ``app`` on ``host:port`` (starting the loop's thread at the first call);
        returns the bound port. Raises :class:`OSError` when the address cannot be bound."""
        if self._loop is None:
            self._start_loop()
        return self._call(self._add(web.AppRunner(app, **self._runner_options()), host, port))

    def serve_handler(
        self, handler: Handler, host: str, port: int, *, max_body: int = MAX_BODY
    ) -> int:
        """Serve one request ``handler`` (aiohttp's low-level server: it routes itself) on
        ``host:port``, with bodies of at most ``max_body`` bytes; returns the bound port."""
        if self._loop is None:
            self._start_loop()
        return self._call(self._add_handler(handler, host, port, max_body))

    def stop(self) -> None:
        """Close every address, finishing the requests under way (for a short while),
        and end the thread; does nothing when nothing was served."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self._call(self._close_all())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=SHUTDOWN_TIMEOUT + 5.0)
            loop.close()
            self._loop = self._thread = None

    def _start_loop(self) -> None:
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            if self.nice:
                lower_priority(self.nice)
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="streamlearn-http", daemon=True)
        thread.start()
        started.wait()
        self._loop, self._thread = loop, thread

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _runner_options(self) -> dict[str, Any]:
        return {
            "handle_signals": False,
            "access_log": None,
            "keepalive_timeout": self.idle_timeout,
            "shutdown_timeout": SHUTDOWN_TIMEOUT,
        }

    async def _add_handler(self, handler: Handler, host: str, port: int, max_body: int) -> int:
        loop = asyncio.get_running_loop()

        def request(
            message: Any, payload: Any, protocol: Any, writer: Any, task: Any
        ) -> web.BaseRequest:
            return web.BaseRequest(
                message, payload, protocol, writer, task, loop, client_max_size=max_body
            )

        options = self._runner_options()
        server = web.Server(
            handler,
            request_factory=request,
            access_log=None,
            keepalive_timeout=options.pop("keepalive_timeout"),
        )
        return await self._add(web.ServerRunner(server, **options), host, port)

    async def _add(self, runner: web.BaseRunner, host: str, port: int) -> int:
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runners.append(runner)
        return int(runner.addresses[-1][1])

    async def _close_all(self) -> None:
        runners, self._runners = self._runners, []
        for runner in runners:
            try:
                await runner.cleanup()
            except Exception as exc:  # one address's failure must not keep the others open
                logging.getLogger(__name__).error("closing an HTTP address failed: %r", exc)
        # connections still open (an idle keep-alive, a slow client) end with the loop
        left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)


def lower_priority(nice: int) -> None:
    """Lower the calling thread's scheduling priority by ``nice`` (Linux schedules threads
    one by one; elsewhere, and where it is refused, this says so and does nothing)."""
    log = logging.getLogger(__name__)
    if not sys.platform.startswith("linux"):
        log.info("the HTTP thread's priority stays the process's: not on Linux")
        return
    thread = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, current + nice))
    except OSError as exc:
        log.warning("could not lower the HTTP thread's priority: %s", exc)
