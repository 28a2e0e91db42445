"""The margin certificate in ``summary()``, recomputed from the learner's public values."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from reference import Problem, best_slack_margin, sparse_problem

from streamlearn import (
    PAM,
    PAUM,
    PDM,
    PFM,
    AMargitron,
    DivergenceError,
    Kozinec,
    LinearLearner,
    PDMSucc,
    Perceptron,
    TMargitron,
)

SEPARABLE = sparse_problem(60, 15, seed=2, flip=0.0, min_margin=0.5)
OVERLAP = sparse_problem(60, 15, seed=1, flip=0.1)

LEARNERS: dict[str, Callable[..., LinearLearner]] = {
    "perceptron": Perceptron,
    "pam": lambda **kw: PAM(tau=1.0, **kw),
    "paum": lambda **kw: PAUM(tau_neg=0.5, tau_pos=1.0, **kw),
    "pfm": lambda **kw: PFM(beta=0.02, **kw),
    "pdm": lambda **kw: PDM(eps=0.1, **kw),
    "pdm-succ": lambda **kw: PDMSucc(eps=0.05, **kw),
    "t-margitron": lambda **kw: TMargitron(b=1.0, zeta=0.5, **kw),
    "a-margitron": lambda **kw: AMargitron(b=1.0, zeta=0.5, **kw),
    "kozinec": lambda **kw: Kozinec(eps=0.01, **kw),
}
SUMMARY_KEYS = (
    "updates",
    "passes",
    "converged",
    "margin_achieved",
    "margin_upper_bound",
    "certified_gap",
)


def matrix(data: Problem) -> sp.csr_matrix:
    return sp.csr_matrix((data.values, data.indices, data.indptr), shape=(data.n_examples, 15))


def fit(name: str, data: Problem, **kwargs: Any) -> LinearLearner:
    learner = LEARNERS[name](**kwargs)
    return learner.fit(matrix(data), data.labels)


def recomputed(learner: LinearLearner, data: Problem) -> tuple[float, float]:
    """(min_k a . y_k / ||a||, ||a||) from coef_, intercept_, rho, Delta and buffer alphas.

    a . y_k = l_k (w . x_k + rho beta) + Delta^2 alpha_k and
    ||a||^2 = ||w||^2 + beta^2 + Delta^2 sum alpha_k^2 (nothing evicted).
    """
    assert learner.buffer.evicted == 0 and len(learner.buffer) == data.n_examples
    delta = learner.delta_ or 0.0
    w, bias = learner.coef_, learner.intercept_
    beta = bias / learner.rho
    alpha = learner.alpha_
    functional = data.labels * (matrix(data) @ w + bias) + delta**2 * alpha
    norm = math.sqrt(float(w @ w) + beta**2 + delta**2 * float(alpha @ alpha))
    return float(functional.min()) / norm, norm


def recomputed_best(learner: LinearLearner, data: Problem) -> float:
    """The margin of (w, beta) over the data with the best slack coordinates (the
    twin's own computation, see ``best_slack_margin``)."""
    w, bias = learner.coef_, learner.intercept_
    scores = data.labels * (matrix(data) @ w + bias)
    u_sq = float(w @ w) + (bias / learner.rho) ** 2
    return best_slack_margin(scores, u_sq, (learner.delta_ or 0.0) ** 2)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_summary_has_the_certificate(name: str) -> None:
    summary = fit(name, SEPARABLE, delta=0.0).summary()
    for key in SUMMARY_KEYS:
        assert key in summary, key
    assert summary["converged"] is True
    assert summary["passes"] >= 1 and summary["updates"] > 0


@pytest.mark.parametrize("delta", [0.0, 0.5])
@pytest.mark.parametrize("name", list(LEARNERS))
def test_margin_achieved_recomputed_from_public_values(name: str, delta: float) -> None:
    learner = fit(name, SEPARABLE, delta=delta)
    summary = learner.summary()
    margin, norm = recomputed(learner, SEPARABLE)
    assert summary["margin_with_slack_counts"] == pytest.approx(margin, rel=1e-9, abs=1e-12)
    assert min(summary["margin_negative"], summary["margin_positive"]) == pytest.approx(
        summary["margin_with_slack_counts"], rel=1e-12
    )
    best = recomputed_best(learner, SEPARABLE)
    assert summary["margin_achieved"] == pytest.approx(max(best, margin), rel=1e-9, abs=1e-12)
    assert summary["margin_achieved"] >= summary["margin_with_slack_counts"]
    if name != "kozinec":  # a run of perceptron updates without eviction: ||a|| / t
        assert summary["margin_upper_bound"] == pytest.approx(norm / learner.updates, rel=1e-9)


def test_paum_certificate_with_a_learning_rate() -> None:
    """coef_ and intercept_ are scaled by lr; alpha counts updates, so a = (w, b/rho)/lr."""
    learner = PAUM(tau_neg=0.5, tau_pos=1.0, lr=0.25, delta=0.5)
    learner.fit(matrix(SEPARABLE), SEPARABLE.labels)
    w, bias, alpha = learner.coef_ / 0.25, learner.intercept_ / 0.25, learner.buffer.alpha()
    functional = SEPARABLE.labels * (matrix(SEPARABLE) @ w + bias) + 0.25 * alpha
    norm = math.sqrt(float(w @ w) + bias**2 + 0.25 * float(alpha @ alpha))
    summary = learner.summary()
    own = functional.min() / norm
    assert summary["margin_with_slack_counts"] == pytest.approx(own, rel=1e-9)
    assert summary["margin_upper_bound"] == pytest.approx(norm / learner.updates, rel=1e-9)
    best = recomputed_best(learner, SEPARABLE)
    assert summary["margin_achieved"] == pytest.approx(max(best, own), rel=1e-9)


@pytest.mark.parametrize("delta", [0.0, 0.5])
@pytest.mark.parametrize("name", list(LEARNERS))
def test_margin_achieved_never_exceeds_the_upper_bound(name: str, delta: float) -> None:
    data = SEPARABLE if delta == 0.0 else OVERLAP
    learner = LEARNERS[name](delta=delta)
    learner.learn(matrix(data), data.labels)
    for _ in range(6):
        summary = learner.summary()
        assert summary["margin_achieved"] <= summary["margin_upper_bound"] * (1 + 1e-12)
        assert summary["certified_gap"] >= -1e-12
        learner.replay(max_passes=1)


@pytest.mark.parametrize(
    ("eps", "data", "delta"),
    [
        (0.5, SEPARABLE, 0.0),
        (0.1, SEPARABLE, 0.0),
        (0.01, SEPARABLE, 0.0),
        (0.1, OVERLAP, 0.5),
        (0.01, OVERLAP, 0.5),
    ],
)
@pytest.mark.parametrize("multiple_updates", [True, False])
def test_pdm_converges_within_eps(
    eps: float, data: Problem, delta: float, multiple_updates: bool
) -> None:
    learner = PDM(eps=eps, delta=delta, multiple_updates=multiple_updates)
    learner.fit(matrix(data), data.labels)
    summary = learner.summary()
    assert summary["converged"] is True
    assert learner.converged
    assert 0.0 <= summary["certified_gap"] <= eps
    margin, norm = recomputed(learner, data)
    best = max(recomputed_best(learner, data), margin)
    assert best >= (1 - eps) * norm / learner.updates
    if summary["stopped_by"] == "no update":  # PDM's own rule: a itself is certified
        assert margin >= (1 - eps) * norm / learner.updates


@pytest.mark.parametrize("delta", [0.0, 0.5])
def test_kozinec_bound_is_the_norm_of_a(delta: float) -> None:
    learner = fit("kozinec", SEPARABLE, delta=delta, max_passes=200)
    summary = learner.summary()
    assert summary["converged"] is True
    assert summary["margin_upper_bound"] == pytest.approx(
        math.sqrt(learner.state.scalars[1]), rel=1e-9
    )
    # recomputed with the slack of a itself (the engine stores it divided by a scale)
    alpha = learner.buffer.alpha() * learner.state.scalars[3]
    w, beta = learner.coef_, learner.intercept_ / learner.rho
    norm = math.sqrt(float(w @ w) + beta**2 + delta**2 * float(alpha @ alpha))
    assert summary["margin_upper_bound"] == pytest.approx(norm, rel=1e-9)
    # a is a convex combination of the examples
    assert alpha.sum() == pytest.approx(1.0, rel=1e-9)
    assert np.all(alpha >= 0)
    # eps-Kozinec stops once ||a|| - min_k a . y_k / ||a|| < eps (absolute)
    assert summary["margin_upper_bound"] - summary["margin_achieved"] < 0.01


def test_certificate_after_eviction_describes_the_buffer() -> None:
    """With eviction, the bound is ||h|| / s with h = sum over the buffer of alpha_k y_k."""
    delta = 0.5
    learner = PDM(eps=0.05, delta=delta, buffer_size=25)
    learner.learn(matrix(OVERLAP), OVERLAP.labels).replay()  # fit() would refuse to evict
    assert learner.buffer.evicted == 35
    summary = learner.summary()
    assert summary["converged"] is True
    kept = OVERLAP.rows(35, 60)
    alpha = learner.buffer.alpha()
    coef = alpha * kept.labels
    hull_w = matrix(kept).T @ coef
    hull_beta = learner.rho * float(coef.sum())
    slack_sq = delta**2 * float(alpha @ alpha)
    bound = math.sqrt(float(hull_w @ hull_w) + hull_beta**2 + slack_sq) / float(alpha.sum())
    assert summary["margin_upper_bound"] == pytest.approx(bound, rel=1e-9)
    w, bias = learner.coef_, learner.intercept_
    own = math.sqrt(float(w @ w) + (bias / learner.rho) ** 2 + slack_sq)
    margin = (kept.labels * (matrix(kept) @ w + bias) + delta**2 * alpha).min() / own
    assert summary["margin_with_slack_counts"] == pytest.approx(margin, rel=1e-9)
    best = max(recomputed_best(learner, kept), margin)
    assert summary["margin_achieved"] == pytest.approx(best, rel=1e-9)
    assert summary["margin_achieved"] <= summary["margin_upper_bound"]


def test_pfm_above_the_maximum_margin_never_claims_convergence() -> None:
    """PFM(beta) with beta above gamma_d "never converges" (its entry in learn/table.py): it
    must not report convergence, least of all with weights that are no longer numbers."""
    gamma = fit("pdm", OVERLAP, delta=0.0).summary()["margin_upper_bound"]
    learner = PFM(beta=2 * gamma, delta=0.0, max_passes=500)
    with pytest.raises(DivergenceError, match=r"beta=.* is above the maximum margin"):
        learner.fit(matrix(OVERLAP), OVERLAP.labels)
    assert not learner.converged


def test_pdm_succ_schedule() -> None:
    assert PDMSucc(eps=0.01).eps_schedule() == [0.5, 0.0625, 0.01]
    assert PDMSucc(eps=0.05, eps_start=0.4, succ_eta=2.0).eps_schedule() == pytest.approx(
        [0.4, 0.2, 0.1, 0.05]
    )
    assert PDMSucc(eps=0.0625).eps_schedule() == [0.5, 0.0625]
    assert PDMSucc(eps=0.5).eps_schedule() == [0.5]
    assert PDMSucc(eps=0.8).eps_schedule() == [0.8]


@pytest.mark.parametrize(("data", "delta"), [(SEPARABLE, 0.0), (OVERLAP, 0.5)])
def test_pdm_succ_fit_ends_converged_at_the_final_eps(data: Problem, delta: float) -> None:
    learner = PDMSucc(eps=0.01, delta=delta).fit(matrix(data), data.labels)
    summary = learner.summary()
    assert summary["converged"] is True
    assert summary["current_eps"] == 0.01
    assert 0.0 <= summary["certified_gap"] <= 0.01


@pytest.mark.parametrize(("data", "delta"), [(SEPARABLE, 0.0), (OVERLAP, 0.5)])
def test_pdm_succ_one_pass_at_a_time_reaches_the_final_eps(data: Problem, delta: float) -> None:
    """A daemon replays a pass at a time: every run of the schedule must still be reached."""
    learner = PDMSucc(eps=0.01, delta=delta)
    learner.learn(matrix(data), data.labels)
    seen_eps = []
    for _ in range(100):
        seen_eps.append(learner.summary()["current_eps"])
        learner.replay(max_passes=1)
        if learner.converged and learner.summary()["current_eps"] == 0.01:
            break
    assert sorted(set(seen_eps), reverse=True) == [0.5, 0.0625, 0.01]
    summary = learner.summary()
    assert summary["converged"] is True
    assert summary["current_eps"] == 0.01
    assert 0.0 <= summary["certified_gap"] <= 0.01
