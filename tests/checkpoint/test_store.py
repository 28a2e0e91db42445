"""Checkpoint files: atomic writes that never lose the old checkpoint, rotation, the store."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streamlearn import __version__
from streamlearn.checkpoint import (
    CheckpointStore,
    decode,
    encode,
    read_checkpoint,
    write_checkpoint,
)
from streamlearn.checkpoint import store as store_module
from streamlearn.checkpoint.store import WRITER, check_writable
from streamlearn.errors import CheckpointError, InvalidParameterError


def payload(n: int) -> dict[str, Any]:
    return {"n": n, "weights": np.full(4, float(n)), "position": {"partition": 0, "offset": n}}


def n_of(path: Path) -> int:
    value: int = read_checkpoint(path).payload["n"]
    return value


def names(directory: Path) -> set[str]:
    return set(os.listdir(directory))


# -- write_checkpoint / read_checkpoint ---------------------------------------------------


def test_write_then_read(tmp_path: Path) -> None:
    target = tmp_path / "model.ckpt"
    assert write_checkpoint(target, payload(1), created=12.5) == target
    checkpoint = read_checkpoint(target)
    assert checkpoint.created == 12.5 and checkpoint.version == 1
    assert checkpoint.payload["n"] == 1
    assert np.array_equal(checkpoint.payload["weights"], np.full(4, 1.0))
    assert target.read_bytes() == encode(payload(1), created=12.5, writer=WRITER)
    assert checkpoint.writer == WRITER == f"streamlearn {__version__}"
    assert names(tmp_path) == {"model.ckpt"}  # no temporary file left


def test_created_defaults_to_now(tmp_path: Path) -> None:
    before = time.time()
    write_checkpoint(tmp_path / "c", {})
    assert before <= read_checkpoint(tmp_path / "c").created <= time.time()


def test_overwrite_replaces_the_file(tmp_path: Path) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1))
    write_checkpoint(target, payload(2))
    assert n_of(target) == 2
    assert names(tmp_path) == {"c"}


def test_an_unstorable_payload_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1), keep=3)
    with pytest.raises(CheckpointError, match="not storable"):
        write_checkpoint(target, {"bad": object()}, keep=3)
    assert n_of(target) == 1
    assert names(tmp_path) == {"c"}


@pytest.mark.parametrize("keep", [1, 3])
def test_a_failing_rename_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1), keep=keep)
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst) == target:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(CheckpointError, match=r"cannot write checkpoint .*No space left"):
        write_checkpoint(target, payload(2), keep=keep)
    assert n_of(target) == 1
    assert not [name for name in names(tmp_path) if name.endswith(".tmp")]


def test_a_failing_rename_without_hard_links_restores_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1), keep=3)
    write_checkpoint(target, payload(2), keep=3)
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst) == target and Path(src).name.endswith(".tmp"):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    def no_link(src: Any, dst: Any) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "link", no_link)
    with pytest.raises(CheckpointError, match="Input/output error"):
        write_checkpoint(target, payload(3), keep=3)
    assert n_of(target) == 2
    assert not [name for name in names(tmp_path) if name.endswith(".tmp")]


def test_a_failing_fsync_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1), keep=2)

    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(CheckpointError, match="Input/output error"):
        write_checkpoint(target, payload(2), keep=2)
    monkeypatch.undo()
    assert n_of(target) == 1
    assert names(tmp_path) == {"c"}


class HalfWrite:
    """A file that writes half of what it is given, then fails: a full disk mid-write."""

    def __init__(self, file: Any) -> None:
        self.file = file

    def __enter__(self) -> HalfWrite:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def write(self, data: bytes) -> int:
        self.file.write(data[: len(data) // 2])
        self.file.flush()
        raise OSError(28, "No space left on device")


def test_a_failure_half_way_through_the_data_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1), keep=2)
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: HalfWrite(real_fdopen(fd, mode)))
    with pytest.raises(CheckpointError, match="No space left"):
        write_checkpoint(target, payload(2), keep=2)
    monkeypatch.undo()
    assert n_of(target) == 1
    assert names(tmp_path) == {"c"}


def test_an_interrupt_while_writing_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1))

    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_checkpoint(target, payload(2))
    monkeypatch.undo()
    assert n_of(target) == 1
    assert names(tmp_path) == {"c"}


def test_rotation_keeps_keep_minus_one_old_files(tmp_path: Path) -> None:
    target = tmp_path / "c"
    for n in range(1, 6):
        write_checkpoint(target, payload(n), keep=3)
    assert names(tmp_path) == {"c", "c.1", "c.2"}
    assert [n_of(tmp_path / name) for name in ("c", "c.1", "c.2")] == [5, 4, 3]
    write_checkpoint(target, payload(6), keep=2)  # a smaller keep drops the extra copies
    assert names(tmp_path) == {"c", "c.1"}
    assert [n_of(tmp_path / name) for name in ("c", "c.1")] == [6, 5]
    write_checkpoint(target, payload(7))
    assert names(tmp_path) == {"c"}


def test_rotation_links_so_the_target_never_goes_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "c"
    write_checkpoint(target, payload(1), keep=3)
    real_replace = os.replace
    seen: list[int] = []

    def replace(src: Any, dst: Any) -> None:
        seen.append(n_of(target))  # readable before every rename of the rotation
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    write_checkpoint(target, payload(2), keep=3)
    write_checkpoint(target, payload(3), keep=3)
    monkeypatch.undo()
    assert seen and n_of(target) == 3
    assert [n_of(tmp_path / name) for name in ("c.1", "c.2")] == [2, 1]


def test_rotation_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(src: Any, dst: Any) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    target = tmp_path / "c"
    for n in range(1, 5):
        write_checkpoint(target, payload(n), keep=3)
    assert [n_of(tmp_path / name) for name in ("c", "c.1", "c.2")] == [4, 3, 2]
    assert names(tmp_path) == {"c", "c.1", "c.2"}


def test_writing_into_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="cannot write checkpoint"):
        write_checkpoint(tmp_path / "missing" / "c", payload(1))


@pytest.mark.parametrize("keep", [0, -1, True, 1.5, "3"])
def test_keep_must_be_a_positive_integer(tmp_path: Path, keep: Any) -> None:
    with pytest.raises(InvalidParameterError, match="keep"):
        write_checkpoint(tmp_path / "c", {}, keep=keep)
    with pytest.raises(InvalidParameterError, match="keep"):
        CheckpointStore(tmp_path, keep=keep)


def test_reading_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"checkpoint .*nope\.ckpt does not exist"):
        read_checkpoint(tmp_path / "nope.ckpt")


def test_reading_a_directory_names_it(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=f"cannot read checkpoint {tmp_path}"):
        read_checkpoint(tmp_path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "truncated"),
        (b"hello world", "truncated or not a streamlearn checkpoint"),
        (encode({}, created=0)[:-3], "truncated"),
    ],
)
def test_reading_an_invalid_file_names_it(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.ckpt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=f"checkpoint .*bad.ckpt: {message}"):
        read_checkpoint(path)


# -- CheckpointStore ----------------------------------------------------------------------


def test_an_empty_or_missing_directory_has_no_checkpoint(tmp_path: Path) -> None:
    assert CheckpointStore(tmp_path).latest() is None
    assert CheckpointStore(tmp_path).paths() == []
    missing = CheckpointStore(tmp_path / "not-yet")
    assert missing.latest() is None and missing.paths() == []


def test_sequence_numbers_and_pruning(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpts", keep=3)
    written = [store.write(payload(n), created=float(n)) for n in range(1, 6)]
    assert [p.name for p in written] == [f"checkpoint-{n:012d}.ckpt" for n in range(1, 6)]
    assert store.paths() == written[:1:-1]  # the newest three, newest first
    assert names(tmp_path / "ckpts") == {p.name for p in written[2:]}
    latest = store.latest()
    assert latest is not None
    path, checkpoint = latest
    assert path == written[-1] and checkpoint.payload["n"] == 5 and checkpoint.created == 5.0


def test_a_new_store_continues_the_sequence(tmp_path: Path) -> None:
    CheckpointStore(tmp_path, keep=2).write(payload(1))
    CheckpointStore(tmp_path, keep=2).write(payload(2))
    path = CheckpointStore(tmp_path, keep=2).write(payload(3))
    assert path.name == "checkpoint-000000000003.ckpt"


def test_sequence_numbers_grow_past_twelve_digits(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    (tmp_path / "checkpoint-999999999999.ckpt").write_bytes(encode(payload(1), created=0))
    path = store.write(payload(2))
    assert path.name == "checkpoint-1000000000000.ckpt"
    assert store.paths()[0] == path
    assert n_of(store.paths()[1]) == 1


def _corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-20])


def _foreign(path: Path) -> None:
    path.write_bytes(b"\x81\xa4name\xa5other")  # the msgpack map {"name": "other"}


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_corrupt, "checksum mismatch"),
        (_truncate, "truncated"),
        (_foreign, "not a streamlearn checkpoint"),
    ],
)
def test_latest_falls_back_past_a_bad_newest_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Any, reason: str
) -> None:
    store = CheckpointStore(tmp_path, keep=3)
    written = [store.write(payload(n)) for n in range(1, 4)]
    damage(written[-1])
    with caplog.at_level(logging.WARNING, logger="streamlearn.checkpoint"):
        latest = store.latest()
    assert latest is not None
    assert latest[0] == written[-2] and latest[1].payload["n"] == 2
    [record] = caplog.records
    assert record.name == "streamlearn.checkpoint"
    assert written[-1].name in record.getMessage() and reason in record.getMessage()


def test_latest_is_none_when_every_checkpoint_is_bad(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    for n in range(2):
        _truncate(store.write(payload(n)))
    with caplog.at_level(logging.WARNING, logger="streamlearn.checkpoint"):
        assert store.latest() is None
    assert len(caplog.records) == 2


def test_a_write_after_a_corrupt_checkpoint_never_reuses_its_number(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    store.write(payload(1))
    _corrupt(store.write(payload(2)))
    path = store.write(payload(3))
    assert path.name == "checkpoint-000000000003.ckpt"
    latest = store.latest()
    assert latest is not None and latest[0] == path


def test_leftover_temporary_files_are_ignored_and_cleaned(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.write(payload(1))
    leftover = tmp_path / ".checkpoint-000000000002.ckpt.0badc0de.tmp"
    leftover.write_bytes(encode(payload(99), created=0)[:10])  # a crash mid-write
    assert [p.name for p in store.paths()] == ["checkpoint-000000000001.ckpt"]
    latest = store.latest()
    assert latest is not None and latest[1].payload["n"] == 1
    assert store.write(payload(2)).name == "checkpoint-000000000002.ckpt"
    assert not leftover.exists()
    assert names(tmp_path) == {"checkpoint-000000000001.ckpt", "checkpoint-000000000002.ckpt"}


def test_other_files_in_the_directory_are_left_alone(tmp_path: Path) -> None:
    others = ["notes.txt", "checkpoint-1.ckpt", "checkpoint-000000000007.ckpt.bak", ".hidden"]
    for name in others:
        (tmp_path / name).write_text("x")
    other_store = CheckpointStore(tmp_path, prefix="other")
    other_store.write(payload(50))
    store = CheckpointStore(tmp_path, keep=1)
    for n in range(3):
        store.write(payload(n))
    assert [p.name for p in store.paths()] == ["checkpoint-000000000003.ckpt"]
    assert [p.name for p in other_store.paths()] == ["other-000000000001.ckpt"]
    assert set(others) < names(tmp_path)


def test_a_failed_store_write_keeps_the_previous_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path, keep=2)
    store.write(payload(1))

    def fail(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(CheckpointError, match="No space left"):
        store.write(payload(2))
    with pytest.raises(CheckpointError, match="not storable"):
        store.write({"x": object()})
    monkeypatch.undo()
    assert names(tmp_path) == {"checkpoint-000000000001.ckpt"}
    latest = store.latest()
    assert latest is not None and latest[1].payload["n"] == 1


def test_store_uses_the_current_time_by_default(tmp_path: Path) -> None:
    before = time.time()
    CheckpointStore(tmp_path).write({})
    latest = CheckpointStore(tmp_path).latest()
    assert latest is not None and before <= latest[1].created <= time.time()


@pytest.mark.parametrize("prefix", ["", ".hidden", "a/b", None])
def test_prefix_must_be_a_plain_name(tmp_path: Path, prefix: Any) -> None:
    with pytest.raises(InvalidParameterError, match="prefix"):
        CheckpointStore(tmp_path, prefix=prefix)


def test_store_files_decode_with_the_codec(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, prefix="model")
    path = store.write(payload(4), created=3.0)
    assert path.name == "model-000000000001.ckpt"
    assert decode(path.read_bytes()).payload["position"] == {"partition": 0, "offset": 4}
    assert "model" in repr(store)


def test_the_store_logger_name() -> None:
    assert store_module.logger.name == "streamlearn.checkpoint"


def test_a_file_where_the_directory_should_be_is_a_checkpoint_error(tmp_path: Path) -> None:
    occupied = tmp_path / "checkpoints"
    occupied.write_text("not a directory")
    for directory in (occupied, occupied / "below"):
        with pytest.raises(CheckpointError, match="cannot use checkpoint directory"):
            CheckpointStore(directory).latest()


@pytest.mark.parametrize("name", ["", ".", "/", "missing/m.ckpt", "m/"])
def test_check_writable_refuses_paths_no_checkpoint_can_be_written_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError, match="cannot write checkpoint"):
        check_writable(name)
    check_writable("m.ckpt")


def test_one_process_writes_a_directory_until_it_dies(tmp_path: Path) -> None:
    """A second process cannot lock a directory a first one holds, and is told the
    holder's pid; once the holder is killed (-9: no clean-up of its own), it can."""
    import signal
    import subprocess
    import sys

    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; "
         "from streamlearn.checkpoint import CheckpointStore; "
         "store = CheckpointStore(Path(sys.argv[1])); store.lock(); print('locked', flush=True); "
         "time.sleep(600)", str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        store = CheckpointStore(tmp_path)
        with pytest.raises(CheckpointError, match=f"in use by process {holder.pid}"):
            store.lock()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        store.lock()
        store.write({"examples": 1})  # the lock file is no checkpoint
        assert [p.name for p in store.paths()] == ["checkpoint-000000000001.ckpt"]
        store.unlock()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
