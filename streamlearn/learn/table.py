"""The table of learners: each learner described once.

An entry says everything about a learner that is not the engine's: its name, its rule
(the kernel's code and how its parameters become the rule's two numbers), its own
parameters with their defaults, constraints and docs, and what sets it apart (PAUM's
learning rate scales the weights, Kozinec's a is a convex combination, PDM-succ runs in
successive eps). The learner classes (:class:`PDM`, :class:`PAUM`, ...) are made from
it, and so are the command line's options, the scikit-learn estimators
(:mod:`streamlearn.sklearn`) and the river classifiers (:mod:`streamlearn.river`). A new
learner is its rule kernel, one entry and its tests (see ``docs/extending.md``).

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0]])
>>> y = [1, -1, 1, -1]
>>> model = LEARNERS["pdm"](eps=0.1, delta=0.0).fit(X, y)
>>> model.converged, model.summary()["certified_gap"] <= 0.1
(True, True)
>>> [LEARNERS[name](delta=0.0, **LEARNERS.entry(name).test_params).fit(X, y).predict(X).tolist()
...  == y for name in LEARNERS]
[True, True, True, True, True, True, True, True, True]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from streamlearn._kernels import (
    RULE_AMARGITRON,
    RULE_KOZINEC,
    RULE_PAM,
    RULE_PAUM,
    RULE_PDM,
    RULE_PERCEPTRON,
    RULE_PFM,
    RULE_TMARGITRON,
)
from streamlearn._kernels.rules import RULES, rule_facts
from streamlearn.errors import InvalidParameterError
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.params import (
    COMMON_PARAMS,
    REQUIRED,
    Param,
    above_one,
    below_two,
    finite,
    flag,
    init_function,
    non_negative,
    positive,
    unit_interval,
)
from streamlearn.learn.successive import SuccessiveRuns, check_runs

RuleValues = Callable[[Any], tuple[float, float]]


def _no_rule_values(learner: Any) -> tuple[float, float]:
    return (0.0, 0.0)


@dataclass(frozen=True, eq=False)
class LearnerEntry:
    """One learner (see the module doc).

    name
        The algorithm's name: ``--algo``, states and metrics use it.
    class_name
        The name of the learner class; the adapters' names derive from it
        (``PDMClassifier``, ``PDMOneVsRestClassifier``, ...).
    rule
        The engine's rule code (:mod:`streamlearn._kernels.rules`).
    summary
        One line: what the learner does.
    params
        The rule's own parameters, before :data:`~streamlearn.learn.params.COMMON_PARAMS`.
    rule_values
        The kernel's two rule numbers from a learner (its parameters as attributes).
    details
        More docs for the class, after the summary.
    output_factor
        The factor from the engine's weights to the reported ones (PAUM: its learning
        rate ``lr``; the engine runs w / lr).
    multiple_updates
        Replay can add an example several times at once (PDM, PFM); the learner then
        takes a ``multiple_updates`` flag.
    behaviour
        The base class of the learner class (``SuccessiveRuns`` for PDM-succ).
    check
        A check of the parameters together (after each one's own).
    target_gap
        The certified gap at which replay stops converged, from a learner (PDM: its
        eps); None: replay stops only when a full pass makes no update.
    divergence_hint
        Said when replay overflows, formatted with the parameters.
    test_params
        Values for the parameters without a default, for generic checks and examples.
    module
        The module where the generated classes are reachable by ``class_name`` (pickle
        finds them there).
    """

    name: str
    class_name: str
    rule: int
    summary: str
    params: tuple[Param, ...] = ()
    rule_values: RuleValues = _no_rule_values
    details: str = ""
    output_factor: Callable[[Any], float] | None = None
    multiple_updates: bool = False
    behaviour: type[LinearLearner] = LinearLearner
    check: Callable[[dict[str, Any]], None] | None = None
    target_gap: Callable[[Any], float] | None = None
    divergence_hint: str = "check the parameters"
    test_params: Mapping[str, Any] = field(default_factory=dict)
    module: str = "streamlearn.learn"

    def __post_init__(self) -> None:
        rule_facts(self.rule)  # an unknown rule code is an error here, not a NaN later

    @property
    def convex_combination(self) -> bool:
        """Whether a is a convex combination of the examples (the rule's
        :class:`~streamlearn._kernels.rules.RuleFacts`)."""
        return RULES[self.rule].convex_combination

    @property
    def scale_free(self) -> bool:
        """Whether no common positive factor of the state changes the rule's comparisons
        (the rule's :class:`~streamlearn._kernels.rules.RuleFacts`)."""
        return RULES[self.rule].scale_free

    @cached_property
    def all_params(self) -> tuple[Param, ...]:
        """The rule's parameters, then the common ones: ``__init__``'s order."""
        return (*self.params, *COMMON_PARAMS)

    @cached_property
    def signature(self) -> inspect.Signature:
        """The parameters as a signature (without ``self``), to bind arguments."""
        return inspect.Signature([p.signature_parameter() for p in self.all_params])

    def param(self, name: str) -> Param:
        """The parameter called ``name`` (KeyError when the learner has none)."""
        for param in self.all_params:
            if param.name == name:
                return param
        raise KeyError(name)

    def check_together(self, params: dict[str, Any]) -> None:
        """Run :attr:`check` on checked parameter values."""
        if self.check is not None:
            self.check(params)

    @cached_property
    def learner_class(self) -> type[LinearLearner]:
        """The learner class of this entry (made once)."""
        return learner_class(self)

    def docstring(self) -> str:
        """The class docstring: summary, details, then the rule's parameters."""
        lines = [self.summary]
        if self.details:
            lines += ["", self.details]
        if self.params:
            lines += ["", "Parameters", "----------"]
            for param in self.params:
                default = "" if param.default is REQUIRED else f" Default {param.default!r}."
                lines += [param.name, f"    {param.doc}{default}"]
        lines += ["", "And the parameters every learner takes (:class:`LinearLearner`)."]
        return "\n".join(lines)


def learner_class(entry: LearnerEntry) -> type[LinearLearner]:
    """A learner class for ``entry``: ``entry.behaviour`` with the entry's parameters as
    its ``__init__`` signature."""
    init = init_function(f"{entry.class_name}.__init__", entry.signature, LinearLearner.__init__)
    namespace = {
        "__init__": init,
        "__doc__": entry.docstring(),
        "__module__": entry.module,
        "__qualname__": entry.class_name,
        "entry": entry,
        "algorithm": entry.name,
        "rule": entry.rule,
        "supports_multiple_updates": entry.multiple_updates,
    }
    return type(entry.class_name, (entry.behaviour,), namespace)


class LearnerTable(Mapping[str, type[LinearLearner]]):
    """Learner classes by algorithm name, with their entries (:meth:`entry`).

    >>> table = LEARNERS.with_entry(LearnerEntry("pam-5", "PAM5", RULE_PAM, "PAM with tau 5.",
    ...     rule_values=lambda learner: (5.0, 0.0), module=__name__))
    >>> sorted(set(table) - set(LEARNERS)), table["pam-5"]().algorithm
    (['pam-5'], 'pam-5')
    """

    def __init__(self, entries: Iterable[LearnerEntry]) -> None:
        self._entries: dict[str, LearnerEntry] = {}
        for entry in entries:
            if entry.name in self._entries:
                raise InvalidParameterError(f"two learners are called {entry.name!r}")
            self._entries[entry.name] = entry

    def __getitem__(self, name: str) -> type[LinearLearner]:
        return self._entries[name].learner_class

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, name: str) -> LearnerEntry:
        """The entry of learner ``name``."""
        return self._entries[name]

    def entries(self) -> list[LearnerEntry]:
        """Every entry, in the table's order."""
        return list(self._entries.values())

    def with_entry(self, entry: LearnerEntry) -> LearnerTable:
        """This table and one more learner."""
        return LearnerTable([*self._entries.values(), entry])

    def unknown(self, name: str) -> InvalidParameterError:
        """The error for an algorithm not in the table."""
        return InvalidParameterError(
            f"unknown algorithm {name!r} (known: {', '.join(sorted(self))})"
        )


# -- the parameters learners share ------------------------------------------------------------

MULTIPLE_UPDATES = Param(
    "multiple_updates",
    True,
    flag,
    "In replay passes, add an example lambda times at once, lambda the least count after "
    "which it no longer meets the condition (PDM paper, section 4).",
    bool,
)
PDM_EPS = Param(
    "eps",
    0.01,
    unit_interval,
    "Accuracy, in (0, 1]: at convergence the margin is at least (1 - eps) of the maximum.",
    keyword_only=False,
)
MARGITRON_PARAMS = (
    Param("b", 1.0, positive, "Scale b > 0 of the margin threshold.", keyword_only=False),
    Param(
        "zeta",
        0.5,
        below_two,
        "Exponent zeta in (0, 2); zeta = 1 is PAM(b), and as zeta tends to 0 the "
        "guaranteed fraction of the maximum margin tends to 1.",
        keyword_only=False,
    ),
)


def _margitron_values(learner: Any) -> tuple[float, float]:
    return (learner.b, 1.0 - learner.zeta)


# -- the table ---------------------------------------------------------------------------------

LEARNERS = LearnerTable(
    [
        LearnerEntry(
            "perceptron",
            "Perceptron",
            RULE_PERCEPTRON,
            "Rosenblatt's perceptron: update when a . y <= 0 (on separable data at most "
            "R^2 / gamma^2 updates).",
        ),
        LearnerEntry(
            "pam",
            "PAM",
            RULE_PAM,
            "The perceptron with margin (Krauth and Mezard): update when a . y <= tau.",
            params=(Param("tau", 1.0, non_negative, "Margin tau >= 0.", keyword_only=False),),
            rule_values=lambda learner: (learner.tau, 0.0),
            details="On separable data its margin is at least gamma * tau / (2 tau + R^2).",
        ),
        LearnerEntry(
            "paum",
            "PAUM",
            RULE_PAUM,
            "The perceptron with uneven margins (Li et al. 2002): update when "
            "l (w . x + b) <= tau_l.",
            params=(
                Param(
                    "tau_neg",
                    -1.0,
                    finite,
                    "Margin demanded of negative examples (any real number; the theorem "
                    "needs it >= 0, small negative values tolerate a few errors).",
                    keyword_only=False,
                ),
                Param(
                    "tau_pos",
                    1.0,
                    finite,
                    "Margin demanded of positive examples (PAUM(1, 50) was best on Reuters).",
                    keyword_only=False,
                ),
                Param(
                    "lr",
                    1.0,
                    positive,
                    "Learning rate eta > 0; it trades convergence speed against guaranteed "
                    "margins.",
                    keyword_only=False,
                ),
            ),
            # the engine runs unscaled weights a / lr, so thresholds are divided by lr
            rule_values=lambda learner: (
                learner.tau_neg / learner.lr,
                learner.tau_pos / learner.lr,
            ),
            output_factor=lambda learner: learner.lr,
            details="Positives and negatives get their own margin, which suits rare classes "
            "ranked by score. The paper's form adds lr * l * x to w and lr * l * R^2 to b: "
            "that is rho = R here, with the weights scaled by lr.",
        ),
        LearnerEntry(
            "pfm",
            "PFM",
            RULE_PFM,
            "The perceptron with fixed margin: update when a . y <= beta ||a||.",
            params=(
                Param(
                    "beta",
                    REQUIRED,
                    positive,
                    "The fixed margin, a guess of (1 - eps) gamma_d; no default: the right "
                    "value depends on the data.",
                    keyword_only=False,
                ),
                MULTIPLE_UPDATES,
            ),
            rule_values=lambda learner: (learner.beta, 0.0),
            multiple_updates=True,
            details="Below the maximum margin it converges to a margin >= beta; above it, it "
            "never converges: replay stops after max_passes passes unconverged, or raises "
            "DivergenceError when multiple updates make the weights grow geometrically until "
            "they overflow.",
            divergence_hint="beta={beta} is above the maximum margin of the data: lower it",
            test_params={"beta": 0.01},
        ),
        LearnerEntry(
            "pdm",
            "PDM",
            RULE_PDM,
            "The perceptron with dynamic margin (Panagiotakopoulos and Tsampouka): update "
            "when a . y <= (1 - eps) ||a||^2 / t; at convergence the margin is at least "
            "(1 - eps) of the maximum.",
            params=(PDM_EPS, MULTIPLE_UPDATES),
            rule_values=lambda learner: (1.0 - learner.eps, 0.0),
            multiple_updates=True,
            target_gap=lambda learner: learner.eps,
        ),
        LearnerEntry(
            "pdm-succ",
            "PDMSucc",
            RULE_PDM,
            "PDM in successive runs: eps_0 = eps_start, eps_(n+1) = eps_n / succ_eta, down "
            "to eps; usually fewer updates than PDM for a similar time.",
            params=(
                PDM_EPS,
                Param("succ_eta", 8.0, above_one, "Divisor of eps between runs, > 1."),
                Param("eps_start", 0.5, unit_interval, "The first run's eps, in (0, 1]."),
                MULTIPLE_UPDATES,
            ),
            rule_values=lambda learner: (1.0 - learner.current_eps(), 0.0),
            multiple_updates=True,
            target_gap=lambda learner: learner.eps,
            behaviour=SuccessiveRuns,
            check=check_runs,
            details="Each run continues from where the previous one converged; the last "
            "run uses eps. New examples are learned with the eps of the current run.",
        ),
        LearnerEntry(
            "t-margitron",
            "TMargitron",
            RULE_TMARGITRON,
            "The t-margitron: update when a . y <= b t^(1 - zeta) (threshold 0 before the "
            "first update).",
            params=MARGITRON_PARAMS,
            rule_values=_margitron_values,
        ),
        LearnerEntry(
            "a-margitron",
            "AMargitron",
            RULE_AMARGITRON,
            "The a-margitron: update when a . y <= b ||a||^(1 - zeta) (threshold 0 before "
            "the first update).",
            params=MARGITRON_PARAMS,
            rule_values=_margitron_values,
        ),
        LearnerEntry(
            "kozinec",
            "Kozinec",
            RULE_KOZINEC,
            "Kozinec's algorithm with accuracy eps: the closest point of the convex hull to "
            "0, so the margin upper bound is ||a||.",
            params=(
                Param(
                    "eps",
                    0.001,
                    positive,
                    "Accuracy > 0, absolute (in the units of the data): at convergence the "
                    "margin is within eps of the maximum.",
                    keyword_only=False,
                ),
            ),
            rule_values=lambda learner: (learner.eps, 0.0),
            details="In the augmented, reflected (and extended) space a starts as the first "
            "example; while some y_j has ||a|| - (a / ||a||) . y_j >= eps, "
            "a <- (1 - c) a + c y_j with c = clip(a . (a - y_j) / ||a - y_j||^2, 0, 1).",
        ),
    ]
)
