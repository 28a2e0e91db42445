"""``replay(interrupt=...)``: a daemon bounds how long a replay keeps its stream waiting.
The pass stops between two level-1 rounds; what it learned stays, and replays taken in
slices still reach the certificate."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn import PDM, ModelBank


def stream(n: int, seed: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    y = np.where(X @ np.linspace(-1.0, 1.0, 8) + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, y


def test_an_interrupted_pass_stops_after_one_round() -> None:
    X, y = stream(3000, seed=1)
    whole = PDM(0.01, delta=0.5, seed=2).learn(X, y).replay(max_passes=1)
    cut = PDM(0.01, delta=0.5, seed=2).learn(X, y).replay(max_passes=1, interrupt=lambda: True)
    assert cut.summary()["passes"] == whole.summary()["passes"] == 1
    assert 0 < cut.summary()["presentations"] < whole.summary()["presentations"]
    # the epoch and one level-1 round, with its nested level-2 and level-3 cycles
    assert cut.summary()["mini_epochs"] < whole.summary()["mini_epochs"]


def test_replays_in_slices_reach_the_certificate() -> None:
    X, y = stream(3000, seed=3)
    model = PDM(0.02, delta=0.5, seed=4).learn(X, y)
    for _ in range(500):
        model.replay(max_passes=1, interrupt=lambda: True)
        if model.converged:
            break
    summary = model.summary()
    assert summary["converged"] and summary["certified_gap"] <= 0.02


def test_a_bank_resumes_an_interrupted_replay_with_the_next_label() -> None:
    X, _ = stream(600, seed=5)
    classes = np.arange(600) % 3
    bank = ModelBank(PDM(0.01, delta=0.5)).learn(X, classes)
    for expected in ([1, 0, 0], [1, 1, 0], [1, 1, 1], [2, 1, 1]):
        bank.replay(max_passes=1, interrupt=lambda: True)
        assert [learner.summary()["passes"] for learner in bank.learners()] == expected
