"""What the daemon shares with its HTTP API: the model's latest published copy, its
description, and the examples posted to learn.

The daemon's thread owns the model. It publishes a :class:`Published` copy (a frozen
predictor, see ``streamlearn.learn.predictor``) when someone reads: while readers come
(within ``ACTIVE_READERS`` seconds), at most every ``publish_interval`` once the model
has changed; and at its next turn when a reader asks for a fresher copy
(:meth:`LiveModel.refresh`) because the last one is older than ``MAX_AGE`` and the model
has changed since. Without readers it copies nothing. It takes the posted examples at its
own pace, in the order they came, resolving each poster's future once they are learned
(and a copy that holds them is published). The HTTP thread only reads what was
published and queues what is posted: neither side waits on the other's lock for longer
than a list swap.

>>> live = LiveModel(max_pending=10)
>>> live.published() is None
True
>>> live.publish(Published(version=3, predictor=None))
>>> live.published().version
3
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from streamlearn.http.pending import SharedPending
from streamlearn.parse import ParsedRows, Rejected

#: examples the posters may have waiting, at most, by default
MAX_PENDING = 100_000
#: seconds a published copy answers without asking for a fresher one, if the model moved
MAX_AGE = 0.25
#: seconds after a read during which the daemon keeps publishing a changing model
ACTIVE_READERS = 2.0


class BusyError(Exception):
    """The daemon has as many posted examples waiting as it takes."""


class ClosedError(Exception):
    """The daemon is stopping: it learns nothing more."""


@dataclass(frozen=True)
class Published:
    """A copy of the model that answers from any thread."""

    #: the model's version when it was copied: a count of learned batches and replays
    version: int
    #: the frozen model (``Model.predictor()``)
    predictor: Any
    #: ``time.monotonic()`` when it was published
    at: float = 0.0


@dataclass(frozen=True)
class Learned:
    """What became of posted examples: how many were learned, which the model refused
    (``Model.admit``: a label the model cannot take, too many labels or weights), the
    model's version after, and how many examples the model still holds back
    (``delta='auto'`` learns its first ones once they have all come)."""

    learned: int
    rejected: list[Rejected]
    version: int
    held: int = 0


@dataclass
class Posted:
    """Examples posted to learn, and the future their poster waits on."""

    rows: ParsedRows
    done: Future[Learned] = field(default_factory=Future)
    #: the key whose model learns them (``POST /learn?key=``; None: the one model)
    key: bytes | None = None
    #: labels for examples predicted with an id, by (line, id, labels): the examples
    #: to learn (then ``rows`` holds none)
    joins: list[tuple[int, str, list[float]]] | None = None


class LiveModel:
    """The meeting point of the daemon's thread and the HTTP thread (module doc)."""

    def __init__(
        self,
        *,
        max_pending: int = MAX_PENDING,
        clock: Callable[[], float] = time.monotonic,
        pending: SharedPending | None = None,
    ) -> None:
        self.max_pending = max_pending
        #: the examples predicted with an id, waiting for their label (None: ids are
        #: not taken, learning over HTTP is off)
        self.pending = pending
        self.clock = clock
        #: the daemon's model version, as of its last turn
        self.version = 0
        self._last_read = -math.inf
        self._waiting: list[Future[Published]] = []
        #: model keys requests asked for since the daemon last took them (keyed models)
        self._asked: set[bytes] = set()
        self._published: Published | None = None
        self._description: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._posted: deque[Posted] = deque()
        self._pending = 0
        self._closed = False

    # -- the HTTP side ---------------------------------------------------------------------

    def published(self) -> Published | None:
        """The latest copy (None before the first)."""
        self._last_read = self.clock()
        return self._published

    def is_fresh(self, published: Published) -> bool:
        """Whether ``published`` answers for the model: the model has not changed since,
        or it was published within ``MAX_AGE`` seconds."""
        return published.version == self.version or self.clock() - published.at <= MAX_AGE

    def refresh(self, key: bytes | None = None) -> Future[Published]:
        """A future of the next copy the daemon publishes (it publishes one at its next
        turn); with a ``key``, one that holds the copy of that key's model (a daemon
        that learns one model per key copies the models requests name)."""
        waiter: Future[Published] = Future()
        with self._lock:
            if self._closed:
                raise ClosedError("the daemon is stopping")
            self._waiting.append(waiter)
            if key is not None:
                self._asked.add(key)
        return waiter

    def description(self) -> dict[str, Any]:
        """What the daemon last said of its model (algorithm, parameters, certificate)."""
        return self._description

    def post(
        self,
        rows: ParsedRows,
        key: bytes | None = None,
        joins: list[tuple[int, str, list[float]]] | None = None,
    ) -> Future[Learned]:
        """Queue labelled rows to learn (by the model of ``key``, for a daemon of keyed
        models), or labels by id (``joins``, with no rows); the future resolves once they
        are learned. Raises :class:`BusyError` when ``max_pending`` examples would be
        waiting, and :class:`ClosedError` once the daemon stops."""
        posted = Posted(rows, key=key, joins=joins)
        with self._lock:
            if self._closed:
                raise ClosedError("the daemon is stopping")
            n = rows.n_rows if joins is None else len(joins)
            if self._pending and self._pending + n > self.max_pending:
                raise BusyError(f"{self._pending} posted examples are waiting to be learned")
            self._posted.append(posted)
            self._pending += n
        return posted.done

    # -- the daemon's side -----------------------------------------------------------------

    def wanted(self, version: int, interval: float) -> bool:
        """Whether the daemon, now at ``version``, should publish a copy: a reader waits
        for one, or readers came lately, the model changed and the last copy is
        ``interval`` seconds old."""
        self.version = version
        if self._waiting:
            return True
        published = self._published
        if published is None or published.version == version:
            return False
        now = self.clock()
        return now - self._last_read <= ACTIVE_READERS and now - published.at >= interval

    def publish(self, published: Published) -> None:
        """Replace the copy the HTTP side reads (its ``at`` set now), and hand it to the
        readers waiting for one."""
        published = replace(published, at=self.clock())
        self._published = published
        self.version = published.version
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            settle(waiter, published)

    def take_asked_keys(self) -> set[bytes]:
        """The model keys requests asked for since the last call."""
        with self._lock:
            asked, self._asked = self._asked, set()
        return asked

    def describe(self, description: dict[str, Any]) -> None:
        """Replace the description the HTTP side reads."""
        self._description = description

    def has_posted(self) -> bool:
        """Whether examples wait to be learned (a hint: no lock taken)."""
        return bool(self._posted)

    def take_posted(self) -> list[Posted]:
        """Every waiting post, oldest first."""
        with self._lock:
            posted = list(self._posted)
            self._posted.clear()
            self._pending = 0
        return posted

    def close(self) -> None:
        """Refuse new posts and fail the waiting ones (the daemon stops)."""
        with self._lock:
            self._closed = True
            posted = list(self._posted)
            self._posted.clear()
            self._pending = 0
            waiting, self._waiting = self._waiting, []
        for one in posted:
            settle(one.done, error=ClosedError("the daemon stopped before learning them"))
        for waiter in waiting:
            settle(waiter, error=ClosedError("the daemon is stopping"))


T = TypeVar("T")


def settle(future: Future[T], result: T | None = None, error: BaseException | None = None) -> None:
    """Give ``future`` its result (or ``error``), unless its reader gave up on it first:
    an HTTP request cancelled (its client gone, its time-out reached) cancels the future
    it waited on, and resolving a cancelled future raises in the daemon's thread.

    >>> waiter: Future[int] = Future()
    >>> waiter.cancel()
    True
    >>> settle(waiter, 1)
    >>> waiter.cancelled()
    True
    """
    if not future.set_running_or_notify_cancel():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)  # type: ignore[arg-type]
