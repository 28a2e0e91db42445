"""A model's weights as JSON other tools can read, and back (``streamlearn export``,
``GET /model/weights``, :func:`load_json`).

The document holds what answers a question and what says how good the answer is: the
algorithm and its parameters, the weights (the nonzero ones, by 0-based feature index),
the intercept, the calibration and the certificate. Decision values are

    score(x) = scale * (weights . x) + intercept

(the learner keeps its weights at a scale, as the document does, so that a reloaded
model computes the very same numbers: ``coef_j = scale * weights_j`` for tools that take
one vector), and the probability of +1 is the logistic of ``platt_slope * score *
margin_factor`` (of ``platt_slope * score`` while ``margin_factor`` is null, before the
first update). A one-vs-rest bank holds one such model per label. Floats are written in
full (the shortest text that reads back to the same double), so :func:`load_json` gives
a predictor whose decision values equal the model's, bit for bit.

>>> from streamlearn.learn import PDM
>>> model = PDM(delta=1.0).fit(np.array([[1.0, 0.0], [0.0, 2.0]]), [1, -1])
>>> document = export_json(model)
>>> document["kind"], document["weights"]["indices"], document["certificate"]["converged"]
('binary', [0, 1], True)
>>> rows = (np.array([0, 2]), np.array([0, 1], dtype=np.int32), np.array([3.0, 1.0]))
>>> bool(load_json(json.loads(json.dumps(document))).scores(rows) == model.predictor().scores(rows))
True
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidInputError
from streamlearn.learn.calibration import Platt
from streamlearn.learn.description import describe
from streamlearn.learn.model import Model
from streamlearn.learn.predictor import BankPredictor, BinaryPredictor, finite

#: what the document says it is, and the version of its layout
FORMAT = "streamlearn-linear"
FORMAT_VERSION = 1


def export_json(model: Model, examples: int = 0) -> dict[str, Any]:
    """The JSON document of ``model``, which has learned ``examples`` stream examples
    (see the module doc), as plain values."""
    return document_of(model.predictor(), describe(model, model.summary(), examples))


def document_of(predictor: Any, description: dict[str, Any]) -> dict[str, Any]:
    """The JSON document of a frozen ``predictor`` (:meth:`Model.predictor`) and the
    model's ``description`` (:func:`~streamlearn.learn.description.describe`: what
    ``GET /model`` says)."""
    head: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": predictor.kind,
        "algorithm": description.get("algorithm"),
        "params": description.get("params", {}),
        "decision": "scale * (weights . x) + intercept",
        "feature_indices": "0-based",
        "examples": description.get("examples"),
        "certificate": description.get("certificate", {}),
    }
    if isinstance(predictor, BinaryPredictor):
        body = _one(predictor.weights, predictor.scale, predictor.intercept,
                    predictor.margin_factor, predictor.calibration)  # fmt: skip
        return finite({**head, **body})  # type: ignore[no-any-return]
    if isinstance(predictor, BankPredictor):
        models = []
        for label, value in enumerate(predictor.labels):
            one = _one(predictor.weights[label], float(predictor.scales[label]),
                       float(predictor.intercepts[label]),
                       float(predictor.margin_factors[label]),
                       predictor.calibrations[label])  # fmt: skip
            models.append({"label": value, **one})
        return finite({**head, "labels": list(predictor.labels), "models": models})  # type: ignore[no-any-return]
    raise InvalidInputError(f"no JSON export of a {type(predictor).__name__}")


def write_json(model: Model, path: str | Path) -> None:
    """Write :func:`export_json` of ``model`` to ``path``."""
    Path(path).write_text(json.dumps(export_json(model), allow_nan=False) + "\n")


def load_json(source: str | Path | dict[str, Any]) -> BinaryPredictor | BankPredictor:
    """The model a JSON document holds (a path to one, or the parsed document), as a
    predictor: ``scores`` gives its decision values, ``answer`` its answers, as the
    exported model gave them. Raises :class:`InvalidInputError` for anything else."""
    document = source if isinstance(source, dict) else json.loads(Path(source).read_text())
    try:
        if document.get("format") != FORMAT:
            raise InvalidInputError(f"not a {FORMAT} document")
        if document.get("format_version") != FORMAT_VERSION:
            raise InvalidInputError(
                f"a {FORMAT} document of version {document.get('format_version')!r}, "
                f"this streamlearn reads version {FORMAT_VERSION}"
            )
        if document["kind"] == "binary":
            weights, scale, intercept, factor, platt = _model_of(document)
            return BinaryPredictor(weights, scale, intercept, factor, platt)
        if document["kind"] == "one-vs-rest":
            models = [_model_of(one) for one in document["models"]]
            labels = tuple(one["label"] for one in document["models"])
            width = max((len(m[0]) for m in models), default=0)
            weights = np.zeros((len(models), width))
            for label, model in enumerate(models):
                weights[label, : len(model[0])] = model[0]
            return BankPredictor(
                labels, weights, np.array([m[1] for m in models]),
                np.array([m[2] for m in models]), np.array([m[3] for m in models]),
                tuple(m[4] for m in models),
            )  # fmt: skip
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise InvalidInputError(f"malformed {FORMAT} document ({exc!r})") from exc
    raise InvalidInputError(f"unknown kind {document.get('kind')!r} of a {FORMAT} document")


def _one(
    weights: npt.NDArray[np.float64], scale: float, intercept: float, factor: float, platt: Platt
) -> dict[str, Any]:
    """The part of the document that answers for one binary model."""
    nonzero = np.flatnonzero(weights)
    return {
        "n_features": int(weights.shape[0]),
        "weights": {"indices": nonzero.tolist(), "values": weights[nonzero].tolist()},
        "scale": float(scale),
        "intercept": float(intercept),
        "calibration": {"platt_slope": float(platt.slope), "margin_factor": float(factor)},
    }


def _model_of(
    part: dict[str, Any],
) -> tuple[npt.NDArray[np.float64], float, float, float, Platt]:
    """One binary model's weights, scale, intercept, margin factor and calibration."""
    weights = np.zeros(int(part["n_features"]))
    indices = np.asarray(part["weights"]["indices"], dtype=np.int64)
    values = np.asarray(part["weights"]["values"], dtype=np.float64)
    if indices.shape != values.shape or (
        indices.size and not 0 <= indices.min() <= indices.max() < weights.shape[0]
    ):
        raise ValueError("weights' indices and values do not match n_features")
    weights[indices] = values
    calibration = part["calibration"]
    factor = calibration["margin_factor"]
    return (
        weights,
        float(part["scale"]),
        float(part["intercept"]),
        math.nan if factor is None else float(factor),
        Platt(float(calibration["platt_slope"])),
    )
