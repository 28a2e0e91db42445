"""Every rule the kernels know has its facts, its threshold and its plain-Python twin;
an unknown rule code is an error, not another rule's threshold."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from reference import ALGORITHMS, ReferenceLearner

import streamlearn._kernels.rules as rules
from streamlearn._kernels.rules import RULES, rule_facts, threshold
from streamlearn.learn.table import LEARNERS, LearnerEntry

#: a few own parameters per twin, as the learners name them
TWIN_PARAMS = {
    "perceptron": {},
    "pam": {"tau": 1.5},
    "paum": {"tau_neg": -0.5, "tau_pos": 2.0, "lr": 1.0},
    "pfm": {"beta": 0.25},
    "pdm": {"eps": 0.125},
    "t-margitron": {"b": 1.5, "zeta": 0.5},
    "a-margitron": {"b": 0.75, "zeta": 1.5},
    "kozinec": {"eps": 0.05},
}
#: the learners that run a rule of another learner's twin (their own replay differs):
#: PDM-succ runs PDM's at the eps of its current run
TWIN_OF = {"pdm-succ": "pdm"}


def _rule_codes() -> dict[str, int]:
    return {name: value for name, value in vars(rules).items() if name.startswith("RULE_")}


def test_every_rule_code_has_its_facts_and_a_learner() -> None:
    codes = _rule_codes()
    assert sorted(codes.values()) == sorted(RULES)
    used = {entry.rule for entry in LEARNERS.entries()}
    assert used == set(RULES)


def test_the_facts_are_the_rules_own() -> None:
    scale_free = {code for code, facts in RULES.items() if facts.scale_free}
    assert scale_free == {rules.RULE_PERCEPTRON, rules.RULE_PFM, rules.RULE_PDM}
    convex = {code for code, facts in RULES.items() if facts.convex_combination}
    assert convex == {rules.RULE_KOZINEC}
    for entry in LEARNERS.entries():
        assert entry.scale_free == RULES[entry.rule].scale_free
        assert entry.convex_combination == RULES[entry.rule].convex_combination


@pytest.mark.parametrize("entry", LEARNERS.entries(), ids=lambda e: e.name)
def test_every_learner_has_a_twin_whose_threshold_the_kernel_gives(entry: LearnerEntry) -> None:
    twin_name = TWIN_OF.get(entry.name, entry.name)
    assert twin_name in ALGORITHMS, f"{entry.name} has no plain-Python twin"
    params = TWIN_PARAMS[twin_name]
    learner = entry.learner_class(**params)
    rule_params = np.asarray(learner.rule_values(), dtype=np.float64)
    twin_params = dict(params)
    if entry.name == "pdm-succ":
        twin_params["eps"] = learner.current_eps()  # type: ignore[attr-defined]
    twin = ReferenceLearner(twin_name, twin_params)
    for label, sqnorm, t in itertools.product((-1.0, 1.0), (0.0, 0.36, 4.0, 25.0), (0, 1, 7)):
        if (sqnorm == 0.0) != (t == 0):  # a state: no update, or updates and a nonzero a
            continue
        twin.sqnorm, twin.t = sqnorm, float(t)
        expected = twin._threshold(label)
        got = threshold(entry.rule, rule_params, label, sqnorm, float(t))
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15), (label, sqnorm, t)


def test_an_unknown_rule_code_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown rule code 99"):
        rule_facts(99)
    with pytest.raises(ValueError, match="unknown rule code 99"):
        LearnerEntry("nope", "Nope", 99, "A rule the kernels do not know.")
    # the kernel itself answers an unknown code with an update condition never met
    nan = threshold(99, np.zeros(2), 1.0, 4.0, 3.0)
    assert nan != nan
