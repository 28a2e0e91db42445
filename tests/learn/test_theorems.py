"""The papers' theorems, checked against an independent solver run in the test.

The reference is LIBLINEAR's dual coordinate descent (``solvers.liblinear_reference``):
its solution gives gamma_LL, a lower bound of the maximum directional margin gamma*
(tight at the tolerance used). The guarantees checked:

- PDM(eps) at convergence: margin >= (1 - eps) gamma* >= (1 - eps) gamma_LL, and its
  certificate ||a|| / t bounds gamma* (so gamma_LL) from above;
- perceptron (Novikoff): at most R^2 / gamma*^2 <= R^2 / gamma_LL^2 updates;
- PAM (Krauth and Mezard): margin >= gamma* tau / (2 tau + R^2);
- PAUM, Theorem 2.1 of Li et al. (2002) in the paper's own form (rho = R = max ||x||):
  the update bound (2.4) and the per-class margins (2.6);
- the margitrons with zeta = 1 are PAM(b), update for update.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import scipy.sparse as sp
from reference import best_slack_margin
from solvers import (
    SHARED_DATA,
    Reference,
    augmented_radius,
    class_margins,
    feature_radius,
    liblinear_reference,
    paum_algorithm_1,
    phishing,
    separable_data,
)

from streamlearn.learn import (
    PAM,
    PAUM,
    PDM,
    AMargitron,
    LinearLearner,
    PDMSucc,
    Perceptron,
    TMargitron,
)
from streamlearn.replay import ActiveSetSchedule, pass_permutation

Array = npt.NDArray[np.float64]
Labels = npt.NDArray[np.int64]
Data = tuple[Any, Labels]

#: the PDM paper's setting for Adult and the maximum margin data/README.md reports for it
ADULT_DELTA = 1.0
ADULT_GAMMA = 85.21e-4
#: separable synthetic data: examples, features, margin of the generating hyperplane
SEP_N, SEP_D, SEP_GAMMA0 = 500, 5, 0.05
SEP_SEEDS = (0, 1, 2)


# -- data and references ------------------------------------------------------------------


@functools.cache
def phishing_arrays() -> Data:
    """river's Phishing, dense (1250 x 9), labels +1/-1; loaded once per session."""
    return phishing()


@pytest.fixture(scope="module")
def phishing_data() -> Data:
    return phishing_arrays()


@pytest.fixture(scope="module")
def adult() -> Data:
    path = SHARED_DATA / "adult" / "a9a.train"
    if not path.is_file():
        pytest.skip(f"shared data set missing: {path} (build it with ../shared/datasets/build.py)")
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path))
    return sp.csr_matrix(X), y.astype(np.int64)


@pytest.fixture(scope="module")
def adult_reference(adult: Data) -> Reference:
    X, y = adult
    return liblinear_reference(X, y, rho=1.0, delta=ADULT_DELTA)


@functools.cache
def separable(seed: int, rho: float = 1.0) -> tuple[Array, Labels, Reference]:
    """Separable synthetic data and its hard-margin reference with augmentation rho."""
    X, y, _ = separable_data(SEP_N, SEP_D, SEP_GAMMA0, rho=1.0, seed=seed)
    ref = liblinear_reference(X, y, rho=rho, delta=0.0)
    # the hard margin is met: every functional margin is (numerically) >= 1
    assert ref.functional.min() >= 1.0 - 1e-3
    return X, y, ref


@functools.cache
def phishing_reference(delta: float) -> Reference:
    X, y = phishing_arrays()
    return liblinear_reference(X, y, rho=1.0, delta=delta)


def phishing_delta(X: Array, spec: str) -> float:
    return 1.0 if spec == "1" else augmented_radius(X, 1.0) / 10.0


# -- checks shared by the PDM tests ------------------------------------------------------


