"""What the daemon says of messages a source skipped because they cannot be read: one log
line per reason and interval (partition, offsets, why, and the fix), and the headers of
their dead letters.

>>> import logging
>>> now = [0.0]
>>> said = UnreadableLog(logging.getLogger("doc"), interval=60.0, clock=lambda: now[0])
>>> item = Unreadable(3, 100, 199, "codec failed", "lz4: bad frame")
>>> print(said.line(item))
partition 3 offsets 100-199: codec failed (lz4: bad frame); skipped. Fix: its producer ...
>>> said.line(item) is None     # the same reason again within the interval
True
>>> now[0] = 61.0; print(said.line(Unreadable(3, 300, 300, "codec failed", "lz4: bad frame")))
partition 3 offset 300: codec failed (lz4: bad frame); skipped, and 1 more since the last ...
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from streamlearn.sources.base import Unreadable
from streamlearn.sources.headers import Header
from streamlearn.sources.kafka_codecs import CODEC_MISSING, CODEC_PACKAGES, FIXES

#: seconds between two log lines of one reason
LOG_INTERVAL = 60.0
#: the headers a dead letter of unreadable records carries
REASON_HEADER = "streamlearn-unreadable"
OFFSETS_HEADER = "streamlearn-offsets"
PARTITION_HEADER = "streamlearn-partition"


class UnreadableLog:
    """The first unreadable item of each reason, then one per ``interval`` seconds with
    how many were held back meanwhile."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._said: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def report(self, item: Unreadable) -> None:
        """Log ``item`` unless its reason was logged within the interval."""
        line = self.line(item)
        if line is not None:
            self._logger.error("%s", line)

    def line(self, item: Unreadable) -> str | None:
        """What :meth:`report` logs for ``item`` (None: held back)."""
        now = self._clock()
        said = self._said.get(item.reason)
        if said is not None and now - said < self._interval:
            self._held[item.reason] = self._held.get(item.reason, 0) + 1
            return None
        self._said[item.reason] = now
        held = self._held.pop(item.reason, 0)
        more = f", and {held} more since the last line of this kind" if held else ""
        return f"{where(item)}: {item.reason} ({item.detail}); skipped{more}. Fix: {fix(item)}"


def where(item: Unreadable) -> str:
    """``partition P offset O`` or ``partition P offsets A-B``."""
    if item.first_offset == item.last_offset:
        return f"partition {item.partition} offset {item.first_offset}"
    return f"partition {item.partition} offsets {item.first_offset}-{item.last_offset}"


def fix(item: Unreadable) -> str:
    """What an operator can do about ``item``.

    >>> fix(Unreadable(0, 1, 1, "codec missing", "zstd needs the package zstandard"))
    "install the codec's package in the daemon's environment (pip install zstandard)"
    """
    text = FIXES.get(item.reason, "see docs/operating.md")
    if item.reason == CODEC_MISSING:
        for package in CODEC_PACKAGES.values():
            if item.detail.endswith(f"package {package}"):
                return f"{text} (pip install {package})"
    return text


def dead_letter_headers(item: Unreadable) -> list[Header]:
    """The headers of ``item``'s dead letter: why, and where it was.

    >>> for name, value in dead_letter_headers(Unreadable(2, 10, 19, "bad crc", "crc")):
    ...     print(name, value)
    streamlearn-unreadable b'bad crc'
    streamlearn-partition b'2'
    streamlearn-offsets b'10-19'
    """
    return [
        (REASON_HEADER, item.reason.encode()),
        (PARTITION_HEADER, str(item.partition).encode()),
        (OFFSETS_HEADER, f"{item.first_offset}-{item.last_offset}".encode()),
    ]
