"""How much replay a daemon may do while it is behind its stream: a share of the time.

A daemon learns every arriving example first. While messages keep arriving it may spend
a ``share`` of the wall time on replay passes, and only while it is not falling further
behind (its lag is not growing): so its lag stays bounded whenever examples arrive more
slowly than it learns them without replay. Only the time spent behind the stream counts:
idle time is replay time already, and is not banked for the next burst. The pacer is
plain bookkeeping: it is told the time and the lag, it never reads a clock.

The pacer waits until the credit covers what the next pass should take: the last pass's
duration (a pass the daemon cut short counts as a whole one), scaled by how much the
buffer has grown since; before any pass has been timed, ``max_credit``; never more than
``pass_limit``, when passes are cut short after that long.

>>> pacer = ReplayPacer(share=0.25)
>>> pacer.tick(now=0.0, lag=100); pacer.tick(now=2.0, lag=80)
>>> pacer.may_replay(examples=1000), pacer.credit  # no pass timed yet: 1 s of credit
(False, 0.5)
>>> pacer.tick(now=4.0, lag=60); pacer.may_replay(examples=1000)
True
>>> pacer.spent(1.75, examples=1000); pacer.may_replay(examples=1000)
False
>>> pacer.tick(now=5.0, lag=120)  # falling behind: no time for replay accrues
>>> pacer.credit
-0.75
>>> pacer.tick(now=14.0, lag=100); pacer.credit  # 1.5 s, capped at the last pass's 1.75 s
1.5
>>> pacer.tick(now=20.0, lag=0, behind=False); pacer.credit  # idle: nothing accrues
1.5
>>> cut = ReplayPacer(share=0.25, pass_limit=0.25)  # passes cut short after 0.25 s
>>> cut.tick(now=0.0, lag=100); cut.tick(now=1.0, lag=90); cut.may_replay(examples=1000)
True
>>> pacer.may_replay(examples=800), pacer.may_replay(examples=1000)  # 1.4 s, 1.75 s
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import InvalidParameterError


@dataclass
class ReplayPacer:
    """Replay time a daemon may take while behind: ``share`` of the time that passes
    while its lag is not growing (or unknown), at most ``max_credit`` seconds ahead (or
    the last pass's duration, when longer)."""

    share: float
    max_credit: float = 1.0
    #: seconds after which the daemon cuts a pass short (None: passes run whole)
    pass_limit: float | None = None
    #: replay seconds allowed now (negative after a pass that took more)
    credit: float = 0.0
    #: how long the last replay pass took, per buffered example (None before the first)
    seconds_per_example: float | None = None
    #: whether the lag grew at the last tick (the daemon is falling behind)
    growing: bool = False
    _next_pass: float = 0.0
    _last_time: float | None = None
    _last_lag: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.share < 1.0:
            raise InvalidParameterError(f"the replay share must be in [0, 1), got {self.share!r}")

    def tick(self, now: float, lag: int | None, behind: bool = True) -> None:
        """Account the time since the last tick; ``lag`` is how many messages are
        waiting (None when the source cannot tell), ``behind`` whether messages arrived
        since the last tick."""
        self.growing = lag is not None and self._last_lag is not None and lag > self._last_lag
        if self._last_time is not None and behind and not self.growing:
            gained = self.share * max(0.0, now - self._last_time)
            cap = max(self.max_credit, self._next_pass)
            self.credit = min(self.credit + gained, cap)
        self._last_time = now
        self._last_lag = lag

    def may_replay(self, examples: int) -> bool:
        """Whether a replay pass over ``examples`` buffered examples fits in the time
        allowed (as long, per example, as the last pass)."""
        per_example = self.seconds_per_example
        estimate = self.max_credit if per_example is None else per_example * examples
        self._next_pass = estimate if self.pass_limit is None else min(estimate, self.pass_limit)
        return self.share > 0.0 and self.credit > 0.0 and self.credit >= self._next_pass

    def spent(self, seconds: float, examples: int) -> None:
        """A replay pass over ``examples`` buffered examples took ``seconds`` of the
        credit."""
        self.credit -= seconds
        self.timed(seconds, examples)

    def timed(self, seconds: float, examples: int) -> None:
        """A replay pass over ``examples`` took ``seconds`` outside the credit (idle)."""
        self.seconds_per_example = seconds / max(examples, 1)
