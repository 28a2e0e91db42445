"""How a one-vs-rest bank's answers are written: daemon predictions (JSON), ``predict``
lines, ``eval`` figures, what ``inspect`` shows and the exported weights."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidParameterError
from streamlearn.evaluation import multiclass_scores, multilabel_scores
from streamlearn.learn.model import in_line_order
from streamlearn.learn.params import plain_params
from streamlearn.parse import ParsedRows, Rejected

if TYPE_CHECKING:
    from streamlearn.learn.bank_view import BankModelView
    from streamlearn.learn.base import LinearLearner

#: what ``predict`` writes per example for a bank
BANK_OUTPUTS = ("sets", "class", "ranking", "scores")


def label_text(value: float) -> str:
    """A label value as the input wrote it: ``3`` rather than ``3.0``.

    >>> label_text(3.0), label_text(-1.0), label_text(2.5)
    ('3', '-1', '2.5')
    """
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def bank_prediction(labels: list[int | float], scores: npt.NDArray[np.float64]) -> bytes:
    """A one-vs-rest prediction as a JSON object (UTF-8): ``label`` the argmax label
    (ties to the label seen first) and ``score`` its decision value (both null while the
    bank has no label), ``labels`` every label with a positive decision value and
    ``ranking`` every label with its decision value, both by decreasing decision value
    (ties: the label seen first). Labels are numbers as the input wrote them (``3``, not
    ``3.0``); decision values are those of ``decision_function``.

    >>> bank_prediction([3, 7, 1], np.array([0.5, 1.5, -2.0])).decode()
    '{"label": 7, "score": 1.5, "labels": [7, 3], "ranking": [[7, 1.5], [3, 0.5], [1, -2.0]]}'
    >>> bank_prediction([], np.zeros(0)).decode()
    '{"label": null, "score": null, "labels": [], "ranking": []}'
    """
    order = np.argsort(-scores, kind="stable").tolist()
    values = [_json_number(v) for v in scores.tolist()]
    ranking = [[labels[j], values[j]] for j in order]
    document = {
        "label": ranking[0][0] if ranking else None,
        "score": ranking[0][1] if ranking else None,
        "labels": [labels[j] for j in order if scores[j] > 0.0],
        "ranking": ranking,
    }
    return json.dumps(document, allow_nan=False).encode()


def bank_answers(bank: BankModelView, scores: npt.NDArray[np.float64]) -> list[bytes]:
    """:func:`bank_prediction` of each row of ``scores`` (one column per label id)."""
    labels = [label_value(v) for v in bank.labels_.tolist()]
    return [bank_prediction(labels, row) for row in scores]


def bank_lines(
    bank: BankModelView, rows: ParsedRows, scores: npt.NDArray[np.float64], output: str
) -> Iterator[str]:
    """One line per parsed line: with ``output`` ``sets`` the labels whose decision value
    is positive (``3,7``, empty when none), ``class`` the multi-class argmax, ``ranking``
    every ``label:score`` by decreasing score, ``scores`` every ``label:score`` by label
    id. A rejected line gives ``nan``."""
    format_row = _formatter(bank, output)
    return in_line_order(rows, [format_row(row) for row in scores], "nan")


def evaluate_bank(
    bank: BankModelView, parts: Iterable[ParsedRows], on_rejected: Callable[[list[Rejected]], None]
) -> dict[str, Any]:
    """Per-label and averaged figures (see :func:`~streamlearn.evaluation.multilabel_scores`)
    over the bank's labels and any label of the input it never learned (scored -inf),
    sorted by value; with exactly one label on every line, also the multi-class accuracy
    and confusion matrix of the argmax."""
    kept = []
    for rows in parts:
        on_rejected(rows.rejected)
        kept.append((rows, bank_scores(bank, rows)))
    all_rows = ParsedRows.concatenate([rows for rows, _ in kept])
    scores = np.concatenate([s for _, s in kept]) if kept else np.zeros((0, bank.n_labels))
    if all_rows.n_rows == 0:
        return {"examples": 0}
    known = bank.labels_.tolist()
    labels = sorted(set(known) | set(all_rows.labels.tolist()))
    column = {value: j for j, value in enumerate(labels)}
    decisions = np.full((all_rows.n_rows, len(labels)), -math.inf)
    decisions[:, [column[v] for v in known]] = scores
    truth = np.zeros(decisions.shape, dtype=bool)
    row_of_label = np.repeat(np.arange(all_rows.n_rows), np.diff(all_rows.label_ptr))
    truth[row_of_label, [column[v] for v in all_rows.labels.tolist()]] = True
    figures: dict[str, Any] = dict(multilabel_scores(truth, decisions, labels))
    if np.all(np.diff(all_rows.label_ptr) == 1) and known:
        predicted = bank.labels_[np.argmax(scores, axis=1)]
        figures["multiclass"] = multiclass_scores(all_rows.labels, predicted, labels)
    return figures


def describe_bank(bank: BankModelView) -> dict[str, Any]:
    """What ``inspect`` shows of a bank: algorithm, parameters, labels, the summary and a
    row of figures per label."""
    summary = bank.summary()
    per_label = []
    for figures, learner in zip(summary.pop("per_label"), bank.learners(), strict=True):
        per_label.append(
            {
                "label": figures["label"],
                "positives": figures["positives"],
                **({"tau_pos": figures["tau_pos"]} if "tau_pos" in figures else {}),
                "intercept": learner.intercept_,
                "updates": figures["updates"],
                "passes": figures["passes"],
                "converged": figures["converged"],
                "margin_achieved": figures["margin_achieved"],
                "certified_gap": figures["certified_gap"],
                "weight_norm": figures["weight_norm"],
            }
        )
    summary.pop("algorithm")
    return {
        "algorithm": bank.algorithm,
        "params": plain_params(bank.base.get_params()),
        "tau_pos_kappa": bank.tau_pos_kappa,
        "label_values": [label_text(v) for v in bank.labels_.tolist()],
        **summary,
        "per_label": per_label,
    }


def bank_weights(bank: BankModelView) -> npt.NDArray[np.float64]:
    """``coef_`` of every label's learner, one row per label id."""
    out = np.zeros((bank.n_labels, bank.n_features_in_))
    for label, learner in enumerate(bank.learners()):
        out[label] = learner.coef_
    return out


