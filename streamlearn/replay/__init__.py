"""Replay of past examples: the bounded buffer, the active-set schedule and the pass order."""

from __future__ import annotations

from streamlearn.replay.active_sets import ActiveSetSchedule
from streamlearn.replay.buffer import ReplayBuffer
from streamlearn.replay.order import pass_permutation
from streamlearn.replay.pacing import ReplayPacer
from streamlearn.replay.scheduler import ReplaySchedule

__all__ = [
    "ActiveSetSchedule",
    "ReplayBuffer",
    "ReplayPacer",
    "ReplaySchedule",
    "pass_permutation",
]
