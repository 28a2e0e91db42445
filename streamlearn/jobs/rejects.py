"""Bookkeeping of rejected input lines: counts by reason and the first few in full."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from streamlearn.errors import BadLineError
from streamlearn.parse import Rejected


@dataclass
class RejectLog:
    """Counts rejected lines by reason and keeps the first ``keep`` of them.

    With ``strict`` the first rejection raises :class:`~streamlearn.errors.BadLineError`.
    ``on_reject`` (if given) sees every rejection as it happens.
    """

    strict: bool = False
    keep: int = 10
    on_reject: Callable[[Rejected], None] | None = None
    counts: Counter[str] = field(default_factory=Counter)
    first: list[Rejected] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Lines rejected so far."""
        return sum(self.counts.values())

    def add(self, rejected: Iterable[Rejected]) -> None:
        """Record rejections (in line order)."""
        for item in rejected:
            if self.strict:
                raise BadLineError(f"line {item.line}: {item.reason}: {item.text!r}")
            self.counts[item.reason] += 1
            if len(self.first) < self.keep:
                self.first.append(item)
            if self.on_reject is not None:
                self.on_reject(item)
