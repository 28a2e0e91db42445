"""The records under one member's key on the sync topic: those it writes, and those of a
former process with its id.

A member reads its own records back (the topic holds them like any other): each one it
wrote is recognised once, by a CRC of its bytes, and skipped. Any other record under its
key is either a former process's with the same id, read at the start and taken over in
order, or another process's, refused. A checkpoint resumes only from the very record it
was written with, which the CRCs of the last record written and of the former process's
last tell.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping
from typing import Any, Protocol

from streamlearn.errors import InputError, StateError
from streamlearn.group.records import MemberRecord
from streamlearn.group.wire import RecordWire

log = logging.getLogger("streamlearn.group")

#: the last records this member wrote that it recognises when it reads them back
WRITTEN_KEPT = 64


class RecordWriter(Protocol):
    """The sync topic as a member writes to it."""

    def write(self, key: str, value: bytes | None) -> None: ...


class OwnRecords:
    """What a member wrote under its key (``me``), and what a former process with its id
    wrote there."""

    def __init__(self, me: str, transport: RecordWriter, wire: RecordWire) -> None:
        self.me = me
        self.transport = transport
        self.wire = wire
        #: the sequence of this member's last record (a former process's, once taken over)
        self.sequence = 0
        #: this member's last record written: its share, positions and window as published
        self.last: MemberRecord | None = None
        #: the CRC of :attr:`last`'s bytes, and of the former process's last
        self.last_crc: int | None = None
        #: the last record of a former process with this member's id (read at the start)
        self.former: MemberRecord | None = None
        self.former_crc: int | None = None
        #: records written, and records not written (the others would refuse them, or
        #: the topic could not be written)
        self.written = 0
        self.failed = 0
        #: the records this member wrote and has not read back yet, by sequence (a CRC of
        #: each): any other record under its key is another process's
        self._unread: dict[int, int] = {}

    def write(self, record: MemberRecord) -> None:
        """Write ``record``, the next of this member's, once it reads as the others will
        read it; :class:`StateError` or :class:`InputError` when it is not written."""
        value = self.wire.bytes_of(record)
        try:
            self.wire.read(self.me, value)  # what the others will make of it
            self.transport.write(self.me, value)
        except (InputError, StateError):
            self.failed += 1
            raise
        self.sequence = record.sequence
        self._unread[record.sequence] = self.last_crc = zlib.crc32(value)
        if len(self._unread) > WRITTEN_KEPT:
            del self._unread[min(self._unread)]
        self.written += 1
        self.last = record

    def recognise(self, value: bytes) -> bool:
        """Whether ``value``, read under this member's key, is a record it wrote (each
        is recognised once: a copy of one is another process's)."""
        crc = zlib.crc32(value)
        for sequence, written in self._unread.items():
            if written == crc:
                del self._unread[sequence]
                return True
        return False

    def take_former(self, value: bytes, model: dict[str, Any]) -> None:
        """Take ``value`` as the next record of a former process with this id:
        :class:`StateError` when it is none (it does not follow the former process's
        last by one, or is of another ``model``)."""
        record = self.wire.read(self.me, value)
        former = self.former
        if former is not None and record.sequence != former.sequence + 1:
            raise StateError(
                f"record {record.sequence} of a former process with this id does not "
                f"follow its record {former.sequence}"
            )
        if record.model != model:
            raise StateError(f"a former process with this id learned {record.model}")
        self.former = record
        self.former_crc = zlib.crc32(value)

    def take_over(self) -> MemberRecord | None:
        """Go on from the former process's last record, if one was read: this member's
        next record follows it. Returns it."""
        former = self.former
        if former is not None:
            self.sequence = former.sequence
            log.info("group %s: takes over the records of a former process with this id "
                     "(its last, %d, stands at %s)", self.me, former.sequence,
                     {p: pos.offset for p, pos in sorted(former.partitions.items())})  # fmt: skip
        return former

    def checkpoint_mark(self) -> dict[str, Any]:
        """What a checkpoint written now holds of this member's records: the member, and
        the sequence and CRC of its last record (:meth:`why_not_resumed` compares them
        with the topic's when the checkpoint is read)."""
        assert self.last is not None
        return {"member": self.me, "sequence": self.last.sequence, "crc": self.last_crc}

    def why_not_resumed(self, state: Any) -> str | None:
        """Why a checkpoint's group ``state`` (:meth:`checkpoint_mark`) cannot be gone on
        from, read once the former records are: the sync topic's last record of this
        member is not the one the checkpoint was written with (None: it is)."""
        former = self.former
        if not isinstance(state, Mapping) or state.get("member") != self.me:
            return "it holds no state of this member"
        if former is None or state.get("sequence") != former.sequence:
            last = "none" if former is None else former.sequence
            return (f"it was written with record {state.get('sequence')}, the sync topic's "
                    f"last of this member is {last}")  # fmt: skip
        if state.get("crc") not in (None, self.former_crc):
            return f"its record {former.sequence} is not the sync topic's record of that number"
        return None
