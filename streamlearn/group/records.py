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

import math
from dataclasses import dataclass, field
from typing import Any

import msgpack

from streamlearn.errors import StateError
from streamlearn.learn.contribution import MAX_EXPONENT, Contribution, features_reachable
from streamlearn.learn.params import MAX_AUGMENTATION

FORMAT = "streamlearn.group"
#: a record of one binary model's share
VERSION = 1
#: a record of a one-vs-rest bank's shares, one per label value (its ``share`` is empty)
BANK_VERSION = 2

#: bounds of a record's fields: nothing a member writes comes near them
MAX_MEMBER_ID = 256
MAX_SEQUENCE = 1 << 48
MAX_COUNT = 1 << 62
MAX_PARTITION = (1 << 31) - 1
MAX_PARTITIONS = 1 << 16
MAX_MEMBERS = 1 << 12
#: the most labels a bank's record may hold shares of
MAX_LABELS = 1 << 16
#: bounds of the msgpack structure (a text, an array, a map): a declared length beyond
#: them is refused before anything is allocated for it
MAX_TEXT = 1 << 16
MAX_ARRAY = 1 << 16
MAX_MAP = 1 << 17


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
    #: the members whose shares were in the writer's model (itself included): a member
    #: the consumer group no longer lists is known to the group through them
    members: tuple[str, ...] = ()
    #: the Delta the member learned under when it wrote (0: none yet); with
    #: ``--delta auto`` or ``first`` the group's Delta is the largest of them
    delta: float = 0.0
    #: a one-vs-rest bank's shares by label value, in the writer's label order (None: a
    #: binary model's record, whose share is ``share``)
    labels: LabelShares | None = None
    #: anything newer writers add, kept as read
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, eq=False)
class LabelShares:
    """A one-vs-rest bank's shares: (label value, share, calibration slope fitted on the
    writer's window) for each label its writer has (a label it never saw has none: it
    contributes nothing to that label's model)."""

    shares: tuple[tuple[float, Contribution, float], ...] = ()

    def get(self, label: float) -> Contribution | None:
        """The share of ``label``, None when the writer has none."""
        for value, share, _ in self.shares:
            if value == label:
                return share
        return None

    @property
    def labels(self) -> tuple[float, ...]:
        return tuple(value for value, _, _ in self.shares)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelShares):
            return NotImplemented
        return len(self.shares) == len(other.shares) and all(
            a == b for a, b in zip(self.shares, other.shares, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]


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
        "members": list(record.members),
        "delta": record.delta,
    }
    if record.labels is not None:  # a bank's: binary readers refuse it by its version
        data["version"] = BANK_VERSION
        span = label_span(record.labels)
        data["labels"] = [
            [value, share.to_plain(span), slope] for value, share, slope in record.labels.shares
        ]
    packed: bytes = msgpack.packb(data, use_bin_type=True)
    return packed


def decode_record(
    value: bytes, max_features: int, *, key: str | None = None, max_exponent: int = MAX_EXPONENT
) -> MemberRecord:
    """The record of ``value`` (written under ``key``, when given); :class:`StateError`
    saying why it is not one.

    Nothing of it is taken before it is checked: the msgpack structure within bounds (no
    declared length is allocated beyond the bytes there are, no text, map or array
    larger than a record needs), every field of the type and in the range it must be,
    every number finite, the share within ``max_features`` and the magnitudes a model
    holds (:meth:`Contribution.from_plain`), the member the key it is written under.

    >>> decode_record(b"\\x81\\x91\\x01\\x01", 1 << 20)
    Traceback (most recent call last):
    ...
    streamlearn.errors.StateError: sync record: not msgpack (unhashable type: 'list')
    """
    data = _unpacked(value)
    if data.get("format") != FORMAT:
        raise StateError("sync record: not a streamlearn group record")
    version = data.get("version")
    if version not in (VERSION, BANK_VERSION) or isinstance(version, bool):
        raise StateError(f"sync record: version {version!r}, expected {VERSION} or {BANK_VERSION}")
    try:
        member = _text(data["member"], "member")
        if key is not None and key != member:
            raise StateError(f"sync record: member {member!r} written under the key {key!r}")
        model = data["model"]
        if not isinstance(model, dict):
            raise StateError("sync record: model is not a map")
        return MemberRecord(
            member=member,
            sequence=_count(data["sequence"], "sequence", low=1, high=MAX_SEQUENCE),
            time=_finite(data["time"], "time"),
            model=model,
            share=Contribution.from_plain(data["share"], max_features, max_exponent),
            examples=_count(data["examples"], "examples"),
            partitions=_positions(data["partitions"], "partitions"),
            released=_positions(data["released"], "released"),
            window=_window(data["window"]),
            members=_members(data.get("members", [])),
            delta=_delta(data.get("delta", 0.0)),
            labels=(
                _label_shares(data["labels"], max_features, max_exponent)
                if version == BANK_VERSION
                else None
            ),
        )
    except KeyError as exc:
        raise StateError(f"sync record: {exc} is missing") from exc
    except StateError as exc:
        message = str(exc).removeprefix("sync record: ")
        raise StateError(f"sync record: {message}") from exc


