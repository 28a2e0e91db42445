"""When a daemon's next checkpoint is due.

Time paces checkpoints by default: one every ``interval`` seconds while the model
changes (new examples, or a replay that changed it), so that disk traffic is bounded at
any rate of examples. With ``every``, a checkpoint is also due after that many new
examples, but not sooner than ``min_interval`` after the last one; a request makes one
due at once.

>>> pacing = CheckpointPacing(interval=30.0, every=1000, min_interval=5.0, last=0.0)
>>> pacing.due(10.0, examples=0, version=0), pacing.due(10.0, examples=1000, version=3)
(False, True)
>>> pacing.due(31.0, examples=1, version=0), pacing.due(2.0, examples=5000, version=9)
(True, False)
>>> pacing.mark(31.0, examples=1000, version=3)
>>> pacing.due(70.0, examples=1000, version=3)
False
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CheckpointPacing:
    """The pace of checkpoints (see the module doc): ``last`` is when the last one was
    written (or given up), ``examples`` and ``version`` how many stream examples and
    which model version it held."""

    interval: float
    every: int | None
    min_interval: float
    last: float
    examples: int = 0
    version: int = 0
    #: a checkpoint asked for (``POST /checkpoint``, a signal): due at the next turn
    requested: bool = False

    def due(self, now: float, examples: int, version: int) -> bool:
        """Whether a checkpoint is due at ``now`` for a model at ``version`` that has
        learned ``examples`` stream examples."""
        if self.requested:
            return True
        elapsed = now - self.last
        new = examples - self.examples
        if self.every is not None and new >= self.every and elapsed >= self.min_interval:
            return True
        changed = new != 0 or version != self.version
        return changed and elapsed >= self.interval

    def mark(self, now: float, examples: int, version: int) -> None:
        """A checkpoint was written at ``now`` (or given up: the next one is then due as
        if it had been written), holding ``examples`` and ``version``."""
        self.last, self.examples, self.version = now, examples, version
