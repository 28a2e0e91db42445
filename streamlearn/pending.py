"""Examples predicted with an id, kept until their label comes (delayed labels).

A prediction asked with an id leaves its example here: its features, the label the
prediction named and when it was made. A later label for the id takes the example out
once (:meth:`PendingExamples.find`, then :meth:`PendingExamples.joined` when it is
learned), so the model learns it and the earlier prediction is scored against its label.
What is kept is bounded: at most ``max_examples`` (the oldest is evicted to make room)
for at most ``ttl`` seconds (then expired). The ids labelled, expired or evicted last are
remembered (as many as ``max_examples``), so that a second label for an id is refused as
``already labelled`` and a late one as ``expired`` or ``evicted``, not as an unknown id.

Pure: the time is an argument (seconds since the epoch, so that it means the same after
a restart), and the state goes out and comes back as plain lists and arrays.

>>> import numpy as np
>>> pending = PendingExamples(max_examples=2, ttl=60.0)
>>> example = PendingExample(np.array([0, 3], dtype=np.int32), np.array([1.0, 2.0]), 1.0, 0.0)
>>> pending.add("a", example), pending.add("b", example), pending.add("c", example)
(0, 0, 1)
>>> pending.find("a", now=1.0), len(pending)
('evicted', 2)
>>> found = pending.find("b", now=1.0)
>>> found.predicted, pending.joined("b"), pending.find("b", now=2.0)
(1.0, None, 'already labelled')
>>> pending.find("c", now=100.0), pending.find("zzz", now=100.0), len(pending)
('expired', 'unknown id', 0)
>>> pending.counts()["refused"]
{'unknown id': 1, 'expired': 1, 'evicted': 1, 'already labelled': 1}
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.parse import ParsedRows
from streamlearn.types import offsets

#: why a label finds no example to join
UNKNOWN_ID = "unknown id"
EXPIRED = "expired"
EVICTED = "evicted"
ALREADY_LABELLED = "already labelled"
REFUSALS = (UNKNOWN_ID, EXPIRED, EVICTED, ALREADY_LABELLED)
#: why an id cannot be given to a new prediction (its example still waits for a label)
ID_PENDING = "id pending"
#: the checkpoint's name and version of this state
STATE_FORMAT, STATE_VERSION = "streamlearn.pending", 1


@dataclass(frozen=True)
class PendingExample:
    """An example predicted with an id: its features, the label the prediction named
    (NaN: none, a bank that knew no label yet) and when the prediction was made."""

    indices: npt.NDArray[np.int32]
    values: npt.NDArray[np.float64]
    predicted: float
    at: float


class PendingExamples:
    """Examples waiting for their label, by id (see the module doc).

    Parameters
    ----------
    max_examples:
        Examples kept at most; the oldest is evicted to make room for a new one.
    ttl:
        Seconds an example waits for its label, at most; then it expires.
    """

    def __init__(self, max_examples: int, ttl: float) -> None:
        if isinstance(max_examples, bool) or not (
            isinstance(max_examples, int) and max_examples >= 1
        ):
            raise InvalidParameterError(
                f"--pending-max must be an integer >= 1, got {max_examples!r}"
            )
        if not ttl > 0.0:  # NaN too
            raise InvalidParameterError(f"--pending-ttl must be > 0 seconds, got {ttl!r}")
        self.max_examples = max_examples
        self.ttl = ttl
        self._waiting: OrderedDict[str, PendingExample] = OrderedDict()
        #: ids whose example left, and why a label for them now is refused
        self._gone: OrderedDict[str, str] = OrderedDict()
        self.joined_total = 0
        self.expired_total = 0
        self.evicted_total = 0
        self.refused: dict[str, int] = dict.fromkeys(REFUSALS, 0)
        #: a count of the changes (adds, joins, expiries): what a checkpoint would hold
        self.changes = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def taken(self, example_id: str) -> str | None:
        """Why ``example_id`` cannot be given to a new prediction (its example waits, or
        was labelled: a label for it would be refused), or None when it can."""
        if example_id in self._waiting:
            return ID_PENDING
        if self._gone.get(example_id) == ALREADY_LABELLED:
            return ALREADY_LABELLED
        return None

    def add(self, example_id: str, example: PendingExample) -> int:
        """Keep ``example`` under ``example_id`` (the caller checked :meth:`taken`); how
        many older examples were evicted to make room."""
        self.expire(example.at)
        self._gone.pop(example_id, None)
        self._waiting[example_id] = example
        self.changes += 1
        return self._evict_beyond_bound()

    def _evict_beyond_bound(self) -> int:
        """Evict the oldest examples beyond ``max_examples``; how many went."""
        evicted = 0
        while len(self._waiting) > self.max_examples:
            oldest, _ = self._waiting.popitem(last=False)
            self._forget(oldest, EVICTED)
            evicted += 1
        self.evicted_total += evicted
        return evicted

    def find(self, example_id: str, now: float) -> PendingExample | str:
        """The example waiting under ``example_id``, or why there is none (one of
        :data:`REFUSALS`, counted). It waits on until :meth:`joined` says it was
        learned: a label the model refuses leaves it waiting for a good one."""
        self.expire(now)
        example = self._waiting.get(example_id)
        if example is not None:
            return example
        reason = self._gone.get(example_id, UNKNOWN_ID)
        self.refused[reason] += 1
        return reason

    def refuse(self, reason: str) -> None:
        """Count a label refused for ``reason`` (one of :data:`REFUSALS`) by its caller:
        a second label for an id among labels taken together."""
        self.refused[reason] += 1

    def joined(self, example_id: str) -> None:
        """The example of ``example_id`` was learned with its label: it leaves, and a
        second label for the id is refused."""
        if self._waiting.pop(example_id, None) is not None:
            self.joined_total += 1
            self.changes += 1
            self._forget(example_id, ALREADY_LABELLED)

    def expire(self, now: float) -> int:
        """Let the examples older than ``ttl`` at ``now`` go; how many went."""
        waiting, limit, expired = self._waiting, now - self.ttl, 0
        while waiting:
            oldest = next(iter(waiting))
            if waiting[oldest].at > limit:
                break
            del waiting[oldest]
            self._forget(oldest, EXPIRED)
            expired += 1
        if expired:
            self.expired_total += expired
            self.changes += 1
        return expired

    def _forget(self, example_id: str, why: str) -> None:
        """Remember why ``example_id`` left (the last ``max_examples`` ids only)."""
        gone = self._gone
        gone.pop(example_id, None)
        gone[example_id] = why
        while len(gone) > self.max_examples:
            gone.popitem(last=False)

    def counts(self) -> dict[str, Any]:
        """Examples waiting, and the totals: joined, expired, evicted, refused by reason."""
        return {
            "examples": len(self._waiting),
            "joined": self.joined_total,
            "expired": self.expired_total,
            "evicted": self.evicted_total,
            "refused": dict(self.refused),
        }

    def state(self) -> dict[str, Any]:
        """Everything kept, as plain lists and arrays (for a checkpoint)."""
        examples = list(self._waiting.values())
        lengths = np.array([e.indices.shape[0] for e in examples], dtype=np.int64)
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "ids": list(self._waiting),
            "indptr": offsets(lengths),
            "indices": _joined([e.indices for e in examples], np.int32),
            "values": _joined([e.values for e in examples], np.float64),
            "predicted": np.array([e.predicted for e in examples], dtype=np.float64),
            "at": np.array([e.at for e in examples], dtype=np.float64),
            "gone_ids": list(self._gone),
            "gone_reasons": list(self._gone.values()),
            "counts": self.counts(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`state` gave (bounded by this store's own limits: the
        oldest beyond ``max_examples`` are evicted). :class:`StateError` when it is not
        such a state."""
        if state.get("format") != STATE_FORMAT or state.get("version") != STATE_VERSION:
            raise StateError("the pending examples are not in a format this version reads")
        try:
            ids, indptr = list(state["ids"]), np.asarray(state["indptr"], dtype=np.int64)
            indices = np.asarray(state["indices"], dtype=np.int32)
            values = np.asarray(state["values"], dtype=np.float64)
            predicted, at = state["predicted"], state["at"]
            gone = list(zip(state["gone_ids"], state["gone_reasons"], strict=True))
            counts = state["counts"]
            self._waiting.clear()
            self._gone.clear()
            for example_id, why in gone:
                if why in REFUSALS:
                    self._forget(str(example_id), why)
            for i, example_id in enumerate(ids):
                start, stop = int(indptr[i]), int(indptr[i + 1])
                self._waiting[str(example_id)] = PendingExample(
                    indices[start:stop].copy(), values[start:stop].copy(),
                    float(predicted[i]), float(at[i]),
                )  # fmt: skip
            self.joined_total = int(counts["joined"])
            self.expired_total = int(counts["expired"])
            self.evicted_total = int(counts["evicted"])
            self.refused = {r: int(counts["refused"].get(r, 0)) for r in REFUSALS}
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise StateError(f"malformed pending examples ({exc})") from exc
        self._evict_beyond_bound()


