"""streamlearn: large-margin online learning of linear classifiers on streams.

>>> from streamlearn import PDM
>>> PDM(eps=0.05).eps
0.05
"""

from __future__ import annotations

from streamlearn.errors import (
    CheckpointError,
    DivergenceError,
    InvalidInputError,
    InvalidParameterError,
    StateError,
    StreamlearnError,
)
from streamlearn.learn import (
    LEARNERS,
    PAM,
    PAUM,
    PDM,
    PFM,
    AMargitron,
    Kozinec,
    LinearLearner,
    ModelBank,
    PDMSucc,
    Perceptron,
    TMargitron,
    learner_from_state,
    model_from_state,
)
from streamlearn.learn.export import load_json
from streamlearn.replay import ActiveSetSchedule
from streamlearn.types import Batch

__version__ = "0.1.0"

__all__ = [
    "LEARNERS",
    "PAM",
    "PAUM",
    "PDM",
    "PFM",
    "AMargitron",
    "ActiveSetSchedule",
    "Batch",
    "CheckpointError",
    "DivergenceError",
    "InvalidInputError",
    "InvalidParameterError",
    "Kozinec",
    "LinearLearner",
    "ModelBank",
    "PDMSucc",
    "Perceptron",
    "StateError",
    "StreamlearnError",
    "TMargitron",
    "__version__",
    "learner_from_state",
    "load_json",
    "model_from_state",
]
