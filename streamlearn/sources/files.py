"""Byte chunks from files or standard input, read as they arrive.

The input is never held in memory whole: chunks are yielded as they are read. Reading
standard input or a pipe (a FIFO, ``<(...)``'s ``/dev/fd/N``) twice, for several epochs,
caches it once in a spooled temporary file (memory up to ``cache_in_memory`` bytes, then
disk); regular files are read anew.

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
        #: what each input that cannot be read twice held, by its position in ``paths``
        self._caches: dict[int, tempfile.SpooledTemporaryFile[bytes]] = {}
        for path in self.paths:
            if path == "-":
                continue
            if not Path(path).exists():  # named pipes and /dev/fd/N are inputs too
                raise FileNotFoundError(f"input file not found: {path}")
            if Path(path).is_dir():
                raise IsADirectoryError(f"input {path} is a directory, not a file")

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
                if self._stdin is not None or self._caches:
                    return None
                try:
                    stat = os.fstat(sys.stdin.fileno())
                except (OSError, ValueError):
                    return None
                if not _is_regular(stat.st_mode):
                    return None
                total += stat.st_size
            else:
                stat = Path(path).stat()
                if not _is_regular(stat.st_mode):
                    return None
                total += stat.st_size
        return total

    def chunks(self, *, keep_for_rereading: bool = False) -> Iterator[bytes]:
        """Yield the inputs' bytes in order. With ``keep_for_rereading`` what standard
        input and pipes give is cached so that :meth:`reread` can yield it again."""
        for i, path in enumerate(self.paths):
            if path == "-":
                handle = self._stdin if self._stdin is not None else sys.stdin.buffer
                yield from self._kept(i, handle, keep_for_rereading)
            else:
                with open(path, "rb") as handle:
                    once = not _is_regular(os.fstat(handle.fileno()).st_mode)
                    yield from self._kept(i, handle, keep_for_rereading and once)

    def reread(self) -> Iterator[bytes]:
        """Yield the same bytes again: regular files are read anew, standard input and
        pipes from their caches."""
        for i, path in enumerate(self.paths):
            cache = self._caches.get(i)
            if cache is not None:
                cache.seek(0)
                yield from _read(cache, self.chunk_size)
            elif path == "-":
                raise RuntimeError("standard input was not kept for rereading")
            else:
                with open(path, "rb") as handle:
                    if not _is_regular(os.fstat(handle.fileno()).st_mode):
                        raise RuntimeError(f"{path} was not kept for rereading")
                    yield from _read(handle, self.chunk_size)

    def _kept(self, i: int, handle: IO[bytes], keep: bool) -> Iterator[bytes]:
        """The chunks of ``handle``, cached as input ``i`` when ``keep``."""
        if keep:  # closed by close(), once the cache has been reread
            cache = tempfile.SpooledTemporaryFile(max_size=self._cache_in_memory)  # noqa: SIM115
            self._caches[i] = cache
        for chunk in _read(handle, self.chunk_size):
            if keep:
                cache.write(chunk)
            yield chunk

    def close(self) -> None:
        """Drop the caches of standard input and pipes."""
        for cache in self._caches.values():
            cache.close()
        self._caches.clear()


#: the pipe buffer asked for (Linux's most for an unprivileged process by default)
PIPE_BYTES = 1 << 20


def widen_pipe(handle: IO[bytes] | int) -> int | None:
    """Ask for a pipe buffer of :data:`PIPE_BYTES` when ``handle`` is a pipe on Linux
    (64 KB by default): the writer then blocks, and both sides switch, sixteen times
    less often; reading a pipe took about twice as long with the default. Returns the
    new size, or None when ``handle`` is no pipe or the system keeps its size.

    >>> import io
    >>> widen_pipe(io.BytesIO(b"")) is None
    True
    """
    import fcntl
    import stat

    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    try:
        fd = handle if isinstance(handle, int) else handle.fileno()
        if set_size is None or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        return int(fcntl.fcntl(fd, set_size, PIPE_BYTES))
    except (OSError, AttributeError, ValueError):
        return None  # io.UnsupportedOperation is an OSError


def _read(handle: IO[bytes], chunk_size: int) -> Iterator[bytes]:
    widen_pipe(handle)
    while True:
        chunk = handle.read(chunk_size)
        if not chunk:
            return
        yield chunk


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)