def _unpacked(value: Any) -> dict[str, Any]:
    """The msgpack map of ``value``, unpacked within the bounds of a record."""
    if not isinstance(value, bytes):
        raise StateError("sync record: no value")
    try:
        data = msgpack.unpackb(
            value, raw=False, strict_map_key=False, max_bin_len=len(value),
            max_str_len=MAX_TEXT, max_array_len=MAX_ARRAY, max_map_len=MAX_MAP, max_ext_len=0,
        )  # fmt: skip
    except (ValueError, TypeError, msgpack.exceptions.UnpackException, RecursionError) as exc:
        raise StateError(f"sync record: not msgpack ({exc})") from exc
    if not isinstance(data, dict):
        raise StateError("sync record: not a streamlearn group record")
    return data


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_MEMBER_ID:
        raise StateError(f"{name} must be a text of 1 to {MAX_MEMBER_ID} characters")
    return value


def _count(value: Any, name: str, low: int = 0, high: int = MAX_COUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise StateError(f"{name} must be an integer in [{low}, {high}], got {value!r:.40}")
    return value


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateError(f"{name} must be a number, got {type(value).__name__}")
    number = float(value) if abs(value) < 2.0**1023 else math.inf
    if not math.isfinite(number):
        raise StateError(f"{name} must be finite, got {value!r:.40}")
    return number


def _positions(data: Any, name: str) -> dict[int, PartitionPosition]:
    if not isinstance(data, dict) or len(data) > MAX_PARTITIONS:
        raise StateError(f"{name} must be a map of at most {MAX_PARTITIONS} partitions")
    positions = {}
    for partition, position in data.items():
        if not isinstance(position, list) or len(position) != 2:
            raise StateError(f"{name}: a position is [offset, examples]")
        positions[_count(partition, f"{name}: a partition", high=MAX_PARTITION)] = (
            PartitionPosition(
                _count(position[0], f"{name}: an offset"),
                _count(position[1], f"{name}: a count of examples"),
            )
        )
    return positions


def _window(data: Any) -> WindowView:
    if not isinstance(data, list) or len(data) != 5:
        raise StateError("window must be [examples, capacity, margin, bound, slope]")
    examples, capacity, margin, bound, slope = data
    return WindowView(
        _count(examples, "window examples"), _count(capacity, "window capacity"),
        _finite(margin, "window margin"), _finite(bound, "window bound"),
        _finite(slope, "window slope"),
    )  # fmt: skip


def _delta(data: Any) -> float:
    delta = _finite(data, "delta")
    if not 0.0 <= delta <= MAX_AUGMENTATION:  # as any member's Delta is, given or settled
        raise StateError(f"delta must be in [0, {MAX_AUGMENTATION:g}], got {delta!r}")
    return delta


def _members(data: Any) -> tuple[str, ...]:
    if not isinstance(data, list) or len(data) > MAX_MEMBERS:
        raise StateError(f"members must be a list of at most {MAX_MEMBERS} ids")
    return tuple(_text(member, "a member") for member in data)


def label_span(labels: LabelShares) -> int:
    """The features every label's share of a bank record is padded to (0: none), so
    that its labels times the features they span stay within what its entries pay for
    (:func:`features_reachable`): a reader's dense weights cost at most 128 times the
    record's bytes, however many labels it holds."""
    shares = [share for _, share, _ in labels.shares]
    n = max((share.n_features for share in shares), default=0)
    entries = sum(share.indices.shape[0] for share in shares)
    return n if len(shares) * n > features_reachable(entries) else 0


def _label_shares(data: Any, max_features: int, max_exponent: int) -> LabelShares:
    """A bank record's shares: [label value, share, slope] entries, each label a finite
    number written once."""
    if not isinstance(data, list) or len(data) > MAX_LABELS:
        raise StateError(f"labels must be a list of at most {MAX_LABELS} [label, share, slope]")
    shares: list[tuple[float, Contribution, float]] = []
    seen: set[float] = set()
    for entry in data:
        if not isinstance(entry, list) or len(entry) != 3:
            raise StateError("labels: an entry is [label, share, slope]")
        value = _finite(entry[0], "a label")
        if value in seen:
            raise StateError(f"labels: label {value!r} is written twice")
        seen.add(value)
        share = Contribution.from_plain(entry[1], max_features, max_exponent)
        shares.append((value, share, _finite(entry[2], "a label's slope")))
    n = max((share.n_features for _, share, _ in shares), default=0)
    entries = sum(share.indices.shape[0] for _, share, _ in shares)
    if len(shares) * n > features_reachable(entries):
        raise StateError(
            f"labels: {len(shares)} labels of {n} features are beyond what {entries} "
            f"entries may span ({features_reachable(entries)})"
        )
    return LabelShares(tuple(shares))
