"""Predictions as lines on standard output (the sink of ``serve`` without Kafka)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import IO

from streamlearn.sources.base import Undelivered
from streamlearn.sources.headers import Header

log = logging.getLogger("streamlearn.sink")


class StdoutSink:
    """Writes each prediction as one line: ``key<TAB>value``, or ``value`` without a key.

    When the reader goes away (a closed pipe, a closed standard output) the predictions
    from then on are dropped and counted in :attr:`dropped`, with one warning: the
    daemon goes on learning and checkpointing rather than die at its next prediction.

    >>> import io
    >>> out = io.StringIO()
    >>> sink = StdoutSink(out)
    >>> sink.send(b"k", b"0.5 1", origin=(0, 0))
    >>> out.getvalue().split()
    ['k', '0.5', '1']
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        #: predictions dropped since the reader went away
        self.dropped = 0
        self._gone = self.stream is None

    def send(
        self,
        key: bytes | None,
        value: bytes | None,
        *,
        origin: tuple[int, int] = (0, 0),
        headers: Sequence[Header] = (),
    ) -> None:
        """Write one line (keys and values are shown as UTF-8 text, headers not)."""
        if self._gone:
            self.dropped += 1
            return
        text = (value or b"").decode("utf-8", "replace")
        if key is not None:
            text = key.decode("utf-8", "replace") + "\t" + text
        try:
            self.stream.write(text + "\n")
        except (OSError, ValueError) as exc:  # a broken pipe; ValueError: a closed file
            self._reader_gone(exc)
            self.dropped += 1

    def undelivered(self) -> list[Undelivered]:
        """None: dropped predictions are counted in :attr:`dropped` and said once."""
        return []

    def flush(self, timeout: float = 0.0) -> int:
        """Flush the stream; nothing is ever left on its way (0)."""
        if self._gone:
            return 0
        try:
            self.stream.flush()
        except (OSError, ValueError) as exc:
            self._reader_gone(exc)
        return 0

    def close(self) -> None:
        """Flush; standard output stays open."""
        self.flush()
        if self.dropped:
            log.warning("%d predictions were dropped: standard output was closed", self.dropped)

    def _reader_gone(self, exc: Exception) -> None:
        self._gone = True
        log.warning("standard output is closed (%s): predictions are dropped from now "
                    "on; learning goes on", exc)  # fmt: skip
        if self.stream is sys.stdout:  # what is left in its buffer must not fail at exit
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                try:
                    os.dup2(devnull, sys.stdout.fileno())
                finally:
                    os.close(devnull)
