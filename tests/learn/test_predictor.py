"""Frozen predictors: they answer as their model did when taken, whatever it learns
after, and their JSON is their answers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn.learn import PAUM, PDM, ModelBank
from streamlearn.learn.inputs import as_rows


def data(seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) * rng.choice([0.0, 1.0], size=(n, 5), p=[0.3, 0.7])
    return X, np.where(X @ np.array([1.0, -2.0, 0.5, 0.0, 1.5]) > 0.1, 1, -1)


@pytest.mark.parametrize("learner", [PDM(eps=0.1, delta=0.5), PAUM(tau_neg=-1.0, tau_pos=2.0)])
def test_a_binary_predictor_answers_as_its_model_did(learner: PDM | PAUM) -> None:
    X, y = data(1)
    model = learner.fit(X, y)
    rows = as_rows(X[:40])
    predictor = model.predictor()
    answers = predictor.answer(rows)
    scores, probabilities = model.decision_function(X[:40]), model.predict_proba(X[:40])[:, 1]
    assert [a["score"] for a in answers] == scores.tolist()
    assert [a["probability"] for a in answers] == probabilities.tolist()
    assert [a["label"] for a in answers] == model.predict(X[:40]).tolist()
    assert predictor.answer_json(rows) == json.dumps(answers).encode()  # byte for byte
    model.learn(*data(2))  # the model moves on; the copy does not
    assert predictor.answer(rows) == answers
    assert model.decision_function(X[:40]).tolist() != scores.tolist()


def test_a_bank_predictor_answers_as_its_bank_did() -> None:
    X, y = data(3)
    labels = [[1] if v > 0 else [2, 3] if x[0] > 0 else [3] for x, v in zip(X, y, strict=True)]
    bank = ModelBank(PDM(eps=0.1, delta=0.5)).fit(X, labels)
    rows = as_rows(X[:30])
    predictor = bank.predictor()
    answers = predictor.answer(rows)
    scores, chances = bank.decision_function(X[:30]), bank.predict_proba(X[:30])
    values = bank.labels_.tolist()
    for answer, row, p in zip(answers, scores, chances, strict=True):
        order = np.argsort(-row, kind="stable")
        assert [r["label"] for r in answer["ranking"]] == [values[j] for j in order]
        assert [r["score"] for r in answer["ranking"]] == row[order].tolist()
        assert [r["probability"] for r in answer["ranking"]] == p[order].tolist()
        assert answer["labels"] == [values[j] for j in order if row[j] > 0]
        assert answer["label"] == values[order[0]]
    assert json.loads(predictor.answer_json(rows)) == answers
    bank.learn(X[:50], labels[:50])
    assert predictor.answer(rows) == answers


def test_non_finite_scores_become_null_in_json() -> None:
    X, y = data(4)
    predictor = PDM(eps=0.1, delta=0.5).fit(X, y).predictor()
    huge = (np.array([0, 1]), np.array([0], dtype=np.int32), np.array([1e308]))
    predictor = type(predictor)(predictor.weights * 1e10, predictor.scale, 0.0,
                                predictor.margin_factor, predictor.calibration)  # fmt: skip
    (answer,) = json.loads(predictor.answer_json(huge))
    assert answer["score"] is None