def recomputed_certificate(model: LinearLearner, X: Any, y: Labels) -> tuple[float, float]:
    """(min_k a . y_k / ||a||, ||a|| / t) from coef_, intercept_ and the slack counts.

    a = (w, beta, Delta alpha) in the extended space; a . y_k = l_k f(x_k) + Delta^2 alpha_k.
    Needs the buffer to hold X in arrival order (all of it, or a window of it whose
    evicted examples left the model: ``forget='window'``).
    """
    assert len(model.buffer) == len(y)
    delta = model.delta_ or 0.0
    alpha = model.buffer.alpha()
    w, bias = model.coef_, model.intercept_
    beta = bias / model.rho
    functional = np.asarray(y, dtype=np.float64) * (X @ w + bias)
    norm = math.sqrt(float(w @ w) + beta * beta + delta * delta * float(alpha @ alpha))
    return float(np.min(functional + delta * delta * alpha)) / norm, norm / model.updates


def check_pdm(model: PDM, X: Any, y: Labels, ref: Reference, eps: float) -> dict[str, Any]:
    summary = model.summary()
    assert summary["converged"], summary
    assert model.delta_ == pytest.approx(ref.delta, rel=1e-12, abs=0.0)
    achieved, bound = summary["margin_achieved"], summary["margin_upper_bound"]
    # the certificate the learner reports: a's own margin from its weights and slack
    # counts, and the margin of (w, beta) with the best slack coordinates, never lower
    margin, upper = recomputed_certificate(model, X, y)
    assert summary["margin_with_slack_counts"] == pytest.approx(margin, rel=1e-9)
    best = recomputed_best_margin(model, X, y)
    assert achieved == pytest.approx(max(best, margin), rel=1e-9)
    assert bound == pytest.approx(upper, rel=1e-9)
    # the theorem: (1 - eps) gamma* is reached, and ||a|| / t bounds gamma* from above
    assert achieved >= (1.0 - eps) * ref.margin, (achieved / ref.margin, eps)
    assert ref.margin <= bound, (ref.margin, bound)
    if summary["stopped_by"] == "no update":  # PDM's own rule certifies a itself
        assert margin >= (1.0 - eps) * ref.margin, (margin / ref.margin, eps)
    return summary


def recomputed_best_margin(model: LinearLearner, X: Any, y: Labels) -> float:
    """The margin of (w, beta) over X with the best slack coordinates (the twin's own
    computation, see ``reference.best_slack_margin``)."""
    w, bias = model.coef_, model.intercept_
    scores = np.asarray(y, dtype=np.float64) * (X @ w + bias)
    u_sq = float(w @ w) + (bias / model.rho) ** 2
    return best_slack_margin(scores, u_sq, (model.delta_ or 0.0) ** 2)


# -- the reference itself ----------------------------------------------------------------


@pytest.mark.slow
def test_liblinear_reproduces_adult_maximum_margin(adult_reference: Reference) -> None:
    assert adult_reference.margin == pytest.approx(ADULT_GAMMA, abs=0.01e-4)
    assert adult_reference.slack.max() > 0.0  # adult is not separable: the slack matters


def test_liblinear_reference_is_a_lower_bound_on_separable_data() -> None:
    for seed in SEP_SEEDS:
        X, y, u = separable_data(SEP_N, SEP_D, SEP_GAMMA0, rho=1.0, seed=seed)
        _, _, ref = separable(seed)
        # the generating unit vector u has margin >= gamma0; the maximum is at least that
        generating = float(np.min(y * (X @ u[:-1] + u[-1])))
        assert generating >= SEP_GAMMA0
        assert ref.margin >= generating * (1.0 - 1e-6)


# -- PDM ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shrink", [False, True])
@pytest.mark.parametrize("delta_spec", ["1", "R/10"])
@pytest.mark.parametrize("eps", [0.1, 0.05, 0.02])
def test_pdm_reaches_fraction_of_maximum_margin_on_phishing(
    phishing_data: Data, delta_spec: str, eps: float, shrink: bool
) -> None:
    X, y = phishing_data
    delta = phishing_delta(X, delta_spec)
    ref = phishing_reference(delta)
    schedule = ActiveSetSchedule(shrink=shrink)
    model = PDM(eps, delta=delta, rho=1.0, active_sets=schedule).fit(X, y)
    check_pdm(model, X, y, ref, eps)


def test_pdm_auto_delta_on_phishing(phishing_data: Data) -> None:
    X, y = phishing_data
    model = PDM(0.05, rho=1.0).fit(X, y)  # Delta = R/10 of the first 1000 examples
    assert model.delta_ is not None and model.delta_ > 0.0
    ref = liblinear_reference(X, y, rho=1.0, delta=model.delta_)
    check_pdm(model, X, y, ref, 0.05)


