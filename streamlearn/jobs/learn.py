"""``streamlearn learn``: stream examples into a learner, replay, checkpoint.

By default the input is streamed through the count-based replay schedule (after every
``every`` new examples, up to ``passes`` replay passes) and the buffer is replayed to
convergence at the end. With ``epochs`` the input is presented that many times in order,
with no replay schedule and no final convergence.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from streamlearn.checkpoint.store import check_writable, read_checkpoint, write_checkpoint
from streamlearn.config import LearnConfig, ModelSpec, features_holding
from streamlearn.daemon import DAEMON_KIND
from streamlearn.errors import InputError, StateError
from streamlearn.jobs.rejects import RejectLog
from streamlearn.learn import LabelledRows, LinearLearner, ModelBank, model_from_state
from streamlearn.learn.labelsets import apply_bank_budget
from streamlearn.parse import ParsedRows, Rejected, SvmlightParser, binary_batch
from streamlearn.sources import InputStream
from streamlearn.types import Batch

MODEL_KIND = "streamlearn.model"
#: a binary learner or a one-vs-rest bank: what a model file holds
Model = LinearLearner | ModelBank
#: what the parser's rows become: binary batches, or rows with label sets for a bank
Examples = Batch | LabelledRows


@dataclass
class LearnReport:
    """What a learn job did: the learner's summary plus the job's own counts."""

    summary: dict[str, Any]
    lines: int
    rejected: RejectLog
    seconds: float
    model_path: str | None

    def as_dict(self) -> dict[str, Any]:
        """The figures ``streamlearn learn`` prints (``--json`` prints exactly this)."""
        return {
            "examples": self.summary["examples"],
            "rejected_lines": self.rejected.total,
            "rejected_by_reason": dict(self.rejected.counts),
            **{k: v for k, v in self.summary.items() if k != "examples"},
            "seconds": self.seconds,
            "model": self.model_path,
        }


def run_learn(
    config: LearnConfig,
    *,
    stdin: IO[bytes] | None = None,
    on_bytes: Callable[[int], None] | None = None,
    on_reject: Callable[[Rejected], None] | None = None,
) -> LearnReport:
    """Run the job; ``on_bytes`` hears how many input bytes each chunk held (progress)."""
    started = time.perf_counter()
    if config.model is not None:  # found out now, not after learning the whole input
        check_writable(config.model)
    learner, stream_examples = _start(config)
    config = replace(config, max_features=features_holding(learner, config.max_features))
    inputs = InputStream(config.inputs, chunk_size=config.chunk_size, stdin=stdin)
    rejects = RejectLog(strict=config.strict, on_reject=on_reject)
    lines = 0
    try:
        chunks = inputs.chunks(keep_for_rereading=(config.epochs or 1) > 1)
        batches = _batches(_counting(chunks, on_bytes), config, rejects, learner)
        if config.epochs is None:
            stream_examples, lines = _stream(learner, batches, config, stream_examples)
            if lines == 0:
                raise InputError(f"the input is empty ({inputs.name})")
            if config.converge:
                learner.replay(max_passes=config.max_passes)
            else:  # the stream has ended: examples held for the auto-Delta window are learned
                learner.flush()
        else:
            stream_examples, lines = _epochs(learner, batches, inputs, config, stream_examples)
    finally:
        inputs.close()
    if stream_examples == 0 and lines > 0:
        raise InputError(f"no valid example in {lines} lines ({rejects.total} rejected)")
    if config.model is not None:
        save_model(config.model, learner, stream_examples, keep=config.keep)
    seconds = time.perf_counter() - started
    return LearnReport(learner.summary(), lines, rejects, seconds, config.model)


def _start(config: LearnConfig) -> tuple[Model, int]:
    if config.resume is None:
        return ModelSpec(config.learner, config.one_vs_rest, config.tau_pos_kappa).build(), 0
    learner, job = load_model(config.resume)
    if isinstance(learner, ModelBank):
        conflicts = config.learner.conflicts_with(learner.base)
        if config.tau_pos_kappa is not None and config.tau_pos_kappa != learner.tau_pos_kappa:
            conflicts.append(f"--tau-pos-kappa (the checkpoint has {learner.tau_pos_kappa!r})")
    else:
        conflicts = config.learner.conflicts_with(learner)
        if config.one_vs_rest:
            conflicts.append("--one-vs-rest (the checkpoint holds a binary model)")
    if conflicts:
        raise StateError(f"--resume {config.resume}: " + "; ".join(conflicts))
    return learner, int(job.get("stream_examples", 0))


def _stream(
    learner: Model, batches: Iterator[tuple[Examples, int]], config: LearnConfig, seen: int
) -> tuple[int, int]:
    """Learn batch after batch, replaying where the count-based schedule says."""
    lines = 0
    for batch, batch_lines in batches:
        lines = batch_lines
        if isinstance(learner, ModelBank):
            assert isinstance(batch, LabelledRows)
            seen = learner.learn_on_schedule(batch, config.replay, seen)
        else:
            assert isinstance(batch, Batch)
            seen = learner.learn_on_schedule(batch, config.replay, seen)
    return seen, lines


def _learn_once(learner: Model, batch: Examples) -> None:
    if isinstance(learner, ModelBank):
        assert isinstance(batch, LabelledRows)
        learner.learn_rows(batch)
    else:
        assert isinstance(batch, Batch)
        learner.learn_batch(batch)


def _epochs(
    learner: Model,
    batches: Iterator[tuple[Examples, int]],
    inputs: InputStream,
    config: LearnConfig,
    seen: int,
) -> tuple[int, int]:
    """``epochs`` plain passes in input order. Later passes go over the replay buffer when
    it holds the whole input; otherwise the input is read again and its examples arrive
    anew (with fresh slack coordinates)."""
    lines = 0
    for batch, batch_lines in batches:
        lines = batch_lines
        _learn_once(learner, batch)
        seen += batch.n_examples
    if lines == 0:
        raise InputError(f"the input is empty ({inputs.name})")
    learner.flush()
    whole_input_buffered = learner.buffer.evicted == 0 and learner.buffer.unbuffered == 0
    for _ in range(1, config.epochs or 1):
        if whole_input_buffered:
            learner.epoch_pass()
            continue
        again = _batches(inputs.reread(), config, RejectLog(), learner)
        for batch, _ in again:
            _learn_once(learner, batch)
        learner.flush()
    return seen, lines


def _batches(
    chunks: Iterator[bytes], config: LearnConfig, rejects: RejectLog, learner: Model
) -> Iterator[tuple[Examples, int]]:
    """Parsed batches (binary, or with label sets for a bank) with the number of lines
    read so far. Each is made once the one before it is learned: a bank's label bound
    counts the labels it has by then."""
    parser = SvmlightParser(max_features=config.max_features)

    def convert(rows: ParsedRows) -> Examples:
        if isinstance(learner, ModelBank):
            return _labelled(rows, rejects, learner, config)
        return _binary(rows, rejects)

    for chunk in chunks:
        yield convert(parser.feed(chunk)), parser.lines_seen
    yield convert(parser.finish()), parser.lines_seen


def _binary(rows: ParsedRows, rejects: RejectLog) -> Examples:
    batch, rejected = binary_batch(rows)  # the parser's rejections and bad labels
    rejects.add(rejected)
    return batch


def _labelled(
    rows: ParsedRows, rejects: RejectLog, bank: ModelBank, config: LearnConfig
) -> Examples:
    """Rows with their label sets: any numbers, several or none (a negative for every
    label); without the rows that would take ``bank`` past ``--max-labels`` labels or
    ``--max-weights`` weights."""
    labelled, rejected = apply_bank_budget(
        LabelledRows.from_arrays(rows), rows.line_numbers, rows.rejected,
        bank.labels_to_learn(), config.max_labels, n_features=bank.features_to_learn(),
        max_weights=config.max_weights,
    )  # fmt: skip
    rejects.add(rejected)
    return labelled


def _counting(chunks: Iterator[bytes], on_bytes: Callable[[int], None] | None) -> Iterator[bytes]:
    for chunk in chunks:
        if on_bytes is not None:
            on_bytes(len(chunk))
        yield chunk


def save_model(path: str, learner: Model, stream_examples: int, *, keep: int = 1) -> None:
    """Write the learner (or bank) and the job's counts as a checkpoint file (atomically).

    A bank's state goes where a learner's does (``"learner"``); its own ``format``
    field (``streamlearn.bank``) tells them apart when the file is read."""
    payload = {
        "kind": MODEL_KIND,
        "learner": learner.state_dict(),
        "job": {"stream_examples": stream_examples},
    }
    write_checkpoint(Path(path), payload, keep=keep)


def load_model(path: str) -> tuple[Model, dict[str, Any]]:
    """The learner or bank stored by :func:`save_model` (or in a daemon's checkpoint)
    and the job's counts."""
    checkpoint = read_checkpoint(Path(path))
    payload = checkpoint.payload
    if payload.get("kind") not in (MODEL_KIND, DAEMON_KIND) or "learner" not in payload:
        raise StateError(f"{path} is a checkpoint but not a streamlearn model")
    job = payload.get("job", {})
    if not isinstance(job, dict) or not isinstance(job.get("stream_examples", 0), int):
        raise StateError(f"{path}: the job's counts are malformed ({job!r})")
    return model_from_state(payload["learner"]), dict(job)
