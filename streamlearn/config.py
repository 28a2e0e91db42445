"""Frozen configuration of jobs, and learners built from option values.

>>> spec = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1"})
>>> spec.build().eps, spec.build().delta
(0.05, 1.0)
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from streamlearn.errors import InvalidParameterError
from streamlearn.learn import LEARNERS, LinearLearner, ModelBank
from streamlearn.replay import ActiveSetSchedule, ReplaySchedule

#: options that shape the active-set schedule rather than being learner parameters
SCHEDULE_OPTIONS = ("shrink", "active_sets_enabled")
#: how many feature indices ``learn`` and ``serve`` accept unless told otherwise
#: (``--max-features``: 1-based indices up to it). The weights are dense, 8 bytes an index
#: up to the largest seen: without a bound, one line with index 2e9 would make them 16 GB.
#: 2**26 (512 MB of weights) holds KDD Cup 2012's 54.7 million features, among the
#: largest svmlight data sets.
DEFAULT_MAX_FEATURES = 1 << 26
#: how many labels a one-vs-rest bank of ``learn`` and ``serve`` takes unless told
#: otherwise (``--max-labels``). Each label's learner keeps a sign and a slack count per
#: buffer slot (about 1.3 MB with the default buffer), so one line that lists thousands
#: of labels would otherwise cost gigabytes.
DEFAULT_MAX_LABELS = 1000
#: how many weights a one-vs-rest bank of ``learn`` and ``serve`` holds at most unless
#: told otherwise (``--max-weights``): its weights are a dense matrix of labels times
#: features, 8 bytes each, so a few lines that each bring a new label and a large index
#: would otherwise take tens of gigabytes within the other two bounds. 2**26 is the
#: weights of one binary model at ``--max-features``' default (512 MB).
DEFAULT_MAX_WEIGHTS = 1 << 26


@dataclass(frozen=True)
class LearnerSpec:
    """An algorithm name and the parameters given for it (others keep their defaults)."""

    algorithm: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_options(cls, algorithm: str, options: dict[str, Any]) -> LearnerSpec:
        """Keep the options that were given (not None) and check that the algorithm takes
        each of them; ``delta`` may be ``'auto'`` or a number written as text."""
        if algorithm not in LEARNERS:
            known = ", ".join(sorted(LEARNERS))
            raise InvalidParameterError(f"unknown algorithm {algorithm!r} (known: {known})")
        accepted = set(inspect.signature(LEARNERS[algorithm].__init__).parameters)
        params: dict[str, Any] = {}
        schedule: dict[str, Any] = {}
        for name, value in options.items():
            if value is None:
                continue
            if name in SCHEDULE_OPTIONS:
                schedule[name] = value
                continue
            if name not in accepted:
                flag = "--" + name.replace("_", "-")
                raise InvalidParameterError(f"{flag} is not a parameter of {algorithm}")
            params[name] = _parse_delta(value) if name == "delta" else value
        if schedule:
            params["active_sets"] = ActiveSetSchedule(
                enabled=schedule.get("active_sets_enabled", True),
                shrink=schedule.get("shrink", False),
            )
        return cls(algorithm=algorithm, params=params)

    def build(self) -> LinearLearner:
        """A new learner with these parameters."""
        return LEARNERS[self.algorithm](**self.params)

    def conflicts_with(self, learner: LinearLearner) -> list[str]:
        """Parameters given here that differ from ``learner``'s (for --resume)."""
        problems = []
        if learner.algorithm != self.algorithm:
            problems.append(f"--algo {self.algorithm} (the checkpoint holds {learner.algorithm})")
        current = learner.get_params()
        for name, value in self.params.items():
            if name == "active_sets":  # None is the default schedule
                ours, theirs = (
                    value or ActiveSetSchedule(),
                    learner.active_sets or ActiveSetSchedule(),
                )
                if ours != theirs:
                    problems.append(
                        f"--{'' if ours.shrink else 'no-'}shrink (the checkpoint's active sets "
                        f"{'' if theirs.shrink else 'do not '}shrink)"
                    )
            elif name in current and current[name] != value and name != "max_passes":
                flag = "--" + name.replace("_", "-")
                problems.append(f"{flag} {value!r} (the checkpoint has {current[name]!r})")
        return problems


#: a binary learner or a one-vs-rest bank
Model = LinearLearner | ModelBank


