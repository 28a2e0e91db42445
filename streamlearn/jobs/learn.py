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

from streamlearn.checkpoint.codec import DAEMON_KIND, MODEL_KIND
from streamlearn.checkpoint.store import check_writable, read_checkpoint, write_checkpoint
from streamlearn.config import LearnConfig, ModelSpec, features_holding, resume_conflicts
from streamlearn.errors import InputError, StateError
from streamlearn.jobs.rejects import RejectLog
from streamlearn.learn import LEARNERS, Examples, LearnerTable, Model, model_from_state
from streamlearn.parse import Rejected, SvmlightParser
from streamlearn.sources import InputStream


@dataclass
class LearnReport:
    """What a learn job did: the learner's summary plus the job's own counts."""

    summary: dict[str, Any]
    lines: int
    rejected: RejectLog
    seconds: float
    model_path: str | None

    @property
    def warnings(self) -> list[str]:
        """What a user should know about the result: a model that was not saved, and an
        input that outgrew the replay buffer, certified only for its last examples."""
        summary = self.summary
        said = []
        if self.model_path is None:
            said.append("no --model: the model was not saved")
        evicted = int(summary.get("buffer_evicted", 0))
        if not evicted:
            return said
        held = int(summary.get("buffer_examples", 0))
        forgets = summary.get("forget", "window") == "window"
        unreplayed = int(summary.get("evictions_to_forget", 0))  # --no-converge
        covered = (
            "the model and its certificate are about the last"
            if forgets and not unreplayed
            else "the certificate is about the last"
        )
        kept = "" if forgets else "; the weights still hold the evicted ones (--forget never)"
        if unreplayed:
            kept = f"; the weights still hold {unreplayed} evicted ones the last replay saw"
        return [
            *said,
            f"the input outgrew the replay buffer ({evicted} examples evicted): {covered} "
            f"{held} examples{kept}. Raise --buffer-size and --buffer-nnz to keep more.",
        ]

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
            learner.flush()  # the stream has ended: delta 'auto' settles from what came
            if config.converge:
                learner.replay(max_passes=config.max_passes)
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
    learner, job = load_model(config.resume, config.learner.learners)
    conflicts = resume_conflicts(config.learner, config.one_vs_rest, config.tau_pos_kappa, learner)
    if conflicts:
        raise StateError(f"--resume {config.resume}: " + "; ".join(conflicts))
    return learner, int(job.get("stream_examples", 0))


def _stream(
    learner: Model, batches: Iterator[tuple[Examples, int]], config: LearnConfig, seen: int
) -> tuple[int, int]:
    """Learn batch after batch, replaying where the count-based schedule says until the
    buffer first evicts: the model ``learn`` writes is the last window's, which the final
    replay converges on, and replays of windows that later examples push out only
    perturb its start (30 copies of Adult: 3 s instead of 80)."""
    lines = 0
    schedule = replace(config.replay, after_eviction=False)
    for batch, batch_lines in batches:
        lines = batch_lines
        seen = learner.learn_on_schedule(batch, schedule, seen)
    return seen, lines


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
        learner.learn_rows(batch)
        seen += batch.n_examples
    if lines == 0:
        raise InputError(f"the input is empty ({inputs.name})")
    learner.flush()
    whole_input_buffered = learner.kept_every_example()
    for _ in range(1, config.epochs or 1):
        if whole_input_buffered:
            learner.epoch_pass()
            continue
        again = _batches(inputs.reread(), config, RejectLog(), learner)
        for batch, _ in again:
            learner.learn_rows(batch)
        learner.flush()
    return seen, lines


def _batches(
    chunks: Iterator[bytes], config: LearnConfig, rejects: RejectLog, learner: Model
) -> Iterator[tuple[Examples, int]]:
    """Parsed rows as the model learns them (:meth:`Model.admit`: binary batches, or rows
    with label sets within a bank's bounds) with the number of lines read so far. Each is
    made once the one before it is learned: a bank's bounds count what it has by then."""
    parser = SvmlightParser(max_features=config.max_features)
    limits = config.limits
    for chunk in chunks:
        examples, rejected = learner.admit(parser.feed(chunk), limits)
        rejects.add(rejected)
        yield examples, parser.lines_seen
    examples, rejected = learner.admit(parser.finish(), limits)
    rejects.add(rejected)
    yield examples, parser.lines_seen


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


def load_model(path: str, learners: LearnerTable = LEARNERS) -> tuple[Model, dict[str, Any]]:
    """The learner or bank stored by :func:`save_model` (or in a daemon's checkpoint)
    and the job's counts; ``learners``: the table its algorithm is found in."""
    checkpoint = read_checkpoint(Path(path))
    payload = checkpoint.payload
    if payload.get("kind") not in (MODEL_KIND, DAEMON_KIND) or "learner" not in payload:
        raise StateError(f"{path} is a checkpoint but not a streamlearn model")
    job = payload.get("job", {})
    if not isinstance(job, dict) or not isinstance(job.get("stream_examples", 0), int):
        raise StateError(f"{path}: the job's counts are malformed ({job!r})")
    return model_from_state(payload["learner"], learners), dict(job)
