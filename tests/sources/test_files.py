"""Input files and pipes read as chunks (streamlearn.sources.files)."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from pathlib import Path

import pytest

from streamlearn.sources.files import PIPE_BYTES, InputStream, widen_pipe
from streamlearn.sources.stdin import StdinSource

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="pipe buffers are resized on Linux only"
)


def _pipe_size(fd: int) -> int:
    return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))


@linux_only
def test_a_pipe_is_read_whole_through_a_widened_buffer() -> None:
    read_end, write_end = os.pipe()
    data = b"".join(b"%d 1:1 %d:0.5\n" % (i % 2 * 2 - 1, i % 50 + 2) for i in range(100_000))

    def write() -> None:
        with os.fdopen(write_end, "wb") as sink:
            sink.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    with os.fdopen(read_end, "rb") as source:
        assert _pipe_size(read_end) < PIPE_BYTES
        chunks = list(InputStream(["-"], chunk_size=1 << 16, stdin=source).chunks())
        assert _pipe_size(read_end) == PIPE_BYTES
    writer.join()
    assert b"".join(chunks) == data


@linux_only
def test_the_daemons_standard_input_is_widened_too() -> None:
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "rb", closefd=False) as source:
            StdinSource(source)
            assert _pipe_size(read_end) == PIPE_BYTES
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_regular_file_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "a.svm"
    path.write_bytes(b"1 1:1\n-1 2:1\n")
    with open(path, "rb") as handle:
        assert widen_pipe(handle) is None
    assert b"".join(InputStream([path]).chunks()) == b"1 1:1\n-1 2:1\n"