def bank_scores(bank: BankModelView, rows: ParsedRows) -> npt.NDArray[np.float64]:
    """The bank's decision values of parsed rows (one column per label id)."""
    if rows.n_rows == 0:
        return np.zeros((0, bank.n_labels))
    return bank.decision_function((rows.indptr, rows.indices, rows.values))


def _formatter(bank: BankModelView, output: str) -> Callable[[npt.NDArray[np.float64]], str]:
    texts = [label_text(v) for v in bank.labels_.tolist()]
    if output == "sets":
        return lambda row: ",".join(texts[j] for j in np.flatnonzero(row > 0.0))
    if output == "class":
        return lambda row: texts[int(np.argmax(row))] if texts else "nan"
    if output == "ranking":
        return lambda row: " ".join(
            f"{texts[j]}:{_number(row[j])}" for j in np.argsort(-row, kind="stable")
        )
    if output == "scores":
        return lambda row: " ".join(f"{texts[j]}:{_number(row[j])}" for j in range(row.shape[0]))
    raise InvalidParameterError(f"--output must be one of {', '.join(BANK_OUTPUTS)}")


def _number(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else "nan"


def label_value(value: float) -> int | float:
    """A label as JSON shows it: integral values as integers."""
    return int(value) if value.is_integer() else value


def _json_number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def bank_summary(bank: BankModelView) -> dict[str, Any]:
    """Bank-wide counts, and per label its learner's summary (certificate included)."""
    per_label = []
    for label, learner in enumerate(bank.learners()):
        figures = learner.summary()
        figures.pop("algorithm")
        per_label.append(
            {
                "label": bank.state.label_values[label],
                "positives": int(bank.state.positives[label]),
                **({"tau_pos": learner.get_params()["tau_pos"]} if _has_tau_pos(learner) else {}),
                **figures,
            }
        )
    return {
        "algorithm": bank.algorithm,
        "one_vs_rest": True,
        "labels": bank.n_labels,
        "examples": bank.state.examples_seen,
        "updates": float(sum(p["updates"] for p in per_label)),
        "update_events": sum(p["update_events"] for p in per_label),
        "passes": max((p["passes"] for p in per_label), default=0),
        "converged": bank.converged,
        "worst_certified_gap": _worst([p["certified_gap"] for p in per_label]),
        "delta": bank.state.delta_value,
        "n_features": bank.state.n_features,
        "buffer_examples": len(bank.state.buffer),
        "buffer_capacity": bank.state.buffer.max_examples,
        "buffer_nnz": bank.state.buffer.features.nnz,
        "buffer_evicted": bank.state.buffer.features.evicted,
        "evictions_to_forget": max((p["evictions_to_forget"] for p in per_label), default=0),
        "forget": bank.base.forget,
        "pending_examples": bank.state.window.held_examples,
        "stream_judged": bank.stream_judged,
        "stream_mistakes": bank.stream_mistakes,
        "per_label": per_label,
    }


def _has_tau_pos(learner: LinearLearner) -> bool:
    return "tau_pos" in learner.param_names()


def _worst(gaps: list[float]) -> float:
    """The largest certified gap (NaN when some label has none: not yet certified)."""
    if not gaps or any(math.isnan(g) for g in gaps):
        return math.nan
    return max(gaps)