@dataclass(frozen=True)
class ModelSpec:
    """A learner spec, and whether to learn one such learner per label (a bank).

    >>> spec = ModelSpec(LearnerSpec("paum", {"tau_pos": 2.0}), True, tau_pos_kappa=-3.0)
    >>> bank = spec.build()
    >>> bank.algorithm, bank.tau_pos_kappa
    ('paum', -3.0)
    >>> ModelSpec(LearnerSpec("pdm")).build().algorithm
    'pdm'
    """

    learner: LearnerSpec
    #: one binary learner per label (a :class:`~streamlearn.learn.ModelBank`)
    one_vs_rest: bool = False
    #: PAUM banks: kappa of the per-label margin of positives
    tau_pos_kappa: float | None = None

    def __post_init__(self) -> None:
        if self.tau_pos_kappa is not None and not self.one_vs_rest:
            raise InvalidParameterError("--tau-pos-kappa needs --one-vs-rest")

    def build(self) -> Model:
        """A new learner, or a new bank of learners with these parameters."""
        if self.one_vs_rest:
            return ModelBank(self.learner.build(), tau_pos_kappa=self.tau_pos_kappa)
        return self.learner.build()


@dataclass(frozen=True)
class LearnConfig:
    """Everything ``streamlearn learn`` does, decided before it starts."""

    learner: LearnerSpec
    inputs: tuple[str, ...] = ()
    model: str | None = None
    resume: str | None = None
    replay: ReplaySchedule = field(default_factory=ReplaySchedule)
    converge: bool = True
    max_passes: int | None = None
    epochs: int | None = None
    max_features: int = DEFAULT_MAX_FEATURES
    max_labels: int = DEFAULT_MAX_LABELS
    max_weights: int = DEFAULT_MAX_WEIGHTS
    strict: bool = False
    chunk_size: int = 4 << 20
    keep: int = 1
    #: one binary learner per label (a :class:`~streamlearn.learn.ModelBank`)
    one_vs_rest: bool = False
    #: PAUM banks: kappa of the per-label margin of positives
    tau_pos_kappa: float | None = None

    def __post_init__(self) -> None:
        if self.epochs is not None and self.epochs < 1:
            raise InvalidParameterError(f"--epochs must be >= 1, got {self.epochs}")
        check_max_features(self.max_features)
        check_max_labels(self.max_labels)
        check_max_weights(self.max_weights)
        if self.keep < 1:
            raise InvalidParameterError(f"--keep must be >= 1, got {self.keep}")
        if self.tau_pos_kappa is not None and not self.one_vs_rest and self.resume is None:
            raise InvalidParameterError("--tau-pos-kappa needs --one-vs-rest")


def check_max_features(value: int) -> None:
    """Refuse a ``--max-features`` the parsers cannot apply (they read int32 indices).

    >>> check_max_features(0)
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: --max-features must be in [1, 2**31], got 0
    """
    if not 1 <= value <= 1 << 31:
        raise InvalidParameterError(f"--max-features must be in [1, 2**31], got {value}")


def check_max_labels(value: int) -> None:
    """Refuse a ``--max-labels`` below 1."""
    if value < 1:
        raise InvalidParameterError(f"--max-labels must be >= 1, got {value}")


def check_max_weights(value: int) -> None:
    """Refuse a ``--max-weights`` below 1.

    >>> check_max_weights(0)
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: --max-weights must be >= 1, got 0
    """
    if value < 1:
        raise InvalidParameterError(f"--max-weights must be >= 1, got {value}")


def features_holding(model: Model, max_features: int) -> int:
    """``max_features``, raised to the features ``model`` already has where it has more
    (the examples ``delta='auto'`` still holds included): a resumed model never has its
    own features refused. The bound keeps a stream from growing the weights; it does not
    shrink them.

    >>> import numpy as np
    >>> model = LearnerSpec("pdm", {"delta": 1.0}).build().learn(np.eye(3), [1, -1, 1])
    >>> features_holding(model, 2), features_holding(model, 10)
    (3, 10)
    >>> held = LearnerSpec("pdm").build().learn(np.eye(5), [1, -1, 1, -1, 1])  # delta auto
    >>> held.n_features_in_, features_holding(held, 2)
    (0, 5)
    """
    return max(max_features, model.features_to_learn())


def _parse_delta(value: Any) -> float | str:
    if isinstance(value, str):
        if value == "auto":
            return value
        try:
            return float(value)
        except ValueError:
            raise InvalidParameterError(
                f"--delta must be 'auto' or a number, got {value!r}"
            ) from None
    return float(value)
