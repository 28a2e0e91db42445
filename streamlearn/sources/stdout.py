"""Predictions as lines on standard output (the sink of ``serve`` without Kafka)."""

from __future__ import annotations

import sys
from typing import IO


class StdoutSink:
    """Writes each prediction as one line: ``key<TAB>value``, or ``value`` without a key."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout

    def send(self, key: bytes | None, value: bytes) -> None:
        """Write one line (keys and values are shown as UTF-8 text)."""
        text = value.decode("utf-8", "replace")
        if key is not None:
            text = key.decode("utf-8", "replace") + "\t" + text
        self.stream.write(text + "\n")

    def flush(self) -> None:
        """Flush the stream."""
        self.stream.flush()

    def close(self) -> None:
        """Flush; standard output stays open."""
        self.flush()
