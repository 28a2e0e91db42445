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

A daemon that learns one model per message key (``serve --model-key``) answers
``/predict?key=K`` with the model of key ``K`` (its UTF-8 bytes), ``/learn?key=K``
teaches it (a key's model starts with its messages on the topic) and ``/model?key=K``
describes it; 404 when this daemon has no model of ``K``, 400 without a key. A daemon
of one model refuses a key (400).

Errors are JSON objects ``{"error": "..."}`` with a 4xx status (5xx when the daemon cannot
answer), each counted by the observer (``streamlearn_http_requests_total``). What the API
cannot read is 400, never 500: a body that breaks its own encoding, and every example
the decoders reject (nested too deep, numbers beyond float64, values too large...), with
the reason of each.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Protocol

import numpy as np
from aiohttp import web

from streamlearn.errors import InvalidInputError, UnknownKeyError
from streamlearn.http.auth import authorized
from streamlearn.http.live import BusyError, ClosedError, LiveModel, Published
from streamlearn.http.openapi import openapi_document
from streamlearn.http.server import BODY_TIMEOUT, MAX_BODY, Handler, read_body
from streamlearn.learn.export import document_of
from streamlearn.learn.predictor import finite
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.parse.ids import MAX_ID_CHARS, example_ids, labels_by_id, may_hold_ids
from streamlearn.parse.messages import read_document, unreadable_reason
from streamlearn.parse.svmlight import TEXT_CHARS

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


class HttpObserver(Protocol):
    """What the API reports (``streamlearn.metrics.DaemonMetrics`` is one)."""

    def observe_http(self, endpoint: str, status: int, seconds: float) -> None: ...


class Decode(Protocol):
    """Body bytes in a format (``svmlight``, ``json``, ``msgpack``) to parsed rows."""

    def __call__(self, body: bytes, body_format: str, /) -> ParsedRows: ...


def api_handler(
    live: LiveModel,
    decode: Decode,
    *,
    learn: bool = False,
    token: str | None = None,
    observer: HttpObserver | None = None,
    max_body: int = MAX_BODY,
    body_timeout: float = BODY_TIMEOUT,
    learn_timeout: float = LEARN_TIMEOUT,
) -> Handler:
    """The API over ``live`` (see the module doc), as one request handler for aiohttp's
    low-level server (:meth:`~streamlearn.http.server.HttpServer.serve_handler`: no
    application, router or middleware chain, which cost a tenth of a small request);
    ``learn`` allows POST /learn, ``token`` asks every request for it (but
    /openapi.json)."""
    api = _Api(live, decode, learn=learn, body_timeout=body_timeout, learn_timeout=learn_timeout)
    document = json.dumps(openapi_document(max_body)).encode()

    async def openapi(request: web.BaseRequest) -> web.Response:
        return web.Response(body=document, content_type="application/json")

    routes: dict[str, tuple[str, Handler]] = {
        "/predict": ("POST", api.predict),
        "/learn": ("POST", api.learn),
        "/model": ("GET", api.model),
        "/model/weights": ("GET", api.weights),
        "/openapi.json": ("GET", openapi),
    }

    async def route(request: web.BaseRequest) -> web.StreamResponse:
        found = routes.get(request.path)
        if found is None:
            raise _error(web.HTTPNotFound, f"no such endpoint: {request.path} (see /openapi.json)")
        method, handler = found
        if request.method != method and not (method == "GET" and request.method == "HEAD"):
            response = _json({"error": f"{request.path} takes {method}"}, status=405)
            response.headers["Allow"] = method
            return response
        return await handler(request)

    return _guarded(route, token, observer)


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

    async def predict(self, request: web.BaseRequest) -> web.Response:
        body, body_format = await self._read(request)
        rows = self._parsed(body, body_format)
        ids = self._ids(body, body_format)
        published = await self._fresh()
        predictor = published.predictor
        if _keyed(published):
            if ids is not None:
                raise _error(web.HTTPBadRequest, _KEYED_IDS)
            published, copy = await self._key_copy(request, published)
            predictor = copy.predictor
        elif "key" in request.query:
            raise _error(web.HTTPBadRequest, _ONE_MODEL)
        features = (rows.indptr, rows.indices, rows.values)
        if ids is not None:
            self._keep(ids, features, predictor)
        answers = predictor.answer_json(features)
        body = b'{"version": %d, "predictions": %b}' % (published.version, answers)
        return web.Response(body=body, content_type="application/json", charset="utf-8")

    def _ids(self, body: bytes, body_format: str) -> list[str | None] | None:
        """The ids of a /predict body's examples (None: it gives none, or the daemon
        keeps no example by id and ignores them, as any other key); 400 for a bad id."""
        if self.live.pending is None or body_format == "svmlight" or not may_hold_ids(body):
            return None
        try:
            ids = example_ids(read_document(body, body_format))
        except ValueError:
            raise _error(web.HTTPBadRequest, "an id is a non-empty string or an integer "
                         f"(of {MAX_ID_CHARS} characters at most)") from None  # fmt: skip
        if all(example_id is None for example_id in ids):
            return None
        return ids

    def _keep(self, ids: list[str | None], features: Any, predictor: Any) -> None:
        """Keep the examples that have an id with the label their prediction names (409
        for an id still waiting for its label or already labelled: nothing is kept)."""
        pending = self.live.pending
        assert pending is not None
        refused = pending.add(ids, features, predictor.predicted_labels(features), time.time())
        if refused:
            rejected = [Rejected(row, why, ids[row - 1] or "") for row, why in refused]
            raise _error(web.HTTPConflict, "an id is taken: it waits for its label, or was "
                         "labelled (ids are for one example each)", rejected)  # fmt: skip

    async def learn(self, request: web.BaseRequest) -> web.Response:
        if not self.learn_allowed:
            raise _error(web.HTTPForbidden, "learning over HTTP is off (serve --http-learn)")
        body, body_format = await self._read(request)
        joins = self._joins(body, body_format)
        if joins is not None:
            rows = ParsedRows.empty()
            if _keyed_daemon(self.live):
                raise _error(web.HTTPBadRequest, _KEYED_IDS)
        else:
            rows = self._parsed(body, body_format)
            unlabelled = rows.line_numbers[np.diff(rows.label_ptr) == 0].tolist()
            if unlabelled:
                lines = body.splitlines() if body_format == "svmlight" else []
                rejected = [Rejected(line, "no label", _line(lines, line)) for line in unlabelled]
                raise _error(web.HTTPBadRequest, "an example to learn needs a label", rejected)
        try:
            key = None if joins is not None else self._learning_key(request)
            future = self.live.post(rows, key, joins)
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
        except UnknownKeyError as exc:
            raise _error(web.HTTPNotFound, str(exc)) from None
        except InvalidInputError as exc:  # a key to the one model, none to keyed models
            raise _error(web.HTTPBadRequest, str(exc)) from None
        document: dict[str, Any] = {"learned": learned.learned, "version": learned.version}
        if learned.held:
            document["held_examples"] = learned.held
        if learned.rejected:
            document["rejected"] = _rejected(learned.rejected)
            return _json(document, status=422)
        return _json(document)

    def _joins(self, body: bytes, body_format: str) -> list[tuple[int, str, list[float]]] | None:
        """The labels a /learn body gives by id, as (line, id, labels) (None: it gives
        examples to learn, or the daemon keeps no example by id: the decoder reads the
        body); 400 for a body that mixes the two or breaks the form."""
        if self.live.pending is None or body_format == "svmlight" or not may_hold_ids(body):
            return None
        document = read_document(body, body_format)
        if unreadable_reason(document) is not None:
            return None  # the decoder says why
        found = labels_by_id(document)
        if found is None:
            return None
        joins, rejected = found
        if rejected:
            raise _error(web.HTTPBadRequest, "a label by id is {\"id\": ..., \"label\": ...} "
                         "(or \"labels\" for a bank), with no features, and a body gives "
                         "either labels by id or examples to learn", rejected)  # fmt: skip
        return joins

    def _learning_key(self, request: web.BaseRequest) -> bytes | None:
        """The key whose model a POST /learn is for: required by a daemon of keyed
        models, refused by a daemon of one (400)."""
        key = request.query.get("key")
        published = self.live.published()
        # not loaded yet: the daemon refuses what does not fit
        if published is not None and _keyed(published) and key is None:
            raise _error(
                web.HTTPBadRequest,
                "this daemon learns one model per key: name it (/learn?key=...)",
            )
        if published is not None and key is not None and not _keyed(published):
            raise _error(web.HTTPBadRequest, _ONE_MODEL)
        return None if key is None else key.encode()

    async def model(self, request: web.BaseRequest) -> web.Response:
        description = self.live.description()
        published = self.live.published()
        if published is None or not description:
            raise _error(web.HTTPServiceUnavailable, "the model is not loaded yet")
        if "key" in request.query:
            if not _keyed(published):
                raise _error(web.HTTPBadRequest, _ONE_MODEL)
            published, copy = await self._key_copy(request, await self._fresh())
            description = copy.description
        return _json({**description, "version": published.version})

    async def weights(self, request: web.BaseRequest) -> web.Response:
        """The model's weights as ``streamlearn export`` writes them (one key's with
        ``?key=``, as for /model)."""
        description = self.live.description()
        published = self.live.published()
        if published is None or not description:
            raise _error(web.HTTPServiceUnavailable, "the model is not loaded yet")
        predictor = published.predictor
        if _keyed(published):
            published, copy = await self._key_copy(request, await self._fresh())
            predictor, description = copy.predictor, copy.description
        elif "key" in request.query:
            raise _error(web.HTTPBadRequest, _ONE_MODEL)
        return _json({**document_of(predictor, description), "version": published.version})

    async def _key_copy(
        self, request: web.BaseRequest, published: Published
    ) -> tuple[Published, Any]:
        """The published copy that holds the model of the request's ``key``, and that
        model's copy (400 without a key, 404 when this daemon has no model of it)."""
        key_text = request.query.get("key")
        if key_text is None:
            raise _error(
                web.HTTPBadRequest,
                "this daemon learns one model per key: name it (/predict?key=...)",
            )
        key = key_text.encode()
        try:
            async with asyncio.timeout(REFRESH_TIMEOUT):
                # not copied yet: the daemon's next turn does (a copy published as the
                # key was asked may have been made just before)
                while key not in published.predictor:
                    published = await asyncio.wrap_future(self.live.refresh(key))
        except TimeoutError:
            raise _error(web.HTTPServiceUnavailable, "the daemon is busy: try again",
                         headers={"Retry-After": "1"}) from None  # fmt: skip
        except ClosedError as exc:
            raise _error(web.HTTPServiceUnavailable, str(exc)) from None
        copy = published.predictor.get(key)
        if copy is None:
            raise _error(
                web.HTTPNotFound,
                f"no model of key {key_text!r} here: none has learned yet, or its "
                "partition is another member's",
            )
        return published, copy

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

    async def _read(self, request: web.BaseRequest) -> tuple[bytes, str]:
        """The body and its format (415 for a content type the API does not read, 400
        for a body that breaks its own encoding)."""
        body_format = BODY_FORMATS.get(request.content_type)
        if body_format is None:
            raise _error(
                web.HTTPUnsupportedMediaType,
                f"content type {request.content_type!r}: send text/plain (svmlight lines), "
                "application/json or application/msgpack",
            )
        try:
            return await read_body(request, self.body_timeout), body_format
        except web.RequestPayloadError as exc:
            # aiohttp could not decode what the client sent (a Content-Encoding of gzip
            # over bytes that are not gzip, say): the client's fault, not the server's
            problem = " ".join(str(exc).split())
            raise _error(web.HTTPBadRequest, f"the body cannot be read: {problem}") from None

    def _parsed(self, body: bytes, body_format: str) -> ParsedRows:
        rows = self.decode(body, body_format)
        if rows.rejected:
            raise _error(web.HTTPBadRequest, "the body holds examples that cannot be read",
                         rows.rejected)  # fmt: skip
        if rows.n_rows == 0:
            raise _error(web.HTTPBadRequest, "the body holds no example")
        return rows


#: what a daemon of keyed models says to an example with an id
_KEYED_IDS = ("examples with an id are kept for their label by a daemon of one model only "
              "(not with --model-key)")  # fmt: skip
#: what a daemon of one model says to a request that names a key
_ONE_MODEL = "this daemon learns one model: drop the key (serve --model-key learns one per key)"


def _keyed_daemon(live: LiveModel) -> bool:
    """Whether the daemon behind ``live`` learns keyed models (as of its last copy)."""
    published = live.published()
    return published is not None and _keyed(published)


def _keyed(published: Published) -> bool:
    """Whether ``published`` holds copies of keyed models (not one model)."""
    return bool(getattr(published.predictor, "kind", None) == "keyed")


def _guarded(route: Handler, token: str | None, observer: HttpObserver | None) -> Handler:
    """``route`` with authentication, JSON errors and the observer's counts around it."""

    async def guarded(request: web.BaseRequest) -> web.StreamResponse:
        started = time.perf_counter()
        path = request.path
        endpoint = path if path in ENDPOINTS else OTHER_ENDPOINT
        status = 500
        try:
            asked = token is not None and endpoint != "/openapi.json"
            if asked and not authorized(request.headers.get("Authorization"), token or ""):
                raise _error(web.HTTPUnauthorized, "a bearer token is required",
                             headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
            response = await route(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            if exc.content_type == "application/json":  # ours (_error)
                response = web.Response(status=status, text=exc.text, headers=exc.headers)
                return response
            # aiohttp's own (413 from reading a large body): the same status, in JSON
            return _json({"error": (exc.text or exc.reason).strip()}, status=status)
        except asyncio.CancelledError:
            status = 499  # the client went away
            raise
        except Exception:
            log.exception("HTTP %s %s failed", request.method, path)
            return _json({"error": "internal error (see the log)"}, status=500)
        finally:
            if observer is not None:
                observer.observe_http(endpoint, status, time.perf_counter() - started)

    return guarded


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


def _line(lines: list[bytes], number: int) -> str:
    """The start of line ``number`` (from 1) of a body, as a rejection shows it."""
    if not 0 < number <= len(lines):
        return ""
    return lines[number - 1][:TEXT_CHARS].decode("utf-8", errors="replace")


def _rejected(rejected: list[Rejected]) -> list[dict[str, Any]]:
    shown = [{"line": r.line, "reason": r.reason, "text": r.text} for r in rejected]
    return shown[:SHOWN_REJECTED]


def _json(document: dict[str, Any], status: int = 200) -> web.Response:
    """A JSON answer (non-finite numbers as null)."""
    body = json.dumps(finite(document), allow_nan=False)
    return web.Response(text=body, status=status, content_type="application/json")
