"""Byte chunks from files or standard input, read as they arrive.

The input is never held in memory whole: chunks are yielded as they are read. Reading
standard input twice (for several epochs) caches it once in a spooled temporary file
(memory up to ``cache_in_memory`` bytes, then disk).

>>> import io
>>> stream = InputStream(["-"], chunk_size=4, stdin=io.BytesIO(b"1 1:1\\n"))
>>> list(stream.chunks())
[b'1 1:', b'1\\n']
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

DEFAULT_CHUNK_SIZE = 4 << 20


class InputStream:
    """The concatenation of the given inputs (``'-'`` or none means standard input)."""

    def __init__(
        self,
        paths: Sequence[str | Path],
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        cache_in_memory: int = 256 << 20,
        stdin: IO[bytes] | None = None,
    ) -> None:
        self.paths = [str(p) for p in paths] or ["-"]
        self.chunk_size = chunk_size
        self._cache_in_memory = cache_in_memory
        self._stdin = stdin
        self._cache: tempfile.SpooledTemporaryFile[bytes] | None = None
        for path in self.paths:
            if path != "-" and not Path(path).is_file():
                raise FileNotFoundError(f"input file not found: {path}")

    @property
    def name(self) -> str:
        """A short description for messages."""
        return ", ".join("standard input" if p == "-" else p for p in self.paths)

    @property
    def size(self) -> int | None:
        """Total bytes when every input is a regular file of known size, else None."""
        total = 0
        for path in self.paths:
            if path == "-":
                if self._stdin is not None or self._cache is not None:
                    return None
                try:
                    stat = os.fstat(sys.stdin.fileno())
                except (OSError, ValueError):
                    return None
                if not _is_regular(stat.st_mode):
                    return None
                total += stat.st_size
            else:
                total += Path(path).stat().st_size
        return total

    def chunks(self, *, keep_for_rereading: bool = False) -> Iterator[bytes]:
        """Yield the inputs' bytes in order. With ``keep_for_rereading`` the standard
        input read is cached so that :meth:`reread` can yield it again."""
        for path in self.paths:
            if path == "-":
                yield from self._stdin_chunks(keep_for_rereading)
            else:
                with open(path, "rb") as handle:
                    yield from _read(handle, self.chunk_size)

    def reread(self) -> Iterator[bytes]:
        """Yield the same bytes again (files are read anew, standard input from its cache)."""
        for path in self.paths:
            if path == "-":
                if self._cache is None:
                    raise RuntimeError("standard input was not kept for rereading")
                self._cache.seek(0)
                yield from _read(self._cache, self.chunk_size)
            else:
                with open(path, "rb") as handle:
                    yield from _read(handle, self.chunk_size)

    def _stdin_chunks(self, keep: bool) -> Iterator[bytes]:
        handle = self._stdin if self._stdin is not None else sys.stdin.buffer
        if keep:  # closed by close(), once the cache has been reread
            self._cache = tempfile.SpooledTemporaryFile(max_size=self._cache_in_memory)  # noqa: SIM115
        for chunk in _read(handle, self.chunk_size):
            if keep and self._cache is not None:
                self._cache.write(chunk)
            yield chunk

    def close(self) -> None:
        """Drop the standard-input cache."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def _read(handle: IO[bytes], chunk_size: int) -> Iterator[bytes]:
    while True:
        chunk = handle.read(chunk_size)
        if not chunk:
            return
        yield chunk


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)
