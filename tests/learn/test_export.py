"""A model exported as JSON reloads to the same decision values, bit for bit, for a
binary learner and a one-vs-rest bank; the command line and the HTTP API write the same
document; a document that is not one is refused with a reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from streamlearn.errors import InvalidInputError
from streamlearn.learn import PAUM, PDM, ModelBank
from streamlearn.learn.export import FORMAT, export_json, load_json
from streamlearn.learn.onnx_export import dense
from streamlearn.parse import SvmlightParser

ADULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"


def rows_of(data: bytes):  # type: ignore[no-untyped-def]
    parser = SvmlightParser()
    parsed = parser.feed(data)
    return parsed, (parsed.indptr, parsed.indices, parsed.values)


def through_json(document: dict) -> dict:  # type: ignore[type-arg]
    """``document`` as written and read back: the text must be strict JSON."""
    return json.loads(json.dumps(document, allow_nan=False))  # type: ignore[no-any-return]


def random_rows(rng: np.random.Generator, n: int, d: int) -> bytes:
    lines = []
    for _ in range(n):
        picked = np.sort(rng.choice(d, size=5, replace=False))
        label = 1 if rng.random() < 0.5 else -1
        lines.append(f"{label} " + " ".join(f"{j + 1}:{rng.normal():.6g}" for j in picked))
    return ("\n".join(lines) + "\n").encode()


def test_a_binary_model_reloads_to_the_same_decision_values() -> None:
    rng = np.random.default_rng(3)
    parsed, rows = rows_of(random_rows(rng, 400, 50))
    X = np.zeros((parsed.n_rows, 50))
    for i in range(parsed.n_rows):
        lo, hi = parsed.indptr[i], parsed.indptr[i + 1]
        X[i, parsed.indices[lo:hi]] = parsed.values[lo:hi]
    y = np.where(rng.random(parsed.n_rows) < 0.5, 1, -1)
    model = PDM(eps=0.05, delta=1.0).fit(X, y)
    document = through_json(export_json(model))
    assert document["format"] == FORMAT and document["kind"] == "binary"
    assert document["algorithm"] == "pdm" and document["params"]["eps"] == 0.05
    assert document["scale"] != 1.0 or document["intercept"] != 0.0  # a real model
    reloaded = load_json(document)
    expected = model.predictor().scores(rows)
    assert np.array_equal(reloaded.scores(rows), expected)
    assert np.array_equal(model.decision_function(X), reloaded.scores(rows))
    assert reloaded.answer(rows) == model.predictor().answer(rows)  # probabilities too
    cert = document["certificate"]
    assert cert["margin_upper_bound"] >= cert["margin_achieved"]


def test_a_bank_reloads_to_the_same_decision_values_per_label() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 8))
    y = np.argmax(X[:, :3], axis=1) * 2 + 1  # labels 1, 3, 5
    bank = ModelBank(PAUM(delta=1.0)).fit(X, y)
    document = through_json(export_json(bank))
    assert document["kind"] == "one-vs-rest" and sorted(document["labels"]) == [1, 3, 5]
    assert [m["label"] for m in document["models"]] == document["labels"]  # by label id
    reloaded = load_json(document)
    csr = (np.arange(0, 8 * 300 + 1, 8), np.tile(np.arange(8, dtype=np.int32), 300),
           X.ravel())  # fmt: skip
    assert np.array_equal(reloaded.scores(csr), bank.predictor().scores(csr))
    assert reloaded.answer(csr)[:20] == bank.predictor().answer(csr)[:20]
    labels = [figures["label"] for figures in document["certificate"]["per_label"]]
    assert labels == document["labels"]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"format": "onnx"}, "not a streamlearn-linear"),
        ({"format": FORMAT, "format_version": 99, "kind": "binary"}, "version 99"),
        ({"format": FORMAT, "format_version": 1, "kind": "binary"}, "malformed"),
        ({"format": FORMAT, "format_version": 1, "kind": "tree"}, "unknown kind"),
        (
            {"format": FORMAT, "format_version": 1, "kind": "binary", "n_features": 2,
             "weights": {"indices": [5], "values": [1.0]}, "scale": 1.0, "intercept": 0.0,
             "calibration": {"platt_slope": 1.0, "margin_factor": None}},
            "do not match",
        ),
    ],
)  # fmt: skip
def test_what_is_not_an_exported_model_is_refused_with_a_reason(
    document: dict, reason: str
) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInputError, match=reason):
        load_json(document)


def test_the_export_command_writes_what_reloads_to_predicts_values(tmp_path: Path) -> None:
    """``streamlearn export`` of a model ``learn`` wrote, on a9a (or, without the shared
    data, a generated stream): the reloaded document's decision values are those
    ``streamlearn predict`` prints, on every line of the test file; the ONNX graph's in
    onnxruntime are within 1e-6 of them."""
    if (ADULT / "a9a.train").exists():
        train, test = (ADULT / "a9a.train").read_bytes(), (ADULT / "a9a.test").read_bytes()
    else:
        rng = np.random.default_rng(7)
        train, test = random_rows(rng, 2000, 120), random_rows(rng, 500, 120)
    model, exported = tmp_path / "m.ckpt", tmp_path / "m.json"
    cli = [sys.executable, "-m", "streamlearn"]
    subprocess.run([*cli, "learn", "--algo", "pdm", "--eps", "0.05", "--model", str(model),
                    "--quiet"], input=train, check=True, capture_output=True)  # fmt: skip
    subprocess.run([*cli, "export", str(model), "--format", "json", "-o", str(exported)],
                   check=True, capture_output=True)  # fmt: skip
    printed = subprocess.run([*cli, "predict", "--model", str(model)], input=test, check=True,
                             capture_output=True).stdout.split()  # fmt: skip
    _, rows = rows_of(test)
    scores = load_json(exported).scores(rows)
    assert len(printed) == len(scores) > 100
    assert [float(v) for v in printed] == scores.tolist()
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is a test dependency (.[dev])")
    graph = tmp_path / "m.onnx"
    subprocess.run([*cli, "export", str(model), "--format", "onnx", "-o", str(graph)],
                   check=True, capture_output=True)  # fmt: skip
    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    n_features = json.loads(exported.read_text())["n_features"]
    onnx_scores = session.run(["score"], {"X": dense(rows, n_features)})[0]
    assert np.max(np.abs(onnx_scores - scores)) < 1e-6