@pytest.mark.parametrize("delta_spec", ["1", "R/10"])
def test_pdm_succ_reaches_fraction_of_maximum_margin_on_phishing(
    phishing_data: Data, delta_spec: str
) -> None:
    X, y = phishing_data
    delta = phishing_delta(X, delta_spec)
    ref = phishing_reference(delta)
    model = PDMSucc(0.02, delta=delta, rho=1.0).fit(X, y)
    summary = check_pdm(model, X, y, ref, 0.02)
    assert summary["current_eps"] == 0.02


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.1, 0.05])
def test_pdm_reaches_fraction_of_maximum_margin_on_adult(
    adult: Data, adult_reference: Reference, eps: float
) -> None:
    X, y = adult
    model = PDM(eps, delta=ADULT_DELTA, rho=1.0).fit(X, y)
    check_pdm(model, X, y, adult_reference, eps)


@pytest.mark.parametrize("delta_spec", ["1", "R/10"])
def test_pdm_on_a_stream_holds_for_the_buffer(phishing_data: Data, delta_spec: str) -> None:
    """Learning in chunks with replays in between: the guarantee holds at the end."""
    X, y = phishing_data
    delta = phishing_delta(X, delta_spec)
    model = PDM(0.05, delta=delta, rho=1.0, seed=7)
    for start in range(0, len(y), 250):
        model.learn(X[start : start + 250], y[start : start + 250])
        model.replay()
    check_pdm(model, X, y, phishing_reference(delta), 0.05)


# -- the theorem on a sliding window -----------------------------------------------------


