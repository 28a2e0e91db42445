"""A group's records as the sync topic carries them: msgpack bytes
(:func:`~streamlearn.group.records.encode_record`), signed with the group's secret when
it has one (:mod:`~streamlearn.group.signing`).

A member reads every record, its own included, with the same checks: the one it is
about to write is read back first, so that it never writes what the others would refuse.

>>> from streamlearn.group.records import MemberRecord, WindowView
>>> from streamlearn.learn.contribution import Contribution
>>> wire = RecordWire(secret=b"s3cret", max_features=1 << 20, max_exponent=0)
>>> record = MemberRecord(member="a", sequence=1, time=0.0, model={},
...                       share=Contribution.zero(), examples=0, partitions={},
...                       released={}, window=WindowView(0, 10, 0.0, 0.0, 1.0))
>>> wire.read("a", wire.bytes_of(record)) == record
True
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.group.records import MemberRecord, decode_record, encode_record
from streamlearn.group.signing import signed, verified


@dataclass(frozen=True)
class RecordWire:
    """How a member writes and reads records (``secret``: the group's, None when its
    records are not signed; ``max_features``, ``max_exponent``: the largest share a
    record may hold)."""

    secret: bytes | None
    max_features: int
    max_exponent: int

    def bytes_of(self, record: MemberRecord) -> bytes:
        """``record`` as written under its member's key."""
        value = encode_record(record)
        if self.secret is not None:
            value = signed(value, record.member, self.secret)
        return value

    def read(self, key: str, value: bytes) -> MemberRecord:
        """The record of ``value`` written under ``key``, signed with the group's secret
        when it has one; :class:`StateError` saying why it is none."""
        if self.secret is not None:
            value = verified(value, key, self.secret)
        return decode_record(value, self.max_features, key=key, max_exponent=self.max_exponent)
