"""What the serve loop learns: one model, a learning group's member, or keyed models.

Each is a :class:`Mode` (:mod:`streamlearn.modes.base`): the loop hands it each poll and
each post, and asks it what replay passes go over, what a turn does besides, what
partitions handed over mean, which model answers, what a snapshot and a checkpoint hold.
"""

from streamlearn.modes.base import (
    DecodedPoll,
    FirstLines,
    Intake,
    Mode,
    Outcome,
    Poll,
    Replayable,
)
from streamlearn.modes.group import GroupMode
from streamlearn.modes.keyed import KeyedMode
from streamlearn.modes.single import SingleModel

__all__ = [
    "DecodedPoll",
    "FirstLines",
    "GroupMode",
    "Intake",
    "KeyedMode",
    "Mode",
    "Outcome",
    "Poll",
    "Replayable",
    "SingleModel",
]
