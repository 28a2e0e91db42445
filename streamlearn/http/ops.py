"""The daemon's operations address: GET /metrics, /healthz, /readyz and POST /checkpoint.

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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from aiohttp import web

from streamlearn.http.server import application


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
) -> web.Application:
    """The operations application: metrics, liveness, readiness and a checkpoint request
    (409 when the daemon has no checkpoint directory: there is nothing to write)."""

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
    app.router.add_get("/metrics", get_metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_post("/checkpoint", checkpoint)
    return app
