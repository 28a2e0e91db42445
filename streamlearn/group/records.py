"""What a member of a learning group publishes on the sync topic: one msgpack record,
keyed by its member id, that replaces its previous one.

A record says everything the group needs of the member: its share of the common model
(:class:`~streamlearn.learn.contribution.Contribution`), where it stands in each of its
partitions (the next offset to learn, and how many labelled examples the group has
learned from the partition up to there, whoever learned them), where it stopped in the
partitions it gave up while their examples may still be in its window, and its view of
the certificate (the margin of its model on its own window). Positions and share are
written together, so whoever takes a partition next resumes exactly where the share in
the group's model ends.

>>> record = MemberRecord(
...     member="a", sequence=3, time=0.0, model={"algorithm": "pdm", "params": {"eps": 0.1}},
...     share=Contribution.zero(), examples=10,
...     partitions={0: PartitionPosition(offset=12, examples=10)}, released={},
...     window=WindowView(examples=10, capacity=100, margin=0.5, bound=0.6))
>>> decode_record(encode_record(record), max_features=2**31) == record
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgpack

from streamlearn.errors import StateError
from streamlearn.learn.contribution import Contribution

FORMAT = "streamlearn.group"
VERSION = 1


@dataclass(frozen=True)
class PartitionPosition:
    """Where a partition's learning stands."""

    #: the next offset to learn (everything before it has been learned by the group)
    offset: int
    #: labelled examples learned from the partition before ``offset``, by any member
    examples: int


@dataclass(frozen=True)
class WindowView:
    """The certificate as the member sees it on its own window."""

    examples: int
    capacity: int
    #: margin of the member's model (the group's, once in sync) on its window
    margin: float
    #: upper bound on the maximum margin of the union of the windows in its model
    bound: float
    #: slope of the Platt scaling fitted on its window (see :mod:`streamlearn.learn.calibration`)
    slope: float = 1.0


@dataclass(frozen=True)
class MemberRecord:
    """One member's latest word on the sync topic."""

    member: str
    #: counts the member's records: a later record of the same member replaces an earlier
    sequence: int
    #: wall clock (seconds since the epoch) when it was written
    time: float
    #: the algorithm and its parameters: members of a group must agree on them
    model: dict[str, Any]
    share: Contribution
    #: labelled examples learned, in all
    examples: int
    partitions: dict[int, PartitionPosition]
    #: partitions given up, with where the member stopped in each
    released: dict[int, PartitionPosition]
    window: WindowView
    #: anything newer writers add, kept as read
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


def encode_record(record: MemberRecord) -> bytes:
    """The record as msgpack bytes."""
    data = {
        "format": FORMAT,
        "version": VERSION,
        "member": record.member,
        "sequence": record.sequence,
        "time": record.time,
        "model": record.model,
        "share": record.share.to_plain(),
        "examples": record.examples,
        "partitions": {p: [pos.offset, pos.examples] for p, pos in record.partitions.items()},
        "released": {p: [pos.offset, pos.examples] for p, pos in record.released.items()},
        "window": [
            record.window.examples,
            record.window.capacity,
            record.window.margin,
            record.window.bound,
            record.window.slope,
        ],
    }
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    return packed


def decode_record(value: bytes, max_features: int) -> MemberRecord:
    """The record of ``value``; :class:`StateError` saying why it is not one."""
    try:
        data = msgpack.unpackb(value, raw=False, strict_map_key=False)
    except (ValueError, msgpack.exceptions.ExtraData, msgpack.exceptions.FormatError) as exc:
        raise StateError(f"sync record: not msgpack ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StateError("sync record: not a streamlearn group record")
    if data.get("version") != VERSION:
        raise StateError(f"sync record: version {data.get('version')!r}, expected {VERSION}")
    try:
        examples, capacity, margin, bound, slope = data["window"]
        return MemberRecord(
            member=str(data["member"]),
            sequence=int(data["sequence"]),
            time=float(data["time"]),
            model=dict(data["model"]),
            share=Contribution.from_plain(data["share"], max_features),
            examples=int(data["examples"]),
            partitions=_positions(data["partitions"]),
            released=_positions(data["released"]),
            window=WindowView(
                int(examples), int(capacity), float(margin), float(bound), float(slope)
            ),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StateError(f"sync record: malformed ({exc!r})") from exc


def _positions(data: Any) -> dict[int, PartitionPosition]:
    return {
        int(p): PartitionPosition(int(offset), int(examples))
        for p, (offset, examples) in dict(data).items()
    }
