"""The daemon's operations address: GET /metrics, /healthz, /readyz and POST /checkpoint.

With a token (the API's, :mod:`streamlearn.http.auth`), a request that changes
something (any method but GET, HEAD and OPTIONS: ``POST /checkpoint``) must carry it
as the API's requests do (401 otherwise); what only reads stays open to scrapers.

>>> class Metrics:
...     def render(self) -> tuple[bytes, str]:
...         return b"up 1\\n", "text/plain; version=0.0.4; charset=utf-8"
>>> from streamlearn.http.server import HttpServer
>>> server = HttpServer()
>>> port = server.serve(ops_app(Metrics(), ready=lambda: True,
...                             request_checkpoint=lambda: None), "127.0.0.1", 0)
>>> import urllib.request
>>> urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read()
b'up 1\\n'
>>> server.stop()
>>> port = server.serve(ops_app(Metrics(), ready=lambda: True,
...                             request_checkpoint=lambda: None, token="s3cret"), "127.0.0.1", 0)
>>> urllib.request.urlopen(f"http://127.0.0.1:{port}/checkpoint", data=b"")
Traceback (most recent call last):
...
urllib.error.HTTPError: HTTP Error 401: Unauthorized
>>> request = urllib.request.Request(f"http://127.0.0.1:{port}/checkpoint", data=b"",
...                                  headers={"Authorization": "Bearer s3cret"})
>>> urllib.request.urlopen(request).status
202
>>> server.stop()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from streamlearn.http.auth import authorized
from streamlearn.http.server import application

#: the methods that only read: open without the token
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class MetricsRenderer(Protocol):
    """What /metrics serves: ``streamlearn.metrics.DaemonMetrics`` is one.

    A protocol rather than an import, since metrics and http are siblings in one layer.
    """

    def render(self) -> tuple[bytes, str]:
        """The exposition body and its content type."""
        ...


def ops_app(
    metrics: MetricsRenderer,
    *,
    ready: Callable[[], bool],
    request_checkpoint: Callable[[], None],
    checkpoints: bool = True,
    token: str | None = None,
) -> web.Application:
    """The operations application: metrics, liveness, readiness and a checkpoint request
    (409 when the daemon has no checkpoint directory: there is nothing to write); with
    ``token``, every request but a reading one must carry it."""

    async def get_metrics(request: web.Request) -> web.Response:
        body, content_type = metrics.render()
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        return response

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        if ready():
            return web.Response(text="ready\n")
        return web.Response(status=503, text="not ready\n")

    async def checkpoint(request: web.Request) -> web.Response:
        if not checkpoints:
            return web.Response(status=409, text="no checkpoint directory (--checkpoint-dir)\n")
        request_checkpoint()
        return web.Response(status=202, text="checkpoint requested\n")

    app = application(max_body=1 << 16)
    if token is not None:
        app.middlewares.append(_token_required(token))
    app.router.add_get("/metrics", get_metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_post("/checkpoint", checkpoint)
    return app


def _token_required(token: str) -> Middleware:
    """A middleware that answers 401 to a request that changes something without
    ``Authorization: Bearer <token>`` (compared in constant time, as the API does)."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in READING_METHODS or authorized(
            request.headers.get("Authorization"), token
        ):
            return await handler(request)
        return web.Response(status=401, text="a bearer token is required\n",
                            headers={"WWW-Authenticate": "Bearer"})  # fmt: skip

    return guard
