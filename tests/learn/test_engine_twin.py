"""The compiled engine against its plain-Python twin (tests/learn/reference.py), every rule."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import scipy.sparse as sp
from reference import Problem, ReferenceLearner, sparse_problem

import streamlearn.learn.base as base
from streamlearn import (
    PAM,
    PAUM,
    PDM,
    PFM,
    ActiveSetSchedule,
    AMargitron,
    Kozinec,
    LinearLearner,
    Perceptron,
    TMargitron,
)

RTOL, ATOL = 1e-10, 1e-12
MAX_PASSES = 30

#: learner class and its own hyperparameters; eps are powers of two so that the engine's
#: 1 - (1 - eps) is eps exactly, PAUM's lr is one so that scaling by it is exact
CASES: dict[str, tuple[type[LinearLearner], dict[str, Any]]] = {
    "perceptron": (Perceptron, {}),
    "pam": (PAM, {"tau": 1.0, "rho": 2.0}),
    "paum": (PAUM, {"tau_neg": -0.5, "tau_pos": 1.0, "lr": 0.5}),
    "pfm-multi": (PFM, {"beta": 0.05, "multiple_updates": True}),
    "pfm-single": (PFM, {"beta": 0.05, "multiple_updates": False}),
    "pdm-multi": (PDM, {"eps": 0.125, "multiple_updates": True}),
    "pdm-single": (PDM, {"eps": 0.125, "multiple_updates": False}),
    "t-margitron": (TMargitron, {"b": 1.0, "zeta": 0.5}),
    "a-margitron": (AMargitron, {"b": 1.0, "zeta": 0.5, "rho": 0.5}),
    "kozinec": (Kozinec, {"eps": 0.05}),
}

OVERLAP = sparse_problem(60, 15, seed=1, flip=0.1)
SEPARABLE = sparse_problem(60, 15, seed=2, flip=0.0, min_margin=0.5)
#: binary features: the engine's path for values that are all 1.0
BINARY = dataclasses.replace(OVERLAP, values=np.ones_like(OVERLAP.values))
CUSTOM_SCHEDULE = ActiveSetSchedule(c1=3.0, c1_first_pass=1.5, c2=1.3, nep1=2, nep2=3, nep3=4)

#: data, Delta, active-set schedule
SETTINGS: dict[str, tuple[Problem, float, ActiveSetSchedule]] = {
    "overlap-delta": (OVERLAP, 0.5, ActiveSetSchedule()),
    "separable-hard": (SEPARABLE, 0.0, ActiveSetSchedule()),
    "overlap-no-active-sets": (OVERLAP, 0.5, ActiveSetSchedule(enabled=False)),
    "overlap-custom-schedule": (OVERLAP, 0.5, CUSTOM_SCHEDULE),
    "overlap-shrinking-level-3": (OVERLAP, 0.5, ActiveSetSchedule(shrink=True)),
    "binary-delta": (BINARY, 0.5, ActiveSetSchedule()),
}


def make_pair(
    case: str, delta: float, schedule: ActiveSetSchedule, seed: int = 3
) -> tuple[LinearLearner, ReferenceLearner]:
    """A learner and its twin with the same hyperparameters."""
    cls, params = CASES[case]
    learner = cls(**params, delta=delta, seed=seed, active_sets=schedule)
    rule_params = {k: v for k, v in params.items() if k != "rho"}
    twin = ReferenceLearner(
        cls.algorithm,
        rule_params,
        rho=float(params.get("rho", 1.0)),
        delta=delta,
        seed=seed,
        active_sets=schedule,
    )
    return learner, twin


def learn_both(learner: LinearLearner, twin: ReferenceLearner, data: Problem) -> None:
    X = sp.csr_matrix((data.values, data.indices, data.indptr), shape=(data.n_examples, 15))
    learner.learn(X, data.labels)
    twin.learn(data.indptr, data.indices, data.values, data.labels)


def engine_alpha(learner: LinearLearner) -> npt.NDArray[np.float64]:
    """alpha_k of the buffered examples; Kozinec's are stored divided by its scale."""
    alpha: npt.NDArray[np.float64] = learner.buffer.alpha()
    if isinstance(learner, Kozinec):
        alpha = alpha * float(learner.state.scalars[3])
    return alpha


