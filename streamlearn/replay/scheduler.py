"""When to replay while a stream arrives: a pure function of counts, never of the clock.

After every ``every`` new examples the learner replays its buffer for up to ``passes``
full passes (with the active sets). Because the plan depends only on how many examples
have arrived, a run cut into any pieces, or killed and restarted from a checkpoint that
holds the count, replays at exactly the same points.

>>> schedule = ReplaySchedule(every=1000, passes=2)
>>> schedule.split(examples_seen=900, n_new=2500)
[100, 1000, 1000, 400]
>>> schedule.replays_after(examples_seen=900, n_new=100)
2
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import InvalidParameterError


@dataclass(frozen=True)
class ReplaySchedule:
    """Replay ``passes`` full passes after every ``every`` new examples (0 disables).

    ``after_eviction=False`` drops the replays due once the buffer has evicted an
    example: for a job whose result is the last window's model (``streamlearn learn``),
    a replay of a window that later examples push out only perturbs the start of the
    final replay.
    """

    every: int = 10_000
    passes: int = 1
    after_eviction: bool = True

    def __post_init__(self) -> None:
        if self.every < 0:
            raise InvalidParameterError(f"replay every must be >= 0, got {self.every}")
        if self.passes < 0:
            raise InvalidParameterError(f"replay passes must be >= 0, got {self.passes}")

    @property
    def enabled(self) -> bool:
        """Whether the stream is interleaved with replay at all."""
        return self.every > 0 and self.passes > 0

    def split(self, examples_seen: int, n_new: int) -> list[int]:
        """Sizes of the consecutive pieces of ``n_new`` arriving examples, cut where a
        replay is due (pieces ending on a multiple of ``every``)."""
        if not self.enabled or n_new == 0:
            return [n_new] if n_new else []
        pieces = []
        position = examples_seen
        remaining = n_new
        while remaining > 0:
            to_boundary = self.every - position % self.every
            piece = min(to_boundary, remaining)
            pieces.append(piece)
            position += piece
            remaining -= piece
        return pieces

    def replays_after(self, examples_seen: int, n_new: int) -> int:
        """Replay passes due once a piece of ``n_new`` examples (from :meth:`split`) that
        started after ``examples_seen`` has been learned."""
        if not self.enabled:
            return 0
        return self.passes if (examples_seen + n_new) % self.every == 0 else 0
