"""The learners: thin classes over one engine, one per entry of the table of learners.

>>> from streamlearn.learn import PDM, LEARNERS
>>> LEARNERS["pdm"] is PDM, PDM.entry.summary.split(":")[0]
(True, 'The perceptron with dynamic margin (Panagiotakopoulos and Tsampouka)')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamlearn.errors import StateError
from streamlearn.learn.bank import ModelBank
from streamlearn.learn.bank_codec import BANK_FORMAT
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.labelsets import LabelledRows, as_labelled_rows
from streamlearn.learn.model import Examples, Model, ModelLimits
from streamlearn.learn.params import Param
from streamlearn.learn.state import LearnerState
from streamlearn.learn.table import LEARNERS, LearnerEntry, LearnerTable

# the learner classes, made from the table (pickle finds them here by name)
Perceptron = LEARNERS["perceptron"]
PAM = LEARNERS["pam"]
PAUM = LEARNERS["paum"]
PFM = LEARNERS["pfm"]
PDM = LEARNERS["pdm"]
PDMSucc = LEARNERS["pdm-succ"]
TMargitron = LEARNERS["t-margitron"]
AMargitron = LEARNERS["a-margitron"]
Kozinec = LEARNERS["kozinec"]


def learner_from_state(state: dict[str, Any], learners: LearnerTable = LEARNERS) -> LinearLearner:
    """Rebuild whichever learner made ``state`` (see ``LinearLearner.state_dict``);
    ``learners`` is the table its algorithm is found in."""
    if not isinstance(state, Mapping):
        raise StateError(f"a learner state is a map, got {type(state).__name__}")
    algorithm = state.get("algorithm")
    if algorithm not in learners:
        raise StateError(f"unknown algorithm in state: {algorithm!r}")
    return learners[str(algorithm)].from_state(state)


def model_from_state(state: dict[str, Any], learners: LearnerTable = LEARNERS) -> Model:
    """Rebuild a learner or a one-vs-rest bank, whichever made ``state``."""
    if not isinstance(state, Mapping):
        raise StateError(f"a model state is a map, got {type(state).__name__}")
    if state.get("format") == BANK_FORMAT:
        return ModelBank.from_state(state, learners)
    return learner_from_state(state, learners)


__all__ = [
    "LEARNERS",
    "PAM",
    "PAUM",
    "PDM",
    "PFM",
    "AMargitron",
    "Examples",
    "Kozinec",
    "LabelledRows",
    "LearnerEntry",
    "LearnerState",
    "LearnerTable",
    "LinearLearner",
    "Model",
    "ModelBank",
    "ModelLimits",
    "PDMSucc",
    "Param",
    "Perceptron",
    "TMargitron",
    "as_labelled_rows",
    "learner_from_state",
    "model_from_state",
]