def rotating_hyperplane(n: int, d: int, seed: int, noise: float = 0.05) -> Data:
    """A drifting stream: x ~ N(0, I_d), labelled by a hyperplane that turns by a quarter
    of a circle over the stream, with ``noise`` of the labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    start, end = np.zeros(d), np.zeros(d)
    start[0], end[1] = 1.0, 1.0
    angle = np.linspace(0.0, np.pi / 2, n)[:, None]
    normals = np.cos(angle) * start + np.sin(angle) * end
    y = np.where(np.sum(X * normals, axis=1) + 0.2 > 0, 1, -1)
    y[rng.random(n) < noise] *= -1
    return X, y.astype(np.int64)


def through_a_window(model: PDM, X: Any, y: Labels, chunk: int) -> PDM:
    """Stream X in chunks with one replay pass after each, as a daemon does, then replay
    the window to convergence."""
    for start in range(0, len(y), chunk):
        model.learn(X[start : start + chunk], y[start : start + chunk])
        model.replay(max_passes=1)
    return model.replay()


def check_window(model: PDM, X: Any, y: Labels, eps: float) -> None:
    """The buffer holds the stream's last examples; PDM's theorem holds for them, checked
    against LIBLINEAR on exactly those examples."""
    capacity = len(model.buffer)
    assert model.buffer.evicted == len(y) - capacity > 0
    held = model.buffer.examples()
    window = X[-capacity:], y[-capacity:]
    np.testing.assert_array_equal(held.labels, window[1])
    ref = liblinear_reference(*window, rho=model.rho, delta=model.delta_ or 0.0)
    summary = check_pdm(model, *window, ref, eps)
    assert summary["certified_gap"] <= eps


@pytest.mark.parametrize("delta_spec", ["1", "R/10"])
def test_pdm_theorem_holds_on_the_window_of_phishing(phishing_data: Data, delta_spec: str) -> None:
    X, y = phishing_data
    delta = phishing_delta(X, delta_spec)
    model = PDM(0.05, delta=delta, rho=1.0, buffer_size=500, seed=3)
    check_window(through_a_window(model, X, y, 50), X, y, 0.05)


@pytest.mark.parametrize("seed", [0, 1])
def test_pdm_theorem_holds_on_the_window_of_a_drifting_stream(seed: int) -> None:
    X, y = rotating_hyperplane(8000, 10, seed)
    model = PDM(0.05, delta=1.0, rho=1.0, buffer_size=1000, seed=seed)
    check_window(through_a_window(model, X, y, 100), X, y, 0.05)


@pytest.mark.slow
def test_pdm_theorem_holds_on_the_window_of_adult_after_its_labels_flip(adult: Data) -> None:
    """Adult, then Adult with every label flipped: the final window is flipped Adult only."""
    X, y = adult
    stream_X, stream_y = sp.vstack([X, X]).tocsr(), np.concatenate([y, -y])
    model = PDM(0.05, delta=ADULT_DELTA, rho=1.0, buffer_size=20_000, seed=5)
    check_window(through_a_window(model, stream_X, stream_y, 5000), stream_X, stream_y, 0.05)


@pytest.mark.parametrize("seed", SEP_SEEDS)
@pytest.mark.parametrize("eps", [0.1, 0.05, 0.02])
@pytest.mark.parametrize("rho", [1.0, 2.0])
def test_pdm_hard_margin_on_separable_data(seed: int, eps: float, rho: float) -> None:
    X, y, ref = separable(seed, rho)
    model = PDM(eps, delta=0.0, rho=rho).fit(X, y)
    check_pdm(model, X, y, ref, eps)


# -- perceptron and PAM ------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEP_SEEDS)
@pytest.mark.parametrize("rho", [1.0, 2.0])
def test_perceptron_novikoff_bound(seed: int, rho: float) -> None:
    X, y, ref = separable(seed, rho)
    model = Perceptron(delta=0.0, rho=rho).fit(X, y)
    summary = model.summary()
    assert summary["converged"]
    assert np.all(model.predict(X) == y)
    radius = augmented_radius(X, rho)
    assert summary["updates"] <= radius**2 / ref.margin**2


@pytest.mark.parametrize("seed", SEP_SEEDS)
@pytest.mark.parametrize("tau", [0.1, 1.0, 4.0])
def test_pam_margin_guarantee(seed: int, tau: float) -> None:
    X, y, ref = separable(seed)
    model = PAM(tau, delta=0.0, rho=1.0).fit(X, y)
    summary = model.summary()
    assert summary["converged"]
    radius = augmented_radius(X, 1.0)
    assert summary["margin_achieved"] >= ref.margin * tau / (2.0 * tau + radius**2)
    # and the general certificate holds for PAM too
    assert ref.margin <= summary["margin_upper_bound"]


# -- PAUM, Theorem 2.1 -------------------------------------------------------------------

PAUM_SETTINGS = [
    (0.0, 0.0, 1.0),
    (1.0, 1.0, 1.0),
    (0.1, 2.0, 1.0),
    (1.0, 5.0, 0.5),
    (0.5, 0.5, 0.1),
    (0.0, 1.0, 2.0),
    (1.0, 50.0, 1.0),
    (2.0, 0.1, 0.2),
]


@functools.cache
def paum_hard_margin(seed: int) -> Reference:
    X, y, _ = separable_data(SEP_N, SEP_D, SEP_GAMMA0, rho=1.0, seed=seed)
    return liblinear_reference(X, y, rho=feature_radius(X), delta=0.0)


def paum_reference(X: Array, y: Labels, seed: int) -> tuple[Array, float]:
    """A unit-norm (w_opt, b_opt) with |b_opt| <= R: the hard-margin LIBLINEAR solution
    (augmentation B = R, as in the paper) scaled to ||w|| = 1."""
    radius = feature_radius(X)
    ref = paum_hard_margin(seed)
    norm = float(np.linalg.norm(ref.w))
    w_opt, b_opt = ref.w / norm, ref.intercept / norm
    assert abs(b_opt) <= radius
    return w_opt, b_opt


@pytest.mark.parametrize("seed", SEP_SEEDS)
@pytest.mark.parametrize(("tau_neg", "tau_pos", "eta"), PAUM_SETTINGS)
def test_paum_theorem_2_1(seed: int, tau_neg: float, tau_pos: float, eta: float) -> None:
    X, y, _ = separable_data(SEP_N, SEP_D, SEP_GAMMA0, rho=1.0, seed=seed)
    radius = feature_radius(X)
    w_opt, b_opt = paum_reference(X, y, seed)
    opt = y * (X @ w_opt + b_opt)
    gamma = float(opt.min())  # (2.3)
    assert gamma > 0.0

    model = PAUM(tau_neg, tau_pos, eta, rho=radius, delta=0.0).fit(X, y)
    summary = model.summary()
    assert summary["converged"]
    # at termination every example clears its class's margin in the paper's own units
    functional = y * (X @ model.coef_ + model.intercept_)
    assert functional[y < 0].min() > tau_neg
    assert functional[y > 0].min() > tau_pos

    # (2.4): the number of updates
    bound = 4.0 * ((radius / gamma) ** 2 + max(tau_neg, tau_pos) / (eta * gamma**2))
    assert summary["updates"] <= bound

    # (2.6): per-class margins, with Gamma_-1 chosen so that (2.5) holds
    psi = (eta * radius**2 + tau_pos) / (eta * radius**2 + tau_neg)
    gamma_neg = min(float(opt[y < 0].min()), float(opt[y > 0].min()) / psi)
    gamma_pos = psi * gamma_neg
    assert opt[y < 0].min() >= gamma_neg and opt[y > 0].min() >= gamma_pos * (1 - 1e-12)
    margin_neg, margin_pos = class_margins(X, y, model.coef_, model.intercept_)
    root8 = math.sqrt(8.0)
    assert margin_neg > gamma_neg * tau_neg / (root8 * (eta * radius**2 + tau_neg))
    assert margin_pos > gamma_pos * tau_pos / (root8 * (eta * radius**2 + tau_pos))


@pytest.mark.parametrize(("tau_neg", "tau_pos", "eta"), [(0.1, 2.0, 1.0), (1.0, 5.0, 0.5)])
def test_paum_is_algorithm_1_of_the_paper(tau_neg: float, tau_pos: float, eta: float) -> None:
    """With plain full passes PAUM(rho=R, lr=eta) runs the paper's Algorithm 1 exactly."""
    X, y, _ = separable_data(SEP_N, SEP_D, SEP_GAMMA0, rho=1.0, seed=0)
    radius = feature_radius(X)
    seed = 5
    model = PAUM(
        tau_neg, tau_pos, eta, rho=radius, delta=0.0, seed=seed,
        active_sets=ActiveSetSchedule(enabled=False),
    )  # fmt: skip
    model.fit(X, y)
    # learn() presents the data in order, then each replay pass in its own permutation
    orders = [np.arange(len(y))] + [pass_permutation(seed, p, len(y)) for p in range(500)]
    w, b, updates, converged = paum_algorithm_1(
        X, y, tau_neg=tau_neg, tau_pos=tau_pos, eta=eta, orders=orders
    )
    assert converged and model.converged
    assert model.updates == updates
    np.testing.assert_allclose(model.coef_, w, rtol=1e-9, atol=1e-9)
    assert model.intercept_ == pytest.approx(b, rel=1e-9, abs=1e-9)


