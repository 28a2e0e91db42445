"""``streamlearn predict``, ``eval`` and ``inspect``: using a saved model."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.checkpoint.store import read_checkpoint
from streamlearn.errors import InvalidParameterError
from streamlearn.evaluation import binary_scores
from streamlearn.jobs.bank_model import (
    OUTPUTS,
    bank_prediction_lines,
    bank_weights,
    describe_bank,
    evaluate_bank,
)
from streamlearn.jobs.learn import Model, load_model
from streamlearn.jobs.rejects import RejectLog
from streamlearn.learn import LinearLearner, ModelBank
from streamlearn.parse import ParsedRows, SvmlightParser, binary_batch
from streamlearn.sources import InputStream


def predict_lines(
    learner: Model,
    inputs: InputStream,
    *,
    labels: bool = False,
    output: str | None = None,
    rejects: RejectLog | None = None,
) -> Iterator[str]:
    """One output line per example line of the input, in order: the decision value
    (or the label +1/-1 with ``labels``); a rejected line gives ``nan`` (or ``0``).

    For a bank, ``output`` chooses among :data:`~streamlearn.jobs.bank_model.OUTPUTS`
    (default ``sets``; ``labels`` means ``class``)."""
    rejects = rejects if rejects is not None else RejectLog()
    if isinstance(learner, ModelBank):
        chosen = output or ("class" if labels else "sets")
        if chosen not in OUTPUTS:
            raise InvalidParameterError(f"--output must be one of {', '.join(OUTPUTS)}")
        yield from bank_prediction_lines(learner, inputs, output=chosen, rejects=rejects)
        return
    if output is not None:
        raise InvalidParameterError("--output is for one-vs-rest models; this one is binary")
    for rows in _parsed(inputs, None):
        rejects.add(rows.rejected)
        decisions = _decisions(learner, rows)
        yield from _in_line_order(rows, decisions, labels)


def evaluate(
    learner: Model, inputs: InputStream, *, rejects: RejectLog | None = None
) -> dict[str, Any]:
    """Binary figures of the model on a labelled input (rejected lines are skipped); for
    a bank, per-label and averaged figures (:func:`~streamlearn.jobs.bank_model.evaluate_bank`)."""
    rejects = rejects if rejects is not None else RejectLog()
    if isinstance(learner, ModelBank):
        return evaluate_bank(learner, inputs, rejects=rejects)
    all_labels: list[npt.NDArray[np.int8]] = []
    all_decisions: list[npt.NDArray[np.float64]] = []
    for rows in _parsed(inputs, None):
        batch, rejected = binary_batch(rows)  # the parser's rejections and bad labels
        rejects.add(rejected)
        all_labels.append(batch.labels)
        all_decisions.append(learner.decision_function(batch_rows(batch)))
    labels = np.concatenate(all_labels) if all_labels else np.zeros(0, dtype=np.int8)
    if labels.shape[0] == 0:
        return {"examples": 0, "rejected_lines": rejects.total}
    scores = binary_scores(labels, np.concatenate(all_decisions))
    scores["rejected_lines"] = rejects.total
    return scores


def describe(path: str) -> dict[str, Any]:
    """What a model file holds: algorithm, parameters, certificate, sizes, provenance."""
    checkpoint = read_checkpoint(Path(path))
    learner, job = load_model(path)
    header = {
        "file": path,
        "bytes": Path(path).stat().st_size,
        "format_version": checkpoint.version,
        "created": datetime.fromtimestamp(checkpoint.created, UTC).isoformat(timespec="seconds"),
        "written_by": checkpoint.writer,
    }
    if isinstance(learner, ModelBank):
        return {**header, "stream_examples": job.get("stream_examples"), **describe_bank(learner)}
    summary = learner.summary()
    return {
        **header,
        "algorithm": learner.algorithm,
        "params": learner.plain_params(),
        "delta": learner.delta_,
        "intercept": learner.intercept_,
        "stream_examples": job.get("stream_examples"),
        **{k: v for k, v in summary.items() if k not in ("algorithm", "delta")},
    }


def export_weights(learner: Model, path: str) -> None:
    """Save ``coef_`` as a .npy file (the intercept is reported by ``inspect``); for a
    bank, one row per label id (the order of ``inspect``'s ``label_values``)."""
    weights = bank_weights(learner) if isinstance(learner, ModelBank) else learner.coef_
    with open(path, "wb") as file:  # np.save on a name would add ".npy" to it
        np.save(file, weights)


def batch_rows(batch: Any) -> tuple[Any, Any, Any]:
    """The (indptr, indices, values) triple of a batch or parsed rows."""
    return (batch.indptr, batch.indices, batch.values)


def _parsed(inputs: InputStream, max_features: int | None) -> Iterator[ParsedRows]:
    parser = SvmlightParser(max_features=max_features)
    for chunk in inputs.chunks():
        yield parser.feed(chunk)
    yield parser.finish()


def _decisions(learner: LinearLearner, rows: ParsedRows) -> npt.NDArray[np.float64]:
    if rows.n_rows == 0:
        return np.zeros(0)
    return learner.decision_function(batch_rows(rows))


def _in_line_order(
    rows: ParsedRows, decisions: npt.NDArray[np.float64], labels: bool
) -> Iterator[str]:
    format_value: Callable[[float], str] = _label_text if labels else _decision_text
    missing = "0" if labels else "nan"
    rejected_lines = sorted(r.line for r in rows.rejected)
    r = 0
    for line, value in zip(rows.line_numbers.tolist(), decisions.tolist(), strict=True):
        while r < len(rejected_lines) and rejected_lines[r] < line:
            yield missing
            r += 1
        yield format_value(value)
    yield from (missing for _ in rejected_lines[r:])


def _decision_text(value: float) -> str:
    return repr(value) if math.isfinite(value) else "nan"


def _label_text(value: float) -> str:
    return "1" if value > 0 else "-1"
