"""``predict``, ``eval`` and ``inspect`` for one-vs-rest banks (model files of
:class:`~streamlearn.learn.ModelBank`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.evaluation import multiclass_scores, multilabel_scores
from streamlearn.jobs.rejects import RejectLog
from streamlearn.learn import ModelBank
from streamlearn.parse import ParsedRows, SvmlightParser
from streamlearn.sources import InputStream

#: what ``predict`` prints per example for a bank
OUTPUTS = ("sets", "class", "ranking", "scores")


def label_text(value: float) -> str:
    """A label value as the input wrote it: ``3`` rather than ``3.0``.

    >>> label_text(3.0), label_text(-1.0), label_text(2.5)
    ('3', '-1', '2.5')
    """
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def bank_prediction_lines(
    bank: ModelBank, inputs: InputStream, *, output: str = "sets", rejects: RejectLog
) -> Iterator[str]:
    """One line per example line: with ``output`` ``sets`` the labels whose decision value
    is positive (``3,7``, empty when none), ``class`` the multi-class argmax, ``ranking``
    every ``label:score`` by decreasing score, ``scores`` every ``label:score`` by label
    id. A rejected line gives ``nan``."""
    format_row = _formatter(bank, output)
    for rows in _parsed(inputs):
        rejects.add(rows.rejected)
        scores = _scores(bank, rows)
        texts = [format_row(row) for row in scores]
        yield from _in_line_order(rows, texts)


def evaluate_bank(bank: ModelBank, inputs: InputStream, *, rejects: RejectLog) -> dict[str, Any]:
    """Per-label and averaged figures (see :func:`~streamlearn.evaluation.multilabel_scores`)
    over the bank's labels and any label of the input it never learned (scored -inf),
    sorted by value; with exactly one label on every line, also the multi-class accuracy
    and confusion matrix of the argmax."""
    parts = []
    for rows in _parsed(inputs):
        rejects.add(rows.rejected)
        parts.append((rows, _scores(bank, rows)))
    all_rows = ParsedRows.concatenate([rows for rows, _ in parts])
    scores = np.concatenate([s for _, s in parts]) if parts else np.zeros((0, bank.n_labels))
    if all_rows.n_rows == 0:
        return {"examples": 0, "rejected_lines": rejects.total}
    known = bank.labels_.tolist()
    labels = sorted(set(known) | set(all_rows.labels.tolist()))
    column = {value: j for j, value in enumerate(labels)}
    decisions = np.full((all_rows.n_rows, len(labels)), -math.inf)
    decisions[:, [column[v] for v in known]] = scores
    truth = np.zeros(decisions.shape, dtype=bool)
    row_of_label = np.repeat(np.arange(all_rows.n_rows), np.diff(all_rows.label_ptr))
    truth[row_of_label, [column[v] for v in all_rows.labels.tolist()]] = True
    figures: dict[str, Any] = {"rejected_lines": rejects.total}
    figures.update(multilabel_scores(truth, decisions, labels))
    if np.all(np.diff(all_rows.label_ptr) == 1) and known:
        predicted = bank.labels_[np.argmax(scores, axis=1)]
        figures["multiclass"] = multiclass_scores(all_rows.labels, predicted, labels)
    return figures


def describe_bank(bank: ModelBank) -> dict[str, Any]:
    """What ``inspect`` shows of a bank beyond the file's own details."""
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
        "params": bank.base.plain_params(),
        "tau_pos_kappa": bank.tau_pos_kappa,
        "label_values": [label_text(v) for v in bank.labels_.tolist()],
        **summary,
        "per_label": per_label,
    }


def bank_weights(bank: ModelBank) -> npt.NDArray[np.float64]:
    """``coef_`` of every label's learner, one row per label id."""
    out = np.zeros((bank.n_labels, bank.n_features_in_))
    for label, learner in enumerate(bank.learners()):
        out[label] = learner.coef_
    return out


def _formatter(bank: ModelBank, output: str) -> Callable[[npt.NDArray[np.float64]], str]:
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
    raise ValueError(f"unknown output {output!r}")


def _number(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else "nan"


def _scores(bank: ModelBank, rows: ParsedRows) -> npt.NDArray[np.float64]:
    if rows.n_rows == 0:
        return np.zeros((0, bank.n_labels))
    return bank.decision_function((rows.indptr, rows.indices, rows.values))


def _parsed(inputs: InputStream) -> Iterator[ParsedRows]:
    parser = SvmlightParser()
    for chunk in inputs.chunks():
        yield parser.feed(chunk)
    yield parser.finish()


def _in_line_order(rows: ParsedRows, texts: list[str]) -> Iterator[str]:
    rejected_lines = sorted(r.line for r in rows.rejected)
    r = 0
    for line, text in zip(rows.line_numbers.tolist(), texts, strict=True):
        while r < len(rejected_lines) and rejected_lines[r] < line:
            yield "nan"
            r += 1
        yield text
    yield from ("nan" for _ in rejected_lines[r:])
