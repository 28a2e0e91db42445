"""How much replay a daemon may do while it is behind its stream: a share of the time.

A daemon learns every arriving example first. While messages keep arriving it may spend
a ``share`` of the wall time on replay passes, and only while it is not falling further
behind (its lag is not growing): so its lag stays bounded whenever examples arrive more
slowly than it learns them without replay. Once it has caught up, all of its idle time
is replay time. The pacer is plain bookkeeping: it is told the time and the lag, it
never reads a clock.

>>> pacer = ReplayPacer(share=0.25)
>>> pacer.tick(now=0.0, lag=100); pacer.tick(now=2.0, lag=80)
>>> pacer.may_replay(), pacer.credit
(True, 0.5)
>>> pacer.spent(0.75); pacer.may_replay()
False
>>> pacer.tick(now=3.0, lag=120)  # falling behind: no time for replay accrues
>>> pacer.credit
-0.25
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import InvalidParameterError


@dataclass
class ReplayPacer:
    """Replay time a daemon may take while behind: ``share`` of the time that passes
    while its lag is not growing (or unknown), at most ``max_credit`` seconds ahead."""

    share: float
    max_credit: float = 1.0
    #: replay seconds allowed now (negative after a pass that took more)
    credit: float = 0.0
    _last_time: float | None = None
    _last_lag: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.share < 1.0:
            raise InvalidParameterError(f"the replay share must be in [0, 1), got {self.share!r}")

    def tick(self, now: float, lag: int | None) -> None:
        """Account the time since the last tick; ``lag`` is how many messages are
        waiting (None when the source cannot tell)."""
        if self._last_time is not None:
            growing = lag is not None and self._last_lag is not None and lag > self._last_lag
            if not growing:
                gained = self.share * max(0.0, now - self._last_time)
                self.credit = min(self.credit + gained, self.max_credit)
        self._last_time = now
        self._last_lag = lag

    def may_replay(self) -> bool:
        """Whether a replay pass fits in the time allowed."""
        return self.share > 0.0 and self.credit > 0.0

    def spent(self, seconds: float) -> None:
        """A replay pass took ``seconds``."""
        self.credit -= seconds