# -- margitrons with zeta = 1 are PAM ----------------------------------------------------


@pytest.mark.parametrize("margitron", [TMargitron, AMargitron])
@pytest.mark.parametrize("b", [0.5, 2.0])
@pytest.mark.parametrize("delta", [0.3, "auto"])
def test_margitron_zeta_one_is_pam(
    phishing_data: Data,
    margitron: Callable[..., LinearLearner],
    b: float,
    delta: float | str,
) -> None:
    X, y = phishing_data

    def run(model: LinearLearner) -> LinearLearner:
        model.learn(X[:600], y[:600])
        model.replay(max_passes=2)
        model.learn(X[600:], y[600:])
        return model.replay()

    learners = (margitron(b, zeta=1.0, delta=delta, seed=3), PAM(tau=b, delta=delta, seed=3))
    theirs, pam = (run(model) for model in learners)
    assert pam.converged and theirs.converged
    assert (pam.delta_ or 0.0) > 0.0
    assert theirs.updates == pam.updates
    assert theirs.summary()["update_events"] == pam.summary()["update_events"]
    np.testing.assert_array_equal(theirs.coef_, pam.coef_)
    assert theirs.intercept_ == pam.intercept_
    np.testing.assert_array_equal(theirs.buffer.alpha(), pam.buffer.alpha())
