"""Frozen configuration of jobs, and learners built from option values.

>>> spec = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1"})
>>> spec.build().eps, spec.build().delta
(0.05, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamlearn.errors import InvalidParameterError
from streamlearn.learn import (
    LEARNERS,
    LearnerTable,
    LinearLearner,
    Model,
    ModelBank,
    ModelLimits,
    model_from_state,
)
from streamlearn.learn.params import AUTO_DELTAS, REQUIRED
from streamlearn.options import INPUT, ONE_VS_REST, OUTPUT, REPLAY, command_line
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
#: where ``serve``'s HTTP API listens unless told otherwise (``--http-addr``)
DEFAULT_HTTP_ADDR = "127.0.0.1:9109"
#: the largest request body the HTTP API reads unless told otherwise (``--http-max-body``)
DEFAULT_HTTP_MAX_BODY = 4 << 20
#: how far below learning the HTTP thread's priority is unless told otherwise
#: (``--http-nice``): a flood of requests then slows answers before it slows learning
DEFAULT_HTTP_NICE = 5

# the options of the bounds and of one-vs-rest, which ``learn`` and ``serve`` share
MAX_FEATURES_OPTION = command_line("Reject lines with larger indices.", INPUT, "N")
MAX_LABELS_OPTION = command_line("Reject lines that bring more labels.", ONE_VS_REST, "N")
MAX_WEIGHTS_OPTION = command_line(
    "Reject lines that make labels x features larger.", ONE_VS_REST, "N"
)
ONE_VS_REST_OPTION = command_line("One binary learner per label.", ONE_VS_REST, show_default=False)
TAU_POS_KAPPA_OPTION = command_line("PAUM: tau_pos per label by its rarity.", ONE_VS_REST, "K")


@dataclass(frozen=True)
class LearnerSpec:
    """An algorithm name and the parameters given for it (others keep their defaults);
    ``learners`` is the table the algorithm is found in."""

    algorithm: str
    params: dict[str, Any] = field(default_factory=dict)
    learners: LearnerTable = field(default_factory=lambda: LEARNERS, compare=False, repr=False)

    @classmethod
    def from_options(
        cls, algorithm: str, options: dict[str, Any], learners: LearnerTable = LEARNERS
    ) -> LearnerSpec:
        """Keep the options that were given (not None) and check that the algorithm takes
        each of them; ``delta`` may be ``'auto'`` or a number written as text."""
        if algorithm not in learners:
            raise learners.unknown(algorithm)
        accepted = set(learners[algorithm].param_names())
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
        return cls(algorithm=algorithm, params=params, learners=learners)

    def build(self) -> LinearLearner:
        """A new learner with these parameters; a parameter without a default must have
        been given (PFM's ``beta``).

        >>> LearnerSpec("pfm").build()
        Traceback (most recent call last):
        ...
        streamlearn.errors.InvalidParameterError: pfm needs --beta (it has no default)
        """
        entry = self.learners.entry(self.algorithm)
        for param in entry.params:
            if param.default is REQUIRED and param.name not in self.params:
                flag = "--" + param.name.replace("_", "-")
                raise InvalidParameterError(f"{self.algorithm} needs {flag} (it has no default)")
        return self.learners[self.algorithm](**self.params)

    def conflicts_with(self, model: Model) -> list[str]:
        """Parameters given here that differ from ``model``'s learners' (for --resume)."""
        problems = []
        if model.algorithm != self.algorithm:
            problems.append(f"--algo {self.algorithm} (the checkpoint holds {model.algorithm})")
        current = model.get_params()
        for name, value in self.params.items():
            if name == "active_sets":  # None is the default schedule
                ours, theirs = (
                    value or ActiveSetSchedule(),
                    current.get("active_sets") or ActiveSetSchedule(),
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

    def restore(self, state: dict[str, Any]) -> Model:
        """The model a state holds (of any kind: see :meth:`kind_problem`)."""
        return model_from_state(state, self.learner.learners)

    def kind_problem(self, model: Model) -> str | None:
        """What is wrong with holding ``model`` where this spec asks for its kind: a bank
        for a binary model or the other way round (None when it is the kind asked)."""
        held = model.one_vs_rest
        if held == self.one_vs_rest:
            return None
        return "a one-vs-rest model bank" if held else "a binary model"


def resume_conflicts(
    learner: LearnerSpec, one_vs_rest: bool, tau_pos_kappa: float | None, model: Model
) -> list[str]:
    """Options given for a resumed ``model`` that differ from what it holds: the learner's
    parameters, for a bank its ``tau_pos_kappa``, and ``--one-vs-rest`` for a binary model.

    >>> import numpy as np
    >>> model = LearnerSpec("pdm", {"eps": 0.1}).build()
    >>> resume_conflicts(LearnerSpec("pdm", {"eps": 0.2}), True, None, model)
    ['--eps 0.2 (the checkpoint has 0.1)', '--one-vs-rest (the checkpoint holds a binary model)']
    """
    problems = learner.conflicts_with(model)
    held = model.get_params()
    if held.get("one_vs_rest", False):
        kappa = held.get("tau_pos_kappa")
        if tau_pos_kappa is not None and tau_pos_kappa != kappa:
            problems.append(f"--tau-pos-kappa (the checkpoint has {kappa!r})")
    elif one_vs_rest:
        problems.append("--one-vs-rest (the checkpoint holds a binary model)")
    return problems


@dataclass(frozen=True)
class LearnConfig:
    """Everything ``streamlearn learn`` does, decided before it starts (each field that an
    option of ``learn`` sets declares it: :mod:`streamlearn.options`)."""

    learner: LearnerSpec
    inputs: tuple[str, ...] = ()
    model: str | None = field(
        default=None, metadata=command_line("Write the model here.", OUTPUT, "FILE")
    )
    resume: str | None = field(
        default=None, metadata=command_line("Continue from this model file.", OUTPUT, "FILE")
    )
    replay: ReplaySchedule = field(default_factory=ReplaySchedule)
    converge: bool = field(
        default=True, metadata=command_line("Replay to convergence at the end.", REPLAY)
    )
    max_passes: int | None = None
    epochs: int | None = field(
        default=None, metadata=command_line("N plain passes instead of replay.", REPLAY, "N")
    )
    max_features: int = field(default=DEFAULT_MAX_FEATURES, metadata=MAX_FEATURES_OPTION)
    max_labels: int = field(default=DEFAULT_MAX_LABELS, metadata=MAX_LABELS_OPTION)
    max_weights: int = field(default=DEFAULT_MAX_WEIGHTS, metadata=MAX_WEIGHTS_OPTION)
    strict: bool = field(
        default=False,
        metadata=command_line("Stop at the first bad line (exit 2).", INPUT, show_default=False),
    )
    chunk_size: int = 4 << 20
    keep: int = field(
        default=1, metadata=command_line("Model files to keep (m.ckpt.1, ...).", OUTPUT, "N")
    )
    #: one binary learner per label (a :class:`~streamlearn.learn.ModelBank`)
    one_vs_rest: bool = field(default=False, metadata=ONE_VS_REST_OPTION)
    #: PAUM banks: kappa of the per-label margin of positives
    tau_pos_kappa: float | None = field(default=None, metadata=TAU_POS_KAPPA_OPTION)

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

    @property
    def limits(self) -> ModelLimits:
        """What a stream may make the model hold."""
        return ModelLimits(max_labels=self.max_labels, max_weights=self.max_weights)


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
    (those of the examples an older version's state held back for ``delta='auto'``
    included): a resumed model never has its own features refused. The bound keeps a
    stream from growing the weights; it does not shrink them.

    >>> import numpy as np
    >>> model = LearnerSpec("pdm", {"delta": 1.0}).build().learn(np.eye(3), [1, -1, 1])
    >>> features_holding(model, 2), features_holding(model, 10)
    (3, 10)
    """
    return max(max_features, model.features_to_learn())


def _parse_delta(value: Any) -> float | str:
    if isinstance(value, str):
        if value in AUTO_DELTAS:
            return value
        try:
            return float(value)
        except ValueError:
            raise InvalidParameterError(
                f"--delta must be 'auto', 'first' or a number, got {value!r}"
            ) from None
    return float(value)
