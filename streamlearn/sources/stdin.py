"""Standard input (or any pipe or file) as a :class:`Source` of messages of whole lines.

Each message holds up to ``lines_per_message`` complete lines, on partition 0, and its
offset is the number of its first line counted from 0 over the whole stream. So a
position, ``{0: n}``, is the number of lines consumed, and :meth:`StdinSource.seek`
with it skips the first ``n`` lines: a restart from a checkpoint works when the same
input is given again (standard input cannot go back, so it reads and drops them,
counting their newlines without cutting lines, and reports the lines still to skip
as its lag: the daemon then keeps reading rather than take the wait for replay time).

>>> import io
>>> source = StdinSource(io.BytesIO(b"1 1:1\\n-1 2:1\\n1 3:1"), lines_per_message=2)
>>> [(m.offset, m.value) for m in source.poll(1.0, 10)]
[(0, b'1 1:1\\n-1 2:1\\n'), (2, b'1 3:1')]
>>> source.position(), source.exhausted()
({0: 3}, True)
"""

from __future__ import annotations

import io
import logging
import os
import select
import time
from collections import deque
from typing import IO

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.sources.base import Message, MessageBatch, Positions
from streamlearn.sources.files import widen_pipe

log = logging.getLogger("streamlearn.source")
_LF = 10
#: the longest start of a line kept while its newline has not come: more than the
#: parser's longest line (1 MiB), so that a longer line, cut to this, is still rejected
LONGEST_KEPT = 2 << 20


