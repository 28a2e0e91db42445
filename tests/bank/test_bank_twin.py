"""The bank's kernels against the engine's plain-Python twin (tests/learn/reference.py):
each label's learner of a bank is the twin trained on the labels mapped to +1/-1."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bank_samples import multilabel_stream, one_label_targets

from streamlearn import PAUM, PDM, Kozinec, ModelBank

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learn"))
from reference import ReferenceLearner

RTOL, ATOL = 1e-10, 1e-12
CASES: dict[str, tuple[Any, dict[str, Any]]] = {
    "paum": (PAUM, {"tau_neg": -0.5, "tau_pos": 1.0, "lr": 0.5}),
    "pdm-multi": (PDM, {"eps": 0.015625, "multiple_updates": True}),
    "kozinec": (Kozinec, {"eps": 0.05}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_label_matches_the_twin(case: str) -> None:
    cls, params = CASES[case]
    X, label_sets = multilabel_stream(n=120, n_features=10, n_labels=3, seed=5)
    bank = ModelBank(cls(**params, delta=0.5, seed=3)).learn(X, label_sets)
    bank.replay(max_passes=20)
    for value in bank.labels_:
        twin = ReferenceLearner(cls.algorithm, params, delta=0.5, seed=3)
        twin.learn(X.indptr, X.indices, X.data, one_label_targets(label_sets, int(value)))
        twin.replay(max_passes=20)
        learner = bank.learner(value)
        alpha = learner.buffer.alpha()
        if isinstance(learner, Kozinec):
            alpha = alpha * float(learner.state.scalars[3])
        np.testing.assert_allclose(learner.coef_, twin.coef_, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(learner.intercept_, twin.intercept_, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(learner.updates, twin.t, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(alpha, twin.alpha(), rtol=RTOL, atol=ATOL)
        assert learner.summary()["presentations"] == twin.counts.presentations
        assert twin.passes >= 2
