"""Checkpoint files: atomic writes, rotation, and a directory of numbered checkpoints.

Every write goes to a temporary file in the target's directory (``.<name>.<random>.tmp``),
is flushed and fsynced, renamed over the target with :func:`os.replace`, and then the
directory is fsynced, so the target always holds either the old or the new checkpoint,
never a mix, even when the process dies half-way.

Neither a write nor a read holds the checkpoint's bytes whole: a write hands the file
the encoded pieces in chunks (arrays from their own memory), and a read fills each
array straight from the file (see :mod:`streamlearn.checkpoint.codec`).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from streamlearn import __version__
from streamlearn.checkpoint.codec import Checkpoint, EncodedCheckpoint, decode_stream, encode_pieces
from streamlearn.errors import CheckpointError, InvalidParameterError

logger = logging.getLogger("streamlearn.checkpoint")
#: the ``writer`` stamped on every checkpoint file
WRITER = f"streamlearn {__version__}"
#: the file whose lock makes one process the writer of a checkpoint directory
LOCK_NAME = ".lock"


def _stamped(payload: Mapping[str, Any], created: float | None) -> EncodedCheckpoint:
    """The checkpoint of ``payload``, created now unless told when, by :data:`WRITER`."""
    stamp = time.time() if created is None else created
    return encode_pieces(payload, created=stamp, writer=WRITER)


def write_checkpoint(
    path: Path, payload: Mapping[str, Any], *, keep: int = 1, created: float | None = None
) -> Path:
    """Write ``payload`` to ``path`` atomically and return ``path``.

    With ``keep > 1`` the checkpoint being replaced moves to ``path.1`` (``path.1`` to
    ``path.2``...) and ``keep - 1`` old ones are kept; ``path`` never goes missing meanwhile.
    ``created`` defaults to the current time. Raises :class:`CheckpointError` when the
    payload cannot be stored or the file cannot be written; ``path`` is then untouched.
    """
    path = Path(path)
    keep = _keep(keep)
    data = _stamped(payload, created)
    try:
        _remove_rotated(path, keep)
        _replace_atomically(path, data, rotate=keep)
    except OSError as exc:
        raise CheckpointError(f"cannot write checkpoint {path}: {exc}") from exc
    return path


def check_writable(path: str | Path) -> None:
    """Refuse, before any work is done, a checkpoint path that :func:`write_checkpoint`
    could not write: no file name, an existing directory, a missing or read-only parent
    directory. (A write can still fail later, for instance on a full disk.)

    >>> check_writable(Path("/"))
    Traceback (most recent call last):
    ...
    streamlearn.errors.CheckpointError: cannot write checkpoint /: it is a directory
    """
    if isinstance(path, str) and path.endswith(("/", os.sep)):
        raise CheckpointError(f"cannot write checkpoint {path}: it names a directory")
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"cannot write checkpoint {path}: it is a directory")
    if not path.name or path.name in (".", ".."):
        raise CheckpointError(f"cannot write checkpoint {str(path)!r}: it names no file")
    parent = path.parent
    if not parent.is_dir():
        raise CheckpointError(f"cannot write checkpoint {path}: no directory {parent}")
    if not os.access(parent, os.W_OK):
        raise CheckpointError(f"cannot write checkpoint {path}: {parent} is not writable")


def read_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint in the file ``path``; :class:`CheckpointError` names the file if bad."""
    try:
        with Path(path).open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            return decode_stream(file, size=size)
    except FileNotFoundError as exc:
        raise CheckpointError(f"checkpoint {path} does not exist") from exc
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc.strerror or exc}") from exc
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint {path}: {exc}") from exc