class StdinSource:
    """Messages of whole lines read from a byte stream as they arrive.

    Parameters
    ----------
    stream:
        The input, e.g. ``sys.stdin.buffer``. With a file descriptor it is read with
        ``os.read`` (so this source must be its only reader), waiting with ``select``;
        without one (``io.BytesIO``) with ``read1``.
    lines_per_message:
        Most lines in one message.
    read_size:
        Most bytes read at once.
    """

    def __init__(
        self, stream: IO[bytes], *, lines_per_message: int = 1000, read_size: int = 1 << 20
    ) -> None:
        if lines_per_message < 1:
            raise InvalidParameterError(f"lines_per_message must be >= 1, got {lines_per_message}")
        if read_size < 1:
            raise InvalidParameterError(f"read_size must be >= 1, got {read_size}")
        self.lines_per_message = lines_per_message
        self.stream = "stdin"
        self.read_size = read_size
        self._stream = stream
        try:
            self._fd: int | None = stream.fileno()
        except (OSError, AttributeError, io.UnsupportedOperation):
            self._fd = None
        if self._fd is not None:
            widen_pipe(self._fd)
        self._tail = b""  # the start of a line whose newline has not come yet
        self._ready: deque[Message] = deque()  # cut, not yet returned
        self._lines_cut = 0  # lines read from the stream so far (skipped ones too)
        self._consumed = 0  # lines up to the end of the last message returned
        self._skip = 0  # lines still to drop (after a seek)
        self._skipping_a_line = False  # whether the bytes dropped last began a line
        self._eof = False

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        """Up to ``max_messages`` messages, waiting at most ``timeout`` s for the first."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while len(self._ready) < max_messages and not self._eof:
            wait = 0.0 if self._ready else deadline - time.monotonic()
            came = self._read(max(wait, 0.0))
            if not came and (self._ready or time.monotonic() >= deadline):
                break
        out = [self._ready.popleft() for _ in range(min(max_messages, len(self._ready)))]
        if out:
            last = out[-1]
            self._consumed = last.offset + _count_lines(last.value)
        return MessageBatch.from_messages(out)

    def _read(self, wait: float) -> bool:
        """Read what is available within ``wait`` seconds; whether anything came."""
        if self._fd is not None:
            readable, _, _ = select.select([self._fd], [], [], wait)
            if not readable:
                return False
            chunk = os.read(self._fd, self.read_size)
        else:
            read1 = getattr(self._stream, "read1", None)
            chunk = read1(self.read_size) if read1 else self._stream.read(self.read_size)
        if not chunk:
            self._eof = True
            if self._tail:  # the last line, without its newline
                self._cut(self._tail, np.array([len(self._tail) - 1]))
                self._tail = b""
            if self._skip and self._skipping_a_line:  # the last line, skipped
                self._skip -= 1
                self._lines_cut += 1
            if self._skip:
                log.warning(
                    "standard input ended %d lines before the position to resume from "
                    "(line %d): none of it was learned; is it the input the checkpoint "
                    "was made from?", self._skip, self._consumed,
                )  # fmt: skip
            return True
        if self._skip:
            chunk = self._skipped(chunk)
            if not chunk:
                return True
        data = self._joined(chunk)
        if data is None:
            return True
        newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == _LF)
        if newlines.shape[0] == 0:
            self._tail = data[:LONGEST_KEPT]
            return True
        end = int(newlines[-1]) + 1
        self._tail = data[end:]
        self._cut(data[:end], newlines)
        return True

    def _skipped(self, chunk: bytes) -> bytes:
        """What of ``chunk`` follows the lines still to skip (empty when they take it all).

        Lines being dropped are counted by their newlines, at memory speed: nothing is
        cut, queued or kept of them (a line that a chunk ends inside of is dropped with
        the newline that ends it, in a later chunk).
        """
        newlines = chunk.count(b"\n")
        if newlines < self._skip:
            self._skip -= newlines
            self._lines_cut += newlines
            self._skipping_a_line = not chunk.endswith(b"\n")
            return b""
        ends = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == _LF)
        start = int(ends[self._skip - 1]) + 1
        self._lines_cut += self._skip
        self._skip = 0
        self._skipping_a_line = False
        return chunk[start:]

    def _joined(self, chunk: bytes) -> bytes | None:
        """``chunk`` after the start of the line it continues, or None when it does not
        end that line (it is then kept, up to :data:`LONGEST_KEPT` bytes). Each byte is
        looked at once however long the line, and a line longer than that is cut to it,
        which the parser still rejects as too long: a stream without newlines costs
        neither quadratic time nor unbounded memory."""
        if not self._tail:
            return chunk
        newline = chunk.find(b"\n")
        if newline < 0:
            room = LONGEST_KEPT - len(self._tail)
            if room > 0:
                self._tail += chunk[:room]
            return None
        kept = max(0, min(newline, LONGEST_KEPT - len(self._tail)))
        line = self._tail + chunk[:kept] + b"\n"
        self._tail = b""
        return line + chunk[newline + 1 :]

    def _cut(self, data: bytes, line_ends: npt.NDArray[np.intp]) -> None:
        """Queue messages of the whole lines of ``data`` (``line_ends`` are their last bytes)."""
        n_lines = int(line_ends.shape[0])
        start = 0
        for line in range(0, n_lines, self.lines_per_message):
            last = min(line + self.lines_per_message, n_lines) - 1
            end = int(line_ends[last]) + 1
            self._ready.append(Message(data[start:end], offset=self._lines_cut + line))
            start = end
        self._lines_cut += n_lines

    def position(self) -> Positions:
        """``{0: lines consumed}``: lines of the messages returned (and skipped lines)."""
        return {0: self._consumed}

    def seek(self, positions: Positions) -> None:
        """Skip the first ``positions[0]`` lines of the stream (before reading begins).

        Raises :class:`StateError` once lines were read, unless the position is current.
        """
        target = positions.get(0)
        if target is None or target == self._consumed:
            return
        if self._lines_cut or self._tail or self._ready:
            raise StateError(
                f"standard input cannot seek to line {target} after reading {self._consumed} lines"
            )
        if target < 0:
            raise InvalidParameterError(f"position must be >= 0, got {target}")
        self._skip = target
        self._consumed = target

    def commit(self, positions: Positions) -> None:
        """Nothing to do: standard input keeps no offsets."""

    def ready(self) -> bool:
        """Always ready."""
        return True

    def exhausted(self) -> bool:
        """Whether the input ended and every line was returned."""
        return self._eof and not self._ready and not self._tail

    def lag(self) -> Positions:
        """``{0: lines still to skip}`` while a seek skips (they wait in the input); else
        unknown: empty.

        >>> import io
        >>> source = StdinSource(io.BytesIO(b"1 1:1\\n" * 5))
        >>> source.seek({0: 3})
        >>> source.lag()
        {0: 3}
        >>> [m.offset for m in source.poll(1.0, 10)], source.lag()
        ([3], {})
        """
        if self._skip and not self._eof:
            return {0: self._skip}
        return {}

    def close(self) -> None:
        """Nothing to release: the stream belongs to the caller."""


def _count_lines(value: bytes) -> int:
    """Lines in a message: its newlines, plus one for a last line without one."""
    count = value.count(b"\n")
    return count if value.endswith(b"\n") else count + 1
