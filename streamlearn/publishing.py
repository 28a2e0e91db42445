"""What the daemon's readers on other threads see, each paced by what it costs: the
copy of the model the HTTP API answers with, and the summary the metrics and ``/model``
read.

A copy is published when the HTTP API wants one (it asked, or the model changed and the
last copy is older than the interval), and a summary is taken every interval; each
interval grows to keep its cost within a share of the daemon's time (a large bank's
copy or summary takes a while).

>>> from types import SimpleNamespace
>>> settings = SimpleNamespace(publish_interval=0.5, publish_share=0.1,
...                            summary_interval=5.0, summary_share=0.05)
>>> ticks = iter([0.0, 0.2, 10.0, 10.5])
>>> readers = Readers(settings, live=None, clock=lambda: next(ticks))
>>> readers.summary_every
5.0
>>> readers.summarise(lambda: {"examples": 3})
{'examples': 3}
>>> readers.summary_every  # the summary took 0.2 s: 4 s, within 5% of the time
5.0
>>> readers.summary_due()
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streamlearn.http.live import LiveModel, Published

#: makes the copy the HTTP API answers with, given the keys it was asked about since
CopyMaker = Callable[[Callable[[], set[bytes]]], Any]


class ReadersPace(Protocol):
    """The settings of :class:`Readers` (the daemon's settings)."""

    @property
    def publish_interval(self) -> float: ...
    @property
    def publish_share(self) -> float: ...
    @property
    def summary_interval(self) -> float: ...
    @property
    def summary_share(self) -> float: ...


class Readers:
    """Publishes copies to ``live`` (None: no HTTP API) and takes summaries, each when
    due (see the module doc)."""

    def __init__(
        self, settings: ReadersPace, live: LiveModel | None, clock: Callable[[], float]
    ) -> None:
        self.settings = settings
        self.live = live
        self.clock = clock
        #: the model version of the last copy published (-1: none yet)
        self.version = -1
        self.publish_every = settings.publish_interval
        self.summary_every = settings.summary_interval
        self._summary_clock = -float("inf")

    def publish_if_due(self, version: int, predictor: CopyMaker) -> None:
        """:meth:`publish` when the HTTP API wants a copy of the model at ``version``."""
        if self.live is not None and self.live.wanted(version, self.publish_every):
            self.publish(version, predictor)

    def publish(self, version: int, predictor: CopyMaker) -> None:
        """Give the HTTP API a frozen copy of the model as it is at ``version``
        (``predictor`` makes it, told the keys the API was asked about since)."""
        live = self.live
        if live is None:
            return
        started = self.clock()
        live.publish(Published(version, predictor(live.take_asked_keys)))
        self.version = version
        took = self.clock() - started
        settings = self.settings
        self.publish_every = max(settings.publish_interval, took / settings.publish_share)

    def summary_due(self) -> bool:
        """Whether a summary is due."""
        return self.clock() - self._summary_clock >= self.summary_every

    def summarise(self, summary: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Take the ``summary`` now, and pace the next by what it cost."""
        started = self.clock()
        taken = summary()
        self._summary_clock = self.clock()
        took = self._summary_clock - started
        settings = self.settings
        self.summary_every = max(settings.summary_interval, took / settings.summary_share)
        return taken
