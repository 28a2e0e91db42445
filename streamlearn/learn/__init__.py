"""The learners: thin classes over one engine, one per update rule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamlearn.errors import StateError
from streamlearn.learn.bank import BANK_FORMAT, ModelBank
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.kozinec import Kozinec
from streamlearn.learn.labelsets import LabelledRows, as_labelled_rows
from streamlearn.learn.margitron import AMargitron, TMargitron
from streamlearn.learn.paum import PAUM
from streamlearn.learn.pdm import PDM, PFM, PDMSucc
from streamlearn.learn.perceptron import PAM, Perceptron

#: every learner class by its ``algorithm`` name
LEARNERS: dict[str, type[LinearLearner]] = {
    cls.algorithm: cls
    for cls in (Perceptron, PAM, PAUM, PFM, PDM, PDMSucc, TMargitron, AMargitron, Kozinec)
}


def learner_from_state(state: dict[str, Any]) -> LinearLearner:
    """Rebuild whichever learner made ``state`` (see ``LinearLearner.state_dict``)."""
    if not isinstance(state, Mapping):
        raise StateError(f"a learner state is a map, got {type(state).__name__}")
    algorithm = state.get("algorithm")
    if algorithm not in LEARNERS:
        raise StateError(f"unknown algorithm in state: {algorithm!r}")
    return LEARNERS[str(algorithm)].from_state(state)


def model_from_state(state: dict[str, Any]) -> LinearLearner | ModelBank:
    """Rebuild a learner or a one-vs-rest bank, whichever made ``state``."""
    if not isinstance(state, Mapping):
        raise StateError(f"a model state is a map, got {type(state).__name__}")
    if state.get("format") == BANK_FORMAT:
        return ModelBank.from_state(state)
    return learner_from_state(state)


__all__ = [
    "LEARNERS",
    "PAM",
    "PAUM",
    "PDM",
    "PFM",
    "AMargitron",
    "Kozinec",
    "LabelledRows",
    "LinearLearner",
    "ModelBank",
    "PDMSucc",
    "Perceptron",
    "TMargitron",
    "as_labelled_rows",
    "learner_from_state",
    "model_from_state",
]