@dataclass(frozen=True)
class Joined:
    """A label by id that found its example: the line that gave it, the id, the labels
    and the example."""

    line: int
    example_id: str
    labels: list[float]
    example: PendingExample


def labelled_rows(joined: Sequence[Joined]) -> ParsedRows:
    """The examples ``joined`` found, with their labels, as rows to learn (each on the
    line that labelled it).

    >>> one = PendingExample(np.array([2], dtype=np.int32), np.array([0.5]), 1.0, 0.0)
    >>> rows = labelled_rows([Joined(3, "a", [-1.0], one)])
    >>> rows.indices.tolist(), rows.labels.tolist(), rows.line_numbers.tolist()
    ([2], [-1.0], [3])
    """
    lengths = np.array([one.example.indices.shape[0] for one in joined], dtype=np.int64)
    label_counts = np.array([len(one.labels) for one in joined], dtype=np.int64)
    return ParsedRows(
        offsets(lengths),
        _joined([one.example.indices for one in joined], np.int32),
        _joined([one.example.values for one in joined], np.float64),
        offsets(label_counts),
        np.array([label for one in joined for label in one.labels], dtype=np.float64),
        np.array([one.line for one in joined], dtype=np.int64),
        [],
    )


def is_correct(predicted: float, labels: Sequence[float]) -> bool:
    """Whether a prediction that named ``predicted`` was right about an example with
    ``labels`` (its one label, or a bank's label set: right when it holds the label).

    >>> is_correct(1.0, [1.0]), is_correct(3.0, [1.0, 2.0]), is_correct(float("nan"), [1.0])
    (True, False, False)
    """
    return any(label == predicted for label in labels)


def _joined(parts: list[npt.NDArray[Any]], dtype: type) -> npt.NDArray[Any]:
    """The arrays ``parts`` end to end (an empty array of ``dtype`` for none)."""
    return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype=dtype)
