"""``streamlearn predict``, ``eval`` and ``inspect``: using a saved model (a binary learner
or a one-vs-rest bank: the model says how its answers are written)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from streamlearn.checkpoint.store import read_checkpoint
from streamlearn.errors import InvalidParameterError
from streamlearn.jobs.learn import load_model
from streamlearn.jobs.rejects import RejectLog
from streamlearn.learn import LEARNERS, LabelledRows, LearnerTable, Model
from streamlearn.learn.bank_answers import label_text
from streamlearn.parse import ParsedRows, SvmlightParser
from streamlearn.sources import InputStream


def predict_lines(
    learner: Model,
    inputs: InputStream,
    *,
    labels: bool = False,
    output: str | None = None,
    rejects: RejectLog | None = None,
) -> Iterator[str]:
    """One output line per example line of the input, in order, as ``output`` writes it
    (one of the model's ``outputs``; default the first: decision values for a binary
    model, label sets for a bank; ``labels`` asks for the model's ``label_output``: +1/-1,
    or a bank's class). A rejected line gives the output's missing value."""
    rejects = rejects if rejects is not None else RejectLog()
    chosen = output or (learner.label_output if labels else learner.outputs[0])
    if chosen not in learner.outputs:
        raise InvalidParameterError(
            f"--output must be one of {', '.join(learner.outputs)} for this model"
        )
    for rows in _parsed(inputs):
        rejects.add(rows.rejected)
        yield from learner.prediction_lines(rows, chosen)


def evaluate(
    learner: Model, inputs: InputStream, *, rejects: RejectLog | None = None
) -> dict[str, Any]:
    """The model's figures on a labelled input (rejected lines are skipped and counted):
    binary figures for a binary model, per-label and averaged ones for a bank."""
    rejects = rejects if rejects is not None else RejectLog()
    figures = learner.evaluate(_parsed(inputs), rejects.add)
    return {**figures, "rejected_lines": rejects.total}


def describe(path: str, learners: LearnerTable = LEARNERS) -> dict[str, Any]:
    """What a model file holds: algorithm, parameters, certificate, sizes, provenance."""
    checkpoint = read_checkpoint(Path(path))
    learner, job = load_model(path, learners)
    details = learner.describe()
    header = {
        "file": path,
        "bytes": Path(path).stat().st_size,
        "format_version": checkpoint.version,
        "created": datetime.fromtimestamp(checkpoint.created, UTC).isoformat(timespec="seconds"),
        "written_by": checkpoint.writer,
        "algorithm": details.pop("algorithm"),
        "params": details.pop("params"),
    }
    return {**header, "stream_examples": job.get("stream_examples"), **details}


def export_weights(learner: Model, path: str) -> None:
    """Save the model's weights as a .npy file: ``coef_`` (the intercept is reported by
    ``inspect``), or for a bank one row per label id (the order of ``inspect``'s
    ``label_values``)."""
    with open(path, "wb") as file:  # np.save on a name would add ".npy" to it
        np.save(file, learner.exported_weights())


def export_buffer(learner: Model, path: str) -> int:
    """Write the examples of the model's replay buffer, oldest first, as svmlight lines
    (1-based indices, each value's shortest exact repr; a bank's label sets as ``3,7``):
    the window its certificate is about, for an independent solver to check. Returns how
    many examples were written."""
    rows = learner.buffer_rows()
    with open(path, "w", encoding="utf-8") as file:
        for line in svmlight_lines(rows):
            file.write(line + "\n")
    return rows.n_examples


def svmlight_lines(rows: LabelledRows) -> Iterator[str]:
    """One svmlight line per row (labels as the input wrote them, ``3`` not ``3.0``).

    >>> rows = LabelledRows(np.array([0, 2]), np.array([0, 4], dtype=np.int32),
    ...                     np.array([0.5, 2.0]), np.array([0, 1]), np.array([-1.0]))
    >>> list(svmlight_lines(rows))
    ['-1 1:0.5 5:2.0']
    """
    for i in range(rows.n_examples):
        labels = ",".join(label_text(v) for v in rows.label_set(i).tolist())
        lo, hi = int(rows.indptr[i]), int(rows.indptr[i + 1])
        features = " ".join(
            f"{j + 1}:{v!r}"
            for j, v in zip(rows.indices[lo:hi].tolist(), rows.values[lo:hi].tolist(), strict=True)
        )
        yield " ".join(part for part in (labels, features) if part)


def _parsed(inputs: InputStream) -> Iterator[ParsedRows]:
    parser = SvmlightParser()
    for chunk in inputs.chunks():
        yield parser.feed(chunk)
    yield parser.finish()
