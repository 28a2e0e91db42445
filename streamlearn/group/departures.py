"""Partitions that leave a member: handed over at a rebalance, or lost.

At a rebalance the member publishes where it stopped in the partitions it gives up, and
the rebalance waits for that record (:func:`hand_over`): their next owner resumes there,
and without it would resume where an older record stands and learn again what the
member learned since. A member whose session expired lost its partitions instead: the
consumer group gave them to others while it still learned, so no record of it may claim
them any more, and a member that lost every partition goes back to its last record
(:class:`LastRecord`), as if it had stopped there.

>>> clock = iter(range(100))
>>> tries = []
>>> def publish():
...     tries.append(1)
...     if len(tries) < 3:
...         raise InputError("no answer")
>>> warned = []
>>> hand_over(publish, clock=lambda: next(clock), sleep=lambda s: None, warn=warned.append,
...           me="m")
>>> len(tries), len(warned)
(3, 2)
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any, Protocol

from streamlearn.errors import InputError, StateError
from streamlearn.group.records import MemberRecord

log = logging.getLogger("streamlearn.group")

#: seconds a member giving partitions up keeps trying to write the record that says
#: where it stopped (their next owner resumes from an older record without it)
HANDOVER_WAIT = 60.0
#: seconds between two tries of that record
HANDOVER_RETRY = 1.0


def hand_over(
    publish: Callable[[], None],
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    warn: Callable[[str], None],
    me: str,
) -> None:
    """``publish`` the record of the partitions given up, trying again every
    :data:`HANDOVER_RETRY` seconds for :data:`HANDOVER_WAIT` while the broker does not
    take it (:class:`InputError`); a record the others would refuse (:class:`StateError`)
    is not tried again, no try changes that."""
    deadline = clock() + HANDOVER_WAIT
    while True:
        try:
            publish()
            return
        except StateError as exc:
            warn(f"group {me}: record not published ({exc})")
            return
        except InputError as exc:
            if clock() + HANDOVER_RETRY >= deadline:
                log.error("group %s: the record of the partitions given up is not "
                          "published (%s): their next owner resumes where the last record "
                          "stands", me, exc)  # fmt: skip
                return
            warn(f"group {me}: the record of the partitions given up is not published "
                 f"yet ({exc}); trying again")  # fmt: skip
            sleep(HANDOVER_RETRY)


def report_lost(me: str, partitions: set[int], dropped: int, went_back: bool) -> None:
    """Log that ``partitions`` were lost, and what becomes of the ``dropped`` examples
    learned from them since the member's last record."""
    if went_back:
        log.warning("group %s: lost partitions %s (the consumer group gave them to others "
                    "without this member: its session expired); it goes back to its last "
                    "record, dropping the %d examples it learned from them since, which "
                    "their next owners learn from where that record stands",
                    me, sorted(partitions), dropped)  # fmt: skip
    else:
        log.warning("group %s: lost partitions %s (the consumer group gave them to others "
                    "without this member: its session expired); their next owners resume "
                    "where its last record stands, and learn again the %d examples it "
                    "learned from them since", me, sorted(partitions), dropped)  # fmt: skip


class Restorable(Protocol):
    """A learner or a member's shares: a state to keep and load back."""

    def state_dict(self) -> dict[str, Any]: ...


class LastRecord:
    """The learner's state and the member's shares as they were once its last record was
    written, to go back to when it loses its partitions (kept only by a member with a
    view of the consumer group: only that view tells that partitions were lost)."""

    def __init__(self) -> None:
        self._kept: tuple[int, dict[str, Any], dict[str, Any]] | None = None

    def keep(self, record: MemberRecord, learner: Restorable, shares: Restorable) -> None:
        """``record`` was just written, with ``learner`` and ``shares`` as they are."""
        self._kept = (
            record.sequence,
            copy.deepcopy(learner.state_dict()),
            copy.deepcopy(shares.state_dict()),
        )

    def states(self, last: MemberRecord | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Copies of the learner's and the shares' states kept with ``last``, the
        member's last record (None: none kept with it)."""
        kept = self._kept
        if kept is None or last is None or kept[0] != last.sequence:
            return None
        return copy.deepcopy(kept[1]), copy.deepcopy(kept[2])
