"""The daemon's HTTP endpoint: /metrics, /healthz, /readyz and POST /checkpoint.

A ``ThreadingHTTPServer`` in a daemon thread, bound to 127.0.0.1 unless told otherwise;
port 0 picks a free port, which :attr:`HttpEndpoint.port` then gives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol


class MetricsRenderer(Protocol):
    """What /metrics serves: ``streamlearn.metrics.DaemonMetrics`` is one.

    A protocol rather than an import, since metrics and http are siblings in one layer.
    """

    def render(self) -> tuple[bytes, str]:
        """The exposition body and its content type."""
        ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], endpoint: HttpEndpoint) -> None:
        self.endpoint = endpoint
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        endpoint = self.server.endpoint
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            body, content_type = endpoint.metrics.render()
            self._reply(HTTPStatus.OK, body, content_type)
        elif path == "/healthz":
            self._reply(HTTPStatus.OK, b"ok\n")
        elif path == "/readyz":
            if endpoint.ready():
                self._reply(HTTPStatus.OK, b"ready\n")
            else:
                self._reply(HTTPStatus.SERVICE_UNAVAILABLE, b"not ready\n")
        else:
            self._reply(HTTPStatus.NOT_FOUND, b"not found\n")

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] == "/checkpoint":
            self.server.endpoint.request_checkpoint()
            self._reply(HTTPStatus.ACCEPTED, b"checkpoint requested\n")
        else:
            self._reply(HTTPStatus.NOT_FOUND, b"not found\n")

    def _reply(
        self, status: HTTPStatus, body: bytes, content_type: str = "text/plain; charset=utf-8"
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: a scrape every few seconds would fill the daemon's stderr."""


class HttpEndpoint:
    """Serve the daemon's metrics and health checks from a background thread.

    >>> class Metrics:
    ...     def render(self) -> tuple[bytes, str]:
    ...         return b"up 1\\n", "text/plain"
    >>> endpoint = HttpEndpoint("127.0.0.1", 0, metrics=Metrics(), ready=lambda: True,
    ...                         request_checkpoint=lambda: None).start()
    >>> endpoint.port > 0
    True
    >>> endpoint.stop()
    """

    def __init__(
        self,
        address: str,
        port: int,
        *,
        metrics: MetricsRenderer,
        ready: Callable[[], bool],
        request_checkpoint: Callable[[], None],
    ) -> None:
        self.address = address
        self.metrics = metrics
        self.ready = ready
        self.request_checkpoint = request_checkpoint
        self._requested_port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the one asked for, or the free one picked for port 0)."""
        if self._server is None:
            return self._requested_port
        return int(self._server.server_address[1])

    def start(self) -> HttpEndpoint:
        """Bind and serve in a daemon thread; returns self."""
        if self._server is not None:
            raise RuntimeError("the HTTP endpoint is already started")
        self._server = _Server((self.address, self._requested_port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="streamlearn-http", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; does nothing if not started."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None
