"""When to replay while a stream arrives: a pure function of counts, never of the clock.

After every ``every`` new examples the learner replays its buffer for up to ``passes``
full passes (with the active sets; a replay that takes evicted examples out of the model
goes on until it converges, see ``LinearLearner.replay``). Because the plan depends only
on how many examples have arrived, a run cut into any pieces, or killed and restarted
from a checkpoint that holds the count, replays at exactly the same points.

>>> schedule = ReplaySchedule(every=1000, passes=2)
>>> schedule.split(examples_seen=900, n_new=2500)
[100, 1000, 1000, 400]
>>> schedule.replays_after(examples_seen=900, n_new=100)
2

A growing schedule (the river adapters' default) replays after ``every`` examples, then
each time the count has grown by a ``growth``-th of itself, so that a stream's replays
cost a constant number of passes per example while the first examples still get them;
once the count reaches the buffer's size the gaps stay at ``window // growth``:

>>> growing = ReplaySchedule.growing(window=8000)
>>> points = [1000]
>>> while points[-1] < 14000:
...     points.append(growing.next_after(points[-1]))
>>> points
[1000, 2000, 3000, 4500, 6750, 10125, 14125]
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import InvalidParameterError

#: the growing schedule's defaults: the first replay, and the growth between replays
GROWING_FIRST = 1000
GROWING_GROWTH = 2


@dataclass(frozen=True)
class ReplaySchedule:
    """Replay ``passes`` full passes after every ``every`` new examples (0 disables).

    ``after_eviction=False`` drops the replays due once the buffer has evicted an
    example: for a job whose result is the last window's model (``streamlearn learn``),
    a replay of a window that later examples push out only perturbs the start of the
    final replay.

    ``growth`` (0: the gaps are all ``every``) makes the gaps grow with the count: after
    ``every`` examples, then after a ``growth``-th more of the count each time (never
    fewer than ``every``), up to ``window // growth`` once the count passes ``window``
    (:meth:`growing`).
    """

    every: int = 10_000
    passes: int = 1
    after_eviction: bool = True
    growth: int = 0
    window: int = 0

    def __post_init__(self) -> None:
        if self.every < 0:
            raise InvalidParameterError(f"replay every must be >= 0, got {self.every}")
        if self.passes < 0:
            raise InvalidParameterError(f"replay passes must be >= 0, got {self.passes}")
        if self.growth < 0 or (self.growth and self.window < 1):
            raise InvalidParameterError(
                f"a growing replay schedule needs growth >= 1 and a window >= 1, got "
                f"growth {self.growth} and window {self.window}"
            )

    @classmethod
    def growing(
        cls,
        window: int,
        passes: int = 1,
        every: int = GROWING_FIRST,
        growth: int = GROWING_GROWTH,
    ) -> ReplaySchedule:
        """The schedule whose gaps grow with the count, for a buffer of ``window``."""
        return cls(every=every, passes=passes, growth=growth, window=window)

    @property
    def enabled(self) -> bool:
        """Whether the stream is interleaved with replay at all."""
        return self.every > 0 and self.passes > 0

    def next_after(self, examples_seen: int) -> int:
        """The count after which the next replay is due, the first above
        ``examples_seen``; 0 when the schedule is not :attr:`enabled` (no count is due).

        >>> ReplaySchedule(every=1000).next_after(2500), ReplaySchedule(every=1000).next_after(3000)
        (3000, 4000)
        >>> ReplaySchedule(every=0).next_after(2500)
        0
        """
        if not self.enabled:
            return 0
        every = self.every
        if not self.growth:
            return (examples_seen // every + 1) * every
        point = every
        while point <= examples_seen:
            step = max(every, min(point, self.window) // self.growth)
            if point >= self.window:  # constant gaps from here on
                return point + ((examples_seen - point) // step + 1) * step
            point += step
        return point

    def split(self, examples_seen: int, n_new: int) -> list[int]:
        """Sizes of the consecutive pieces of ``n_new`` arriving examples, cut where a
        replay is due."""
        if not self.enabled or n_new == 0:
            return [n_new] if n_new else []
        pieces = []
        position = examples_seen
        end = examples_seen + n_new
        while position < end:
            cut = min(self.next_after(position), end)
            pieces.append(cut - position)
            position = cut
        return pieces

    def replays_after(self, examples_seen: int, n_new: int) -> int:
        """Replay passes due once a piece of ``n_new`` examples (from :meth:`split`) that
        started after ``examples_seen`` has been learned."""
        if not self.enabled or n_new == 0:
            return 0
        end = examples_seen + n_new
        return self.passes if self.next_after(end - 1) == end else 0
