"""Calibrated probabilities: Platt scaling fitted on the window, refitted on a schedule
of counts, saved with the learner."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn import PDM, learner_from_state
from streamlearn.learn.calibration import Platt, fit_platt


def test_fit_platt_recovers_a_known_sigmoid() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(size=20_000)
    y = np.where(rng.random(20_000) < Platt(2.0).probability(z), 1, -1)
    assert fit_platt(z, y).slope == pytest.approx(2.0, rel=0.05)


def test_a_separable_window_still_gives_a_finite_sigmoid() -> None:
    z = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
    platt = fit_platt(z, np.array([-1, -1, -1, 1, 1, 1]))
    assert np.isfinite(platt.slope) and platt.slope > 0
    p = platt.probability(z)
    assert np.all((p > 0.0) & (p < 1.0))  # smoothed targets: never certain


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) + rng.normal(size=n) > 0, 1, -1)
    return X, y


def test_probabilities_follow_the_decision_values() -> None:
    X, y = data(2000, seed=1)
    model = PDM(eps=0.05, delta=1.0).fit(X, y)
    proba = model.predict_proba(X)
    assert proba.shape == (2000, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    order = np.argsort(model.decision_function(X))
    assert np.all(np.diff(proba[order, 1]) >= 0.0)
    # calibrated: the mean probability of the positive class is about its frequency
    assert proba[:, 1].mean() == pytest.approx(np.mean(y > 0), abs=0.02)


def test_refitted_on_a_schedule_of_counts_and_saved_with_the_learner() -> None:
    X, y = data(600, seed=2)
    model = PDM(eps=0.05, delta=1.0).learn(X[:300], y[:300])
    first = model.calibration()
    model.learn(X[300:310], y[300:310])  # 10 examples: fewer than at the fit (300)
    assert model.calibration() is first
    saved = learner_from_state(model.state_dict())
    np.testing.assert_array_equal(saved.predict_proba(X), model.predict_proba(X))
    model.learn(X[310:], y[310:])  # 600 >= 300 + 256: fitted again
    assert model.calibration() is not first
    refit = model.calibration()
    model.replay(max_passes=1)  # a replay changes the model: fitted again
    assert model.calibration() is not refit
