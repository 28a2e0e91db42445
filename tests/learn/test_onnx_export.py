"""A model exported as ONNX answers in onnxruntime as the model does: decision values
within 1e-6 (a dense product against the model's sparse one), the same labels and
probabilities, for a binary learner on Adult and for a bank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streamlearn.learn import PAUM, PDM, ModelBank, ModelLimits
from streamlearn.learn.onnx_export import dense, export_onnx
from streamlearn.parse import SvmlightParser
from streamlearn.replay import ReplaySchedule

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is a test dependency (.[dev])")
ADULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"


def session(model: object) -> object:
    return ort.InferenceSession(export_onnx(model), providers=["CPUExecutionProvider"])  # type: ignore[arg-type]


def adult_or_generated() -> tuple[bytes, bytes]:
    if (ADULT / "a9a.train").exists():
        return (ADULT / "a9a.train").read_bytes(), (ADULT / "a9a.test").read_bytes()
    rng = np.random.default_rng(11)
    direction = rng.normal(size=40)
    lines = []
    for _ in range(3000):
        x = rng.normal(size=40) * (rng.random(40) < 0.2)
        label = 1 if x @ direction > 0 else -1
        nonzero = np.flatnonzero(x)
        lines.append(f"{label} " + " ".join(f"{j + 1}:{x[j]:.5g}" for j in nonzero))
    text = ("\n".join(lines) + "\n").encode()
    return text, text


def test_a_binary_model_answers_in_onnxruntime_as_predict_does() -> None:
    train, test = adult_or_generated()
    parsed = SvmlightParser().feed(train)
    model = PDM(eps=0.05, delta=1.0)
    examples, _ = model.admit(parsed, ModelLimits())
    model.learn_on_schedule(examples, ReplaySchedule(every=0), 0)
    model.replay()
    rows = SvmlightParser().feed(test)
    csr = (rows.indptr, rows.indices, rows.values)
    predictor = model.predictor()
    n_features = predictor.weights.shape[0]
    score, label, probability = session(model).run(None, {"X": dense(csr, n_features)})  # type: ignore[attr-defined]
    expected = predictor.scores(csr)
    assert len(expected) > 100 and np.max(np.abs(score - expected)) < 1e-6
    assert np.array_equal(label, np.where(expected > 0, 1, -1))
    assert np.allclose(probability, predictor.probabilities(expected), atol=1e-9)


def test_a_bank_answers_in_onnxruntime_as_predict_does() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 6))
    y = np.argmax(X[:, :3], axis=1) + 1  # labels 1, 2, 3
    bank = ModelBank(PAUM(delta=1.0)).fit(X, y)
    scores, label, probabilities = session(bank).run(None, {"X": X})  # type: ignore[attr-defined]
    predictor = bank.predictor()
    csr = (np.arange(0, 6 * 400 + 1, 6), np.tile(np.arange(6, dtype=np.int32), 400), X.ravel())
    expected = predictor.scores(csr)
    assert np.max(np.abs(scores - expected)) < 1e-6
    labels = np.array(predictor.labels)
    assert np.array_equal(label, labels[np.argmax(expected, axis=1)])
    assert np.allclose(probabilities, predictor.probabilities(expected), atol=1e-9)
