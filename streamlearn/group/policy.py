"""When a member publishes its share: dynamic averaging against periodic averaging.

**Dynamic** (Kamp, Boley, Keren, Schuster and Sharfman, ECML PKDD 2014): every ``every``
learned examples the member measures how far its model has moved since its last record,
relative to it: ||own - published|| / ||model|| over (w, beta); it publishes only when
that exceeds ``threshold``. A record moves the common model by 1/K of that change (K
members learning, see :meth:`GroupShares.damp`), so with every member within the
threshold at its checks the common model, which every member answers with, is within
it of the mean of the members' models, whatever K. A model that has settled sends
nothing; a burst of change is sent at once. **Periodic** (McDonald, Hall and Mann,
NAACL 2010, iterative parameter mixing): it publishes after every ``every`` learned
examples, changed or not. Both also publish when they give partitions up past their
last record (a rebalance), when the stream has brought nothing for ``idle_after``
seconds, at the end, and at least every ``max_interval`` seconds while the share has
changed, so that a member that dies loses at most that much work. A member that has
caught up between two messages of a paced stream is not idle: were it, it would publish
after nearly every poll, whatever the protocol.

A record costs more than its bytes: the member writes its window's certificate and
calibration in it (passes over the window) and waits for the broker to take it. So that
syncing leaves ingestion its pace, a member spends at most ``share`` of its time
publishing: after a record that took ``s`` seconds, the checks of the next ``s * (1 /
share - 1)`` seconds publish nothing (a drift is still there at the first check after).

>>> dynamic = SyncPolicy("dynamic", every=100, threshold=0.1)
>>> dynamic.check_due(examples=250, checked=200), dynamic.check_due(examples=310, checked=200)
(False, True)
>>> dynamic.drifted(distance=0.05, norm=1.0), dynamic.drifted(distance=0.2, norm=1.0)
(False, True)
>>> SyncPolicy("periodic", every=100).drifted(distance=0.0, norm=1.0)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from streamlearn.errors import InvalidParameterError
from streamlearn.options import GROUP, command_line

SyncMode = Literal["dynamic", "periodic"]
SYNC_MODES: tuple[SyncMode, ...] = ("dynamic", "periodic")


@dataclass(frozen=True)
class SyncPolicy:
    """When to publish (see the module doc). Its options are ``serve``'s ``--sync`` (the
    mode) and ``--sync-<field>``."""

    mode: SyncMode = field(
        default="dynamic",
        metadata=command_line(
            "Publish on drift, or every --sync-every.",
            GROUP,
            "|".join(SYNC_MODES),
            name="sync",
            choices=SYNC_MODES,
        ),
    )
    every: int = field(
        default=1000, metadata=command_line("Examples between checks or publications.", GROUP, "N")
    )
    threshold: float = field(
        default=0.6, metadata=command_line("Dynamic: the drift, a share of ||model||.", GROUP, "X")
    )
    max_interval: float = field(
        default=60.0,
        metadata=command_line("Publish at least this often.", GROUP, "DURATION", duration=True),
    )
    share: float = field(
        default=0.1, metadata=command_line("Most of its time spent publishing.", GROUP, "X")
    )
    #: seconds the stream must bring nothing before a member counts it idle (and
    #: publishes what it learned, whatever the protocol says)
    idle_after: float = field(
        default=1.0,
        metadata=command_line(
            "Publish once the stream is idle this long.", GROUP, "DURATION", duration=True
        ),
    )

    def __post_init__(self) -> None:
        if self.mode not in SYNC_MODES:
            raise InvalidParameterError(f"sync mode must be one of {SYNC_MODES}, got {self.mode!r}")
        if self.every < 1:
            raise InvalidParameterError(f"sync every must be >= 1 example, got {self.every}")
        if not self.threshold >= 0:
            raise InvalidParameterError(f"sync threshold must be >= 0, got {self.threshold}")
        if not self.max_interval > 0:
            raise InvalidParameterError(
                f"sync max interval must be > 0 seconds, got {self.max_interval}"
            )
        if not 0 < self.share <= 1:
            raise InvalidParameterError(f"sync share must be in (0, 1], got {self.share}")
        if not self.idle_after >= 0:
            raise InvalidParameterError(
                f"sync idle-after must be >= 0 seconds, got {self.idle_after}"
            )

    def check_due(self, examples: int, checked: int) -> bool:
        """Whether ``examples`` learned in all (``checked`` at the last check) call for a
        check of the drift (dynamic) or a publication (periodic)."""
        return examples - checked >= self.every

    def pause_after(self, seconds: float) -> float:
        """Seconds without publications after a record that took ``seconds``, so that
        publishing takes ``share`` of the time at most.

        >>> SyncPolicy(share=0.2).pause_after(0.5), SyncPolicy(share=1.0).pause_after(0.5)
        (2.0, 0.0)
        """
        return seconds * (1.0 / self.share - 1.0)

    def drifted(self, distance: float, norm: float) -> bool:
        """Whether a share ``distance`` away from the published one, in a model of norm
        ``norm``, is to be published (always, for periodic averaging)."""
        if self.mode == "periodic":
            return True
        return distance > self.threshold * norm