class CheckpointStore:
    """Numbered checkpoints in one directory, for a daemon: write one, find the newest good one.

    Files are named ``<prefix>-<sequence:012d>.ckpt``; each :meth:`write` takes the next
    sequence number and then deletes all but the newest ``keep``. One writer per directory.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     store = CheckpointStore(Path(directory), keep=2)
    ...     _ = [store.write({"examples": n}, created=0.0) for n in range(3)]
    ...     path, checkpoint = store.latest()
    ...     [p.name for p in store.paths()], checkpoint.payload
    (['checkpoint-000000000003.ckpt', 'checkpoint-000000000002.ckpt'], {'examples': 2})
    """

    def __init__(self, directory: Path, *, keep: int = 3, prefix: str = "checkpoint") -> None:
        if not isinstance(prefix, str) or not prefix or prefix.startswith("."):
            raise InvalidParameterError(f"prefix must be a non-empty name, got {prefix!r}")
        if "/" in prefix or os.sep in prefix or (os.altsep and os.altsep in prefix):
            raise InvalidParameterError(f"prefix must not contain a path separator: {prefix!r}")
        self.directory = Path(directory)
        self.keep = _keep(keep)
        self.prefix = prefix
        self._name = re.compile(rf"{re.escape(prefix)}-(\d{{12,}})\.ckpt")
        self._leftover = re.compile(rf"\.{re.escape(prefix)}-\d{{12,}}\.ckpt\.[0-9a-f]+\.tmp")
        self._lock: TextIO | None = None

    def __repr__(self) -> str:
        return f"CheckpointStore({str(self.directory)!r}, keep={self.keep}, prefix={self.prefix!r})"

    def paths(self) -> list[Path]:
        """The checkpoint files, newest (highest sequence) first; temporary files excluded."""
        return [path for _, path in self._numbered()]

    def check_writable(self) -> None:
        """Make the directory if needed and refuse one that cannot take a checkpoint, so
        that a daemon finds out when it starts, not at its first checkpoint.

        >>> CheckpointStore(Path("/proc/none")).check_writable()
        Traceback (most recent call last):
        ...
        streamlearn.errors.CheckpointError: cannot use checkpoint directory /proc/none: ...
        """
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointError(
                f"cannot use checkpoint directory {self.directory}: {exc.strerror or exc}"
            ) from exc
        if not os.access(self.directory, os.W_OK):
            raise CheckpointError(f"cannot use checkpoint directory {self.directory}: not writable")

    def lock(self) -> None:
        """Become the directory's one writer, until :meth:`unlock` or the process ends
        (``kill -9`` included: the system releases the lock). Refuses
        (:class:`CheckpointError`, naming the holder's pid) a directory another process
        holds: two daemons writing into one directory would restore each other's state
        and prune each other's files.

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as directory:
        ...     first, second = CheckpointStore(Path(directory)), CheckpointStore(Path(directory))
        ...     first.lock()
        ...     try:
        ...         second.lock()
        ...     except CheckpointError as exc:
        ...         print(str(exc).split(":")[0])
        ...     first.unlock()
        ...     second.lock()
        ...     second.unlock()
        checkpoint directory ... is in use by process ...
        """
        if self._lock is not None:
            return
        path = self.directory / LOCK_NAME
        try:
            handle = path.open("a+", encoding="ascii")
        except OSError as exc:
            raise CheckpointError(
                f"cannot lock checkpoint directory {self.directory}: {exc}"
            ) from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise CheckpointError(
                f"checkpoint directory {self.directory} is in use by process {holder}: "
                "one daemon writes a directory; stop that one, or give this one another "
                "--checkpoint-dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock = handle

    def unlock(self) -> None:
        """Let another process take the directory (does nothing when not locked)."""
        if self._lock is not None:
            self._lock.close()  # closing the file releases the lock
            self._lock = None

    def write(self, payload: Mapping[str, Any], created: float | None = None) -> Path:
        """Write ``payload`` as the next checkpoint, prune to ``keep``, return its path."""
        data = _stamped(payload, created)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._remove_leftovers()
            numbered = self._numbered()
            sequence = numbered[0][0] + 1 if numbered else 1
            path = self.directory / f"{self.prefix}-{sequence:012d}.ckpt"
            _replace_atomically(path, data, rotate=1)
            for _, old in self._numbered()[self.keep :]:
                old.unlink(missing_ok=True)
        except OSError as exc:
            raise CheckpointError(f"cannot write a checkpoint in {self.directory}: {exc}") from exc
        return path

    def latest(self) -> tuple[Path, Checkpoint] | None:
        """The newest checkpoint that reads back, with its path; None when there is none.

        Newer files that are corrupt, truncated or foreign are skipped with a warning on
        the ``streamlearn.checkpoint`` logger.
        """
        for path in self.paths():
            try:
                return path, read_checkpoint(path)
            except CheckpointError as exc:
                logger.warning("skipping unreadable checkpoint: %s", exc)
        return None

    def latest_to_resume(self) -> tuple[Path, Checkpoint] | None:
        """:meth:`latest`, for a daemon about to resume from it: None only when the
        directory holds no checkpoint at all. Raises :class:`CheckpointError` when it
        holds some and none reads back: starting empty would resume from the consumer
        group's committed offsets, past everything those checkpoints had learned."""
        latest = self.latest()  # logs why each unreadable one is skipped
        if latest is None and self.paths():
            raise CheckpointError(
                f"none of the checkpoints in {self.directory} can be read (see the "
                "warnings above); restore a readable one, or to start afresh move them "
                "away or use another --checkpoint-dir (with another --group to read the "
                "topic from its beginning)"
            )
        return latest

    def _numbered(self) -> list[tuple[int, Path]]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        except OSError as exc:  # a file where the directory should be, no permission...
            raise CheckpointError(
                f"cannot use checkpoint directory {self.directory}: {exc.strerror or exc}"
            ) from exc
        found = []
        for name in names:
            match = self._name.fullmatch(name)
            if match:
                found.append((int(match.group(1)), self.directory / name))
        return sorted(found, reverse=True)

    def _remove_leftovers(self) -> None:
        """Delete the temporary files that a crash during a write left behind."""
        for name in os.listdir(self.directory):
            if self._leftover.fullmatch(name):
                (self.directory / name).unlink(missing_ok=True)


def _keep(keep: int) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise InvalidParameterError(f"keep must be an integer >= 1, got {keep!r}")
    return keep


def _temporary_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")


def _rotated(path: Path, number: int) -> Path:
    return path.with_name(f"{path.name}.{number}")


def _replace_atomically(path: Path, data: EncodedCheckpoint, *, rotate: int) -> None:
    """Write ``data`` to a synced temporary file, rotate old copies, rename it over ``path``."""
    temporary = _temporary_name(path)
    # O_EXCL: never write through someone else's file; 0o666 & umask like open() would
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            for chunk in data.chunks():
                file.write(chunk)
            file.flush()
            os.fsync(file.fileno())
        moved_away = _rotate(path, rotate) if rotate > 1 else False
        try:
            os.replace(temporary, path)
        except OSError:
            if moved_away:  # put the old checkpoint back where readers look for it
                os.replace(_rotated(path, 1), path)
            raise
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _rotate(path: Path, keep: int) -> bool:
    """Shift ``path.1``... up one and make ``path.1`` the current ``path``.

    ``path.1`` is a hard link, so ``path`` stays in place until it is replaced; where hard
    links are not supported ``path`` is renamed instead (True is returned) and is missing
    for the moment between this rename and the next one.
    """
    if not path.exists():
        return False
    for number in range(keep - 2, 0, -1):
        older = _rotated(path, number)
        if older.exists():
            os.replace(older, _rotated(path, number + 1))
    link = _temporary_name(path)
    try:
        os.link(path, link)
    except OSError:
        os.replace(path, _rotated(path, 1))
        return True
    try:
        os.replace(link, _rotated(path, 1))
    except BaseException:
        link.unlink(missing_ok=True)
        raise
    return False


def _remove_rotated(path: Path, keep: int) -> None:
    """Delete ``path.N`` for every N >= keep: copies beyond what ``keep`` allows."""
    pattern = re.compile(rf"{re.escape(path.name)}\.(\d+)")
    try:
        names = os.listdir(path.parent)
    except FileNotFoundError:
        return  # the write that follows reports the missing directory
    for name in names:
        match = pattern.fullmatch(name)
        if match and int(match.group(1)) >= keep:
            (path.parent / name).unlink(missing_ok=True)


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable; a no-op where directories cannot be opened (Windows)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    finally:
        os.close(fd)
