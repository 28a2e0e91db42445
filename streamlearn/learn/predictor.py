"""Frozen copies of a model for answering from another thread: :class:`BinaryPredictor`
and :class:`BankPredictor`, made by ``Model.predictor()``.

A predictor holds its own copy of the weights, intercepts, margin units and calibrations,
so the model it was taken from can go on learning while the predictor answers: every
answer comes from one consistent state, never from a half-learned batch. Its answers are
plain values (for JSON):

- binary: ``{"score": f(x), "label": 1 or -1, "probability": P(+1 | x)}``, the same
  numbers as the model's ``decision_function`` and ``predict_proba`` at the time it was
  taken;
- one-vs-rest bank: ``{"label", "score", "probability", "labels", "ranking"}``: the label
  of the largest decision value with its score and calibrated probability, every label
  with a positive decision value, and every label ranked by decreasing decision value
  with its score and probability (each label's own Platt sigmoid, as the binary learner
  of that label gives it).

>>> from streamlearn.learn import PDM
>>> model = PDM(delta=0.0).fit(np.array([[1.0, 0.0], [0.0, 1.0]]), [1, -1])
>>> predictor = model.predictor()
>>> [a["label"] for a in predictor.answer((np.array([0, 1, 2]), np.array([0, 1], dtype=np.int32),
...                                         np.array([2.0, 3.0])))]
[1, -1]
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import BINARY_ANSWER_CHARS, binary_answers, decision_values
from streamlearn.learn.calibration import Platt

if TYPE_CHECKING:
    from streamlearn.learn.binary_view import BinaryModelView

#: rows as CSR arrays: (indptr, indices, values)
Rows = tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float64]]


def finite(value: Any) -> Any:
    """``value`` with every non-finite float as None (JSON has no NaN).

    >>> finite({"a": [1.0, float("nan")], "b": (float("inf"),)})
    {'a': [1.0, None], 'b': [None]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


class Predictor(Protocol):
    """A frozen model that answers questions (see the module doc)."""

    @property
    def kind(self) -> str:
        """``binary`` or ``one-vs-rest``."""
        ...

    def answer(self, rows: Rows) -> list[dict[str, Any]]:
        """One answer per row, as plain values."""
        ...

    def answer_json(self, rows: Rows) -> bytes:
        """:meth:`answer` as a JSON array in UTF-8 (non-finite numbers as null)."""
        ...

    def predicted_labels(self, rows: Rows) -> npt.NDArray[np.float64]:
        """The label each answer names (NaN where it names none)."""
        ...


def scaled_decisions(
    rows: Rows, weights: npt.NDArray[np.float64], scale: float, intercept: float
) -> npt.NDArray[np.float64]:
    """``scale (w . x) + intercept`` for every row: the decision values of engine weights
    ``w`` held at a ``scale``, computed without a scaled copy of them (as large as the
    largest feature index). Learners and predictors both compute them this way, so their
    answers are the same numbers.

    >>> rows = (np.array([0, 2]), np.array([0, 1], dtype=np.int32), np.array([1.0, 2.0]))
    >>> scaled_decisions(rows, np.array([0.5, 0.25]), 4.0, 1.0).tolist()
    [5.0]
    """
    indptr, indices, values = rows
    out: npt.NDArray[np.float64] = decision_values(indptr, indices, values, weights, 0.0)
    out *= scale
    out += intercept
    return out


def calibrated(
    scores: npt.NDArray[np.float64], margin_factor: float, platt: Platt
) -> npt.NDArray[np.float64]:
    """P(+1) of decision values ``scores``: the Platt sigmoid of the scores in margin
    units (``scores * margin_factor``; the scores themselves when the factor is NaN, before
    the first update).

    >>> calibrated(np.array([-1.0, 0.0, 2.0]), 0.5, Platt(2.0)).round(3).tolist()
    [0.269, 0.5, 0.881]
    """
    z = scores * margin_factor if math.isfinite(margin_factor) else scores
    return platt.probability(z)


@dataclass(frozen=True)
class BinaryPredictor:
    """A binary learner's weights (the engine's, and the ``scale`` that makes them
    ``coef_``), intercept, margin factor and calibration, copied."""

    weights: npt.NDArray[np.float64]
    scale: float
    intercept: float
    #: 1 / (the margin unit in the units of ``weights``); NaN before the first update
    margin_factor: float
    calibration: Platt

    @property
    def kind(self) -> str:
        return "binary"

    def scores(self, rows: Rows) -> npt.NDArray[np.float64]:
        """Decision values w . x + b (features beyond the weights weigh 0)."""
        return scaled_decisions(rows, self.weights, self.scale, self.intercept)

    def probabilities(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """P(+1) of each decision value."""
        return calibrated(scores, self.margin_factor, self.calibration)

    def predicted_labels(self, rows: Rows) -> npt.NDArray[np.float64]:
        """The label each answer names: +1 where the decision value is > 0, else -1."""
        return np.where(self.scores(rows) > 0.0, 1.0, -1.0)

    def answer(self, rows: Rows) -> list[dict[str, Any]]:
        scores = self.scores(rows)
        probabilities = self.probabilities(scores)
        return [
            {"score": s, "label": 1 if s > 0.0 else -1, "probability": p}
            for s, p in zip(scores.tolist(), probabilities.tolist(), strict=True)
        ]

    def answer_json(self, rows: Rows) -> bytes:
        """:meth:`answer` as JSON in UTF-8, the text ``json.dumps`` gives (numbers in
        full, non-finite ones as null), written by one compiled call: ``repr`` of each
        number took most of the time of a request of a hundred examples.

        >>> BinaryPredictor(np.array([2.0]), 1.0, 0.5, math.nan, Platt()).answer_json(
        ...     (np.array([0, 1]), np.array([0], dtype=np.int32), np.array([1.0])))
        b'[{"score": 2.5, "label": 1, "probability": 0.9241418199787564}]'
        """
        scores = np.ascontiguousarray(self.scores(rows), dtype=np.float64)
        probabilities = np.ascontiguousarray(self.probabilities(scores), dtype=np.float64)
        out = np.empty(2 + scores.shape[0] * BINARY_ANSWER_CHARS, dtype=np.uint8)
        end = binary_answers(scores, probabilities, out, 0)
        return out[:end].tobytes()


def dual_predictor(
    learner: BinaryModelView,
    weights: npt.NDArray[np.float64],
    *,
    beta: float,
    updates: float,
    slack: float,
    calibration: Platt,
    delta: float | None = None,
) -> BinaryPredictor:
    """A frozen copy of another model held in ``learner``'s units: the dual combination
    with w = ``weights``, beta, t = ``updates`` and sum alpha_k^2 = ``slack`` (a learning
    group's common model, the sum of its members' shares), answering with
    ``calibration``. Its margin unit is that model's ||a||^2 / t, under ``delta``
    (default: the learner's Delta).

    >>> from streamlearn import PDM
    >>> learner = PDM(delta=1.0).learn(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, -1]))
    >>> state = learner.state
    >>> copy = dual_predictor(learner, state.weights[:2], beta=state.beta,
    ...     updates=state.updates, slack=state.buffered_slack(),
    ...     calibration=learner.calibration())
    >>> rows = (np.array([0, 1, 2]), np.array([0, 1], dtype=np.int32), np.array([2.0, 1.0]))
    >>> copy.answer(rows) == learner.predictor().answer(rows)
    True
    """
    state = learner.state
    delta_sq = state.delta_sq if delta is None else delta * delta
    sqnorm = state.scale * state.scale * (float(weights @ weights) + beta * beta + delta_sq * slack)
    unit = sqnorm / updates if updates > 0.0 and sqnorm > 0.0 else math.nan
    scale = learner.output_scale
    return BinaryPredictor(
        weights=np.array(weights, dtype=np.float64),
        scale=scale,
        intercept=float(learner.rho * beta * scale),
        margin_factor=1.0 / (unit * learner.rule_output_factor()) if unit > 0.0 else math.nan,
        calibration=calibration,
    )


@dataclass(frozen=True)
class BankPredictor:
    """A one-vs-rest bank's weights (one row per label id), copied, with the labels'
    intercepts, margin factors and calibrations."""

    #: label values as JSON writes them (``3``, not ``3.0``), by label id
    labels: tuple[int | float, ...]
    weights: npt.NDArray[np.float64]
    scales: npt.NDArray[np.float64]
    intercepts: npt.NDArray[np.float64]
    margin_factors: npt.NDArray[np.float64]
    calibrations: tuple[Platt, ...]

    @property
    def kind(self) -> str:
        return "one-vs-rest"

    def scores(self, rows: Rows) -> npt.NDArray[np.float64]:
        """Decision values, one row per example, one column per label id."""
        out = np.zeros((rows[0].shape[0] - 1, len(self.labels)))
        for label in range(len(self.labels)):
            out[:, label] = scaled_decisions(
                rows, self.weights[label], float(self.scales[label]), float(self.intercepts[label])
            )
        return out

    def probabilities(self, scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Each label's P(label | x) by its own sigmoid (columns as ``scores``')."""
        out = np.empty_like(scores)
        for label, platt in enumerate(self.calibrations):
            out[:, label] = calibrated(scores[:, label], float(self.margin_factors[label]), platt)
        return out

    def answer_json(self, rows: Rows) -> bytes:
        return json.dumps(finite(self.answer(rows)), allow_nan=False).encode()

    def predicted_labels(self, rows: Rows) -> npt.NDArray[np.float64]:
        """The label each answer names: the top of its ranking (NaN before any label)."""
        if not self.labels:
            return np.full(rows[0].shape[0] - 1, np.nan)
        values = np.array(self.labels, dtype=np.float64)
        top: npt.NDArray[np.float64] = values[np.argmax(self.scores(rows), axis=1)]
        return top

    def answer(self, rows: Rows) -> list[dict[str, Any]]:
        scores = self.scores(rows)
        probabilities = self.probabilities(scores)
        labels = self.labels
        answers = []
        for row, chances in zip(scores, probabilities, strict=True):
            order = np.argsort(-row, kind="stable").tolist()
            values, p = row.tolist(), chances.tolist()
            ranking = [{"label": labels[j], "score": values[j], "probability": p[j]} for j in order]
            top = ranking[0] if ranking else {"label": None, "score": None, "probability": None}
            answers.append(
                {**top, "labels": [labels[j] for j in order if values[j] > 0.0], "ranking": ranking}
            )
        return answers
