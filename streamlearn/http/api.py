"""The HTTP API on the live model: POST /predict, POST /learn, GET /model and GET
/openapi.json (the description of them all, :mod:`streamlearn.http.openapi`).

Bodies are svmlight lines (``text/plain``), JSON (``application/json``) or msgpack
(``application/msgpack``), one or many examples, in the schema of Kafka messages
(``streamlearn.parse.messages``): JSON examples give ``indices`` and ``values``, or
``features`` by name, hashed as the river adapters hash them. A request is taken whole or
refused whole: a body with a line the parser rejects gets 400 and the rejected lines.

- ``/predict`` answers every example with the model's latest published copy
  (``streamlearn.http.live``), never a half-learned one, and says its version.
- ``/learn`` (when the daemon allows it) queues labelled examples; the daemon learns them
  in the order they came, between two batches of its stream, and the answer comes once
  they are learned (with the version that holds them: a later /predict sees them).
- ``/model`` describes the model: algorithm, parameters, examples, the certificate.

Errors are JSON objects ``{"error": "..."}`` with a 4xx status (5xx when the daemon cannot
answer), each counted by the observer (``streamlearn_http_requests_total``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import numpy as np
from aiohttp import web

from streamlearn.http.auth import authorized
from streamlearn.http.live import BusyError, ClosedError, LiveModel, Published
from streamlearn.http.openapi import openapi_document
from streamlearn.http.server import BODY_TIMEOUT, MAX_BODY, application, read_body
from streamlearn.parse import ParsedRows, Rejected

log = logging.getLogger("streamlearn.http")

#: the formats bodies may have, by content type
BODY_FORMATS = {
    "text/plain": "svmlight",
    "text/svmlight": "svmlight",
    "text/x-svmlight": "svmlight",
    "application/json": "json",
    "application/msgpack": "msgpack",
    "application/x-msgpack": "msgpack",
    "application/vnd.msgpack": "msgpack",
}
#: seconds /learn waits for the daemon to learn what it queued
LEARN_TIMEOUT = 60.0
#: seconds /predict waits for a fresher copy of the model before it answers with the last
REFRESH_TIMEOUT = 1.0
#: rejected lines shown in an answer, at most
SHOWN_REJECTED = 20
#: the API's paths, and what the metrics call a request to another
ENDPOINTS = ("/predict", "/learn", "/model", "/openapi.json")
OTHER_ENDPOINT = "other"
#: what aiohttp's own errors say
_AIOHTTP_MESSAGES = {
    404: "no such endpoint: {path} (see /openapi.json)",
    405: "{path} does not take this method (see the Allow header)",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class HttpObserver(Protocol):
    """What the API reports (``streamlearn.metrics.DaemonMetrics`` is one)."""

    def observe_http(self, endpoint: str, status: int, seconds: float) -> None: ...


class Decode(Protocol):
    """Body bytes in a format (``svmlight``, ``json``, ``msgpack``) to parsed rows."""

    def __call__(self, body: bytes, body_format: str) -> ParsedRows: ...


def api_app(
    live: LiveModel,
    decode: Decode,
    *,
    learn: bool = False,
    token: str | None = None,
    observer: HttpObserver | None = None,
    max_body: int = MAX_BODY,
    body_timeout: float = BODY_TIMEOUT,
    learn_timeout: float = LEARN_TIMEOUT,
) -> web.Application:
    """The API application over ``live`` (see the module doc); ``learn`` allows POST
    /learn, ``token`` asks every request for it (but /openapi.json)."""
    api = _Api(live, decode, learn=learn, body_timeout=body_timeout, learn_timeout=learn_timeout)
    app = application(max_body=max_body)
    app.middlewares.append(_middleware(token, observer))
    app.router.add_post("/predict", api.predict)
    app.router.add_post("/learn", api.learn)
    app.router.add_get("/model", api.model)
    document = json.dumps(openapi_document(max_body)).encode()

    async def openapi(request: web.Request) -> web.Response:
        return web.Response(body=document, content_type="application/json")

    app.router.add_get("/openapi.json", openapi)
    return app


class _Api:
    """The handlers."""

    def __init__(
        self,
        live: LiveModel,
        decode: Decode,
        *,
        learn: bool,
        body_timeout: float,
        learn_timeout: float,
    ) -> None:
        self.live = live
        self.body_timeout = body_timeout
        self.decode = decode
        self.learn_allowed = learn
        self.learn_timeout = learn_timeout

    async def predict(self, request: web.Request) -> web.Response:
        rows = await self._rows(request)
        published = await self._fresh()
        answers = published.predictor.answer((rows.indptr, rows.indices, rows.values))
        return _json({"version": published.version, "predictions": answers}, checked=False)

    async def learn(self, request: web.Request) -> web.Response:
        if not self.learn_allowed:
            raise _error(web.HTTPForbidden, "learning over HTTP is off (serve --http-learn)")
        rows = await self._rows(request)
        unlabelled = rows.line_numbers[np.diff(rows.label_ptr) == 0].tolist()
        if unlabelled:
            rejected = [Rejected(line, "no label", "") for line in unlabelled]
            raise _error(web.HTTPBadRequest, "an example to learn needs a label", rejected)
        try:
            future = self.live.post(rows)
        except BusyError as exc:
            retry = {"Retry-After": "1"}
            raise _error(web.HTTPServiceUnavailable, str(exc), headers=retry) from None
        except ClosedError as exc:
            raise _error(web.HTTPServiceUnavailable, str(exc)) from None
        try:
            async with asyncio.timeout(self.learn_timeout):
                learned = await asyncio.wrap_future(future)
        except TimeoutError:
            raise _error(
                web.HTTPGatewayTimeout,
                f"not learned within {self.learn_timeout:g} s; they stay queued and the "
                "daemon learns them when it can",
            ) from None
        except ClosedError as exc:
            raise _error(web.HTTPServiceUnavailable, str(exc)) from None
        document: dict[str, Any] = {"learned": learned.learned, "version": learned.version}
        if learned.rejected:
            document["rejected"] = _rejected(learned.rejected)
            return _json(document, status=422)
        return _json(document)

    async def model(self, request: web.Request) -> web.Response:
        description = self.live.description()
        published = self.live.published()
        if published is None or not description:
            raise _error(web.HTTPServiceUnavailable, "the model is not loaded yet")
        return _json({**description, "version": published.version})

    async def _fresh(self) -> Published:
        """The published copy, or a fresher one when it is old and the model moved."""
        live = self.live
        published = live.published()
        if published is not None and live.is_fresh(published):
            return published
        try:
            async with asyncio.timeout(REFRESH_TIMEOUT):
                return await asyncio.wrap_future(live.refresh())
        except (TimeoutError, ClosedError):  # the daemon is busy or stopping: the last copy
            if published is None:
                raise _error(web.HTTPServiceUnavailable, "the model is not loaded yet") from None
            return published

    async def _rows(self, request: web.Request) -> ParsedRows:
        """The examples of the body, all of them parsed (400 otherwise)."""
        body_format = BODY_FORMATS.get(request.content_type)
        if body_format is None:
            raise _error(
                web.HTTPUnsupportedMediaType,
                f"content type {request.content_type!r}: send text/plain (svmlight lines), "
                "application/json or application/msgpack",
            )
        body = await read_body(request, self.body_timeout)
        rows = self.decode(body, body_format)
        if rows.rejected:
            raise _error(web.HTTPBadRequest, "the body holds examples that cannot be read",
                         rows.rejected)  # fmt: skip
        if rows.n_rows == 0:
            raise _error(web.HTTPBadRequest, "the body holds no example")
        return rows


def _middleware(token: str | None, observer: HttpObserver | None) -> Any:
    """Authentication, JSON errors and the observer's counts, around every handler."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        endpoint = request.path if request.path in ENDPOINTS else OTHER_ENDPOINT
        status = 500
        try:
            asked = token is not None and endpoint != "/openapi.json"
            if asked and not authorized(request.headers.get("Authorization"), token or ""):
                raise _error(web.HTTPUnauthorized, "a bearer token is required",
                             headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            if exc.content_type == "application/json":
                raise
            # aiohttp's own (404, 405, 413): the same status, with a JSON body
            message = _AIOHTTP_MESSAGES.get(status, (exc.text or exc.reason).strip())
            response = _json({"error": message.format(path=request.path)}, status=status)
            if "Allow" in exc.headers:
                response.headers["Allow"] = exc.headers["Allow"]
            return response
        except asyncio.CancelledError:
            status = 499  # the client went away
            raise
        except Exception:
            log.exception("HTTP %s %s failed", request.method, request.path)
            raise _error(web.HTTPInternalServerError, "internal error (see the log)") from None
        finally:
            if observer is not None:
                observer.observe_http(endpoint, status, time.perf_counter() - started)

    return middleware


def _error(
    kind: type[web.HTTPException],
    message: str,
    rejected: list[Rejected] | None = None,
    *,
    headers: dict[str, str] | None = None,
) -> web.HTTPException:
    document: dict[str, Any] = {"error": message}
    if rejected:
        document["rejected"] = _rejected(rejected)
    return kind(text=json.dumps(document), content_type="application/json", headers=headers)


def _rejected(rejected: list[Rejected]) -> list[dict[str, Any]]:
    shown = [{"line": r.line, "reason": r.reason, "text": r.text} for r in rejected]
    return shown[:SHOWN_REJECTED]


def _json(document: dict[str, Any], status: int = 200, *, checked: bool = True) -> web.Response:
    """A JSON answer; ``checked=False`` for documents that are finite but for rare
    overflows (answers), which are then made finite too."""
    try:
        body = json.dumps(_finite(document) if checked else document, allow_nan=False)
    except ValueError:  # a non-finite number
        body = json.dumps(_finite(document), allow_nan=False)
    return web.Response(text=body, status=status, content_type="application/json")


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float as None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
