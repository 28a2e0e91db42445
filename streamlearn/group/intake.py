"""The intake of a member's reads of the sync topic: every record is checked before it is
taken into the member's table, and one that fails a check is counted, logged and
ignored, never fatal (anyone who can write to the topic can send anything).

A record is checked on its own first (:meth:`RecordWire.read`: its bytes, its signature,
its key), then against the group: its model must be the member's, its sequence must
follow its member's last by one (:meth:`GroupTable.check`), its positions must lie
within the input topic's logs (:meth:`ConsumerGroupWatch.check_positions`), and its
member must be known to the group. Records under the member's own key are its own
(:class:`OwnRecords`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from streamlearn.errors import StateError
from streamlearn.group.own_records import OwnRecords
from streamlearn.group.records import MemberRecord
from streamlearn.group.refusals import RefusalLog
from streamlearn.group.table import GroupTable
from streamlearn.group.watch import ConsumerGroupWatch
from streamlearn.group.wire import RecordWire

log = logging.getLogger("streamlearn.group")

#: members of another model remembered (for :meth:`RecordIntake.check_models`)
MAX_FOREIGN = 1024


class RecordIntake:
    """Takes the records member ``me`` reads into its ``table``, once they pass the
    checks (``clock``: the time refusals are logged by)."""

    def __init__(
        self,
        me: str,
        table: GroupTable,
        *,
        wire: RecordWire,
        own: OwnRecords,
        watch: ConsumerGroupWatch,
        clock: Callable[[], float],
    ) -> None:
        self.me = me
        self.table = table
        self.wire = wire
        self.own = own
        self.watch = watch
        self.clock = clock
        self.records_read = 0
        self.records_refused = 0
        self._refusals = RefusalLog()
        #: the algorithm and parameters of members whose records are of another model
        self._foreign: dict[str, dict[str, Any]] = {}
        #: whether the member has read the topic at its start (records under its key are
        #: until then those of a former process with its id)
        self.joined = False

    def take(self, entries: list[tuple[str, bytes | None]]) -> bool:
        """Apply records read; whether the table changed. A record is taken only once
        it passed every check: on its own (:meth:`_decoded`), then against the group
        (:meth:`_admit_all`). Any other is counted, logged (a line per kind of reason
        and minute) and ignored, never fatal."""
        decoded: list[MemberRecord] = []
        for key, value in entries:
            self.records_read += 1
            try:
                record = self._decoded(key, value)
            except StateError as exc:
                self.refuse(key, exc)
                continue
            except Exception as exc:  # no record may stop a member
                self.refuse(key, StateError(f"unreadable ({exc!r:.200})"))
                continue
            if record is not None:
                decoded.append(record)
        self.watch.read_done()
        return self._admit_all(decoded) if decoded else False

    def check_models(self, members: set[str] | None) -> None:
        """:class:`StateError` when a member of the consumer group (``members``) learns
        another model than this member."""
        if members is None:
            return
        for member, model in sorted(self._foreign.items()):
            if member in members and member != self.me:
                raise StateError(
                    f"member {member!r} of the learning group learns {model}, this member "
                    f"{self.table.model}: a member whose algorithm or parameters differ "
                    "from the group's does not join (start it with the group's, or stop "
                    "every member to change them)"
                )

    def refuse(self, key: str, exc: StateError) -> None:
        """Count a refused record and log it (a line per kind of reason and minute)."""
        self.records_refused += 1
        reason = str(exc).removeprefix("sync record: ")
        line = self._refusals.line(reason, key, self.clock())
        if line is not None:
            log.warning("group %s: %s", self.me, line)

    def _decoded(self, key: str, value: bytes | None) -> MemberRecord | None:
        """The record of an entry, checked on its own (:meth:`RecordWire.read`, its key
        its member's); None for this member's own."""
        if value is None:
            raise StateError(f"a deletion of member {key!r}'s record (members delete none)")
        if key == self.me:
            self._own(value)
            return None
        return self.wire.read(key, value)

    def _own(self, value: bytes) -> None:
        """A record under this member's key: one it wrote, or, read at the start, one of
        a former process with its id (taken over in order: :meth:`GroupMember.join`);
        any other is another process's, refused (a copy of one it wrote too: each comes
        back once)."""
        if self.own.recognise(value):
            return
        if self.joined:
            raise StateError("written under this member's id by another process")
        self.own.take_former(value, self.table.model)

    def _admit_all(self, records: list[MemberRecord]) -> bool:
        """Apply ``records`` in their order, those of members the group knows: members
        of the consumer group now, members whose records are held, and members in the
        model of a member it knows (a member that died or left is known to those that
        saw it). A record of a member it does not know is refused once no record of
        the batch makes it known. Without a view of the consumer group, and while it
        has no other member (a group that starts anew), the records' own checks decide."""
        known = self._known()
        members: set[str] | None = set()
        if any(record.member not in known for record in records):
            members = self.watch.members_now()
            if members is not None and not self.joined and not members - {self.me}:
                log.info("group %s: nobody else is in the consumer group: the records "
                         "found are judged by their own checks", self.me)  # fmt: skip
                members = None
        changed = False
        pending = records
        while pending:
            left: list[MemberRecord] = []
            waiting: set[str] = set()  # a member's records are taken in their order
            for record in pending:
                if record.member in waiting or (
                    members is not None and record.member not in known | members
                ):
                    left.append(record)
                    waiting.add(record.member)
                    continue
                try:
                    self._admit(record)
                except StateError as exc:
                    self.refuse(record.member, exc)
                    continue
                changed = True
                known |= {record.member, *record.members}
            if len(left) == len(pending):
                break
            pending = left
        for record in pending:
            self.refuse(record.member, StateError(
                f"member {record.member!r} is not known to the group (not in the consumer "
                "group, nor in the model of a member it knows)"
            ))  # fmt: skip
        return changed

    def _known(self) -> set[str]:
        """This member, the members whose records are held, and those in their models."""
        known = {self.me, *self.table.records}
        for record in self.table.records.values():
            known.update(record.members)
        return known

    def _admit(self, record: MemberRecord) -> None:
        """Take ``record`` into the table: :class:`StateError` when it is of another
        model (noted: :meth:`check_models`), does not follow the member's last by one
        (:meth:`GroupTable.apply`), or names a partition the input topic does not have
        or a position beyond the end of its log."""
        if record.model != self.table.model:
            # only a member that never wrote this model's records is of another model: a
            # record of another model under a member's key is forged
            held = record.member in self.table.records
            if not held and (record.member in self._foreign or len(self._foreign) < MAX_FOREIGN):
                self._foreign[record.member] = record.model
            raise StateError(
                f"member {record.member!r} learns {record.model}, this member "
                f"{self.table.model}: members of a group must run the same algorithm and "
                "parameters"
            )
        self.table.check(record)
        self.watch.check_positions(record)
        self.table.apply(record)
        self._foreign.pop(record.member, None)