def assert_same(learner: LinearLearner, twin: ReferenceLearner) -> None:
    np.testing.assert_allclose(learner.coef_, twin.coef_, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(learner.intercept_, twin.intercept_, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(learner.updates, twin.t, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(engine_alpha(learner), twin.alpha(), rtol=RTOL, atol=ATOL)
    # ||a||^2 in the engine's units (PAUM's engine runs a / lr)
    engine_sqnorm = learner.state.scalars[1] * twin.learning_rate**2
    np.testing.assert_allclose(engine_sqnorm, twin.sqnorm, rtol=RTOL, atol=ATOL)
    summary = learner.summary()
    counts = twin.counts
    assert summary["update_events"] == counts.update_events
    assert summary["presentations"] == counts.presentations
    assert summary["mini_epochs"] == counts.mini_epochs
    assert summary["passes"] == twin.passes
    assert summary["converged"] == twin.converged


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("case", list(CASES))
def test_engine_matches_twin(case: str, setting: str) -> None:
    data, delta, schedule = SETTINGS[setting]
    learner, twin = make_pair(case, delta, schedule)
    learn_both(learner, twin, data)
    assert_same(learner, twin)  # after the stream pass alone
    learner.replay(max_passes=MAX_PASSES)
    twin.replay(max_passes=MAX_PASSES)
    assert_same(learner, twin)
    # the comparison is not vacuous: replay ran and (when enabled) cycled active sets
    assert twin.passes >= 2
    assert twin.t > data.n_examples / 4
    if schedule.enabled:
        assert twin.counts.mini_epochs > twin.passes
    else:
        assert twin.counts.mini_epochs == twin.passes


@pytest.mark.parametrize("case", ["pdm-multi", "paum", "kozinec", "pfm-multi"])
def test_engine_matches_twin_across_calls(case: str) -> None:
    """New examples between replays: pass numbers go on, the first-pass c1 is used once."""
    learner, twin = make_pair(case, 0.5, CUSTOM_SCHEDULE, seed=11)
    for start, stop, passes in ((0, 25, 2), (25, 26, 1), (26, 60, MAX_PASSES)):
        learn_both(learner, twin, OVERLAP.rows(start, stop))
        learner.replay(max_passes=passes)
        twin.replay(max_passes=passes)
        assert_same(learner, twin)


@pytest.mark.parametrize("case", ["pdm-multi", "paum", "kozinec", "perceptron"])
def test_binary_path_equals_the_general_path_bit_for_bit(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values all 1.0 skip the loads and multiplications; nothing else may change."""

    def run() -> LinearLearner:
        learner, _ = make_pair(case, 0.5, ActiveSetSchedule())
        X = sp.csr_matrix((BINARY.values, BINARY.indices, BINARY.indptr), shape=(60, 15))
        return learner.learn(X, BINARY.labels).replay(max_passes=MAX_PASSES)

    fast = run()
    unit_rules: list[bool] = []
    general_rule = base.LinearLearner.kernel_rule

    def spy(self: LinearLearner, multi: bool, unit: bool) -> Any:
        unit_rules.append(unit)
        return general_rule(self, multi, False)

    monkeypatch.setattr(base.LinearLearner, "kernel_rule", spy)
    general = run()
    assert unit_rules and all(unit_rules)  # the binary path was the one taken before
    assert np.array_equal(fast.coef_, general.coef_)
    assert fast.intercept_ == general.intercept_
    assert np.array_equal(fast.alpha_, general.alpha_)
    assert fast.summary()["presentations"] == general.summary()["presentations"]
