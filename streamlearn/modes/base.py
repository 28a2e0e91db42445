"""What every mode is asked, and what the serve loop hands it.

The loop polls, decodes, replays, publishes and checkpoints the same way whatever it
learns; what differs is behind :class:`Mode`: how a poll's examples are learned and its
questions answered (:meth:`Mode.learn_poll`), what replay passes go over, what a turn
does besides (a member reads and publishes records, keyed models expire idle keys), what
a partition handed over means, which model answers, what a snapshot says and what a
checkpoint holds beside the daemon's own payload. A mode learns and computes; the loop
reports, sends and rejects what it returns (:class:`Outcome`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from streamlearn.http.live import Posted
from streamlearn.learn import Model, ModelLimits
from streamlearn.learn.model import Rows
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.replay import ReplaySchedule
from streamlearn.replay.runner import Replayable as Replayable
from streamlearn.sources.base import MessageBatch, Positions, Source
from streamlearn.sources.outputs import owners as owners
from streamlearn.types import Batch

log = logging.getLogger("streamlearn.daemon")

#: per message of a decoded batch, the number of its first line (asked only when needed)
FirstLines = Callable[[], npt.NDArray[np.int64]]
#: decodes a poll's messages: their rows, and the first line of each message
Decoder = Callable[[MessageBatch], tuple[ParsedRows, FirstLines]]
#: an answer to a question, and the message that asked it (its index in the poll)
Answer = tuple[int, bytes]


@dataclass(frozen=True)
class DecodedPoll:
    """A poll's messages decoded: what to predict, what to learn, what was rejected."""

    first_lines: FirstLines
    #: the rows without a label (prediction requests), or None when there are none
    unlabelled: ParsedRows | None
    #: the labelled rows (with the parser's rejections), or None when there are none
    labelled: ParsedRows | None
    #: the parser's rejections (those of ``labelled`` too)
    rejected: list[Rejected]

    @classmethod
    def of(cls, decode: Decoder, messages: MessageBatch) -> DecodedPoll:
        """Decode ``messages`` and sort the rows out (no state is touched: it may run on
        a worker thread)."""
        rows, first_lines = decode(messages)
        labelled = np.diff(rows.label_ptr) > 0
        unlabelled = None if labelled.all() else rows.select(~labelled, [])
        kept = None
        if labelled.any():
            kept = rows if labelled.all() else rows.select(labelled, rows.rejected)
        return cls(first_lines, unlabelled, kept, list(rows.rejected))


@dataclass(frozen=True)
class Poll:
    """A poll to learn: its messages, what they decoded to, the source's positions just
    after them, and the stream examples learned before it."""

    messages: MessageBatch
    decoded: DecodedPoll
    positions: Positions
    seen: int


@dataclass(frozen=True)
class Intake:
    """How the daemon learns: the bounds of what the stream may make a model hold, the
    count-based replay schedule (``every=0``: none, the loop paces replay), whether
    answers go anywhere (a sink), the clock learning is timed with, and the pieces a
    poll is learned in."""

    limits: ModelLimits
    schedule: ReplaySchedule
    answering: bool
    clock: Callable[[], float]
    #: learn a poll's examples in pieces of at most this many and count each piece's
    #: progressive mistakes (:attr:`Outcome.pieces`), for a test that watches the error
    #: within a poll; None: the poll whole
    piece: int | None = None


@dataclass
class Outcome:
    """What a mode did with a poll or a post, for the loop to report and send."""

    #: stream examples learned so far, this poll's included
    seen: int
    #: examples learned, or None when there was no learning to report
    learned: int | None = None
    #: when the learning started (the loop times it)
    started: float = 0.0
    #: (examples, mistakes) of the progressive accuracy when a model other than the
    #: learner judged them (a group's common model); None: the model's own counts
    judged: tuple[int, int] | None = None
    #: answers to the questions, in stream order
    answers: list[Answer] = field(default_factory=list)
    #: the rows refused (by the parser, by admission), by line
    rejected: list[Rejected] = field(default_factory=list)
    #: (examples, mistakes) of the progressive accuracy, piece by piece in stream order,
    #: when the mode learned the poll in pieces (:attr:`Intake.piece`); None: not counted
    #: apart
    pieces: list[tuple[int, int]] | None = None


class Mode(Protocol):
    """What the serve loop asks of what it learns (see the module doc)."""

    #: the model (for keyed models: what a new key's model is)
    learner: Model
    #: whether partitions taken away carry state to their next owner (the daemon then
    #: learns what it polled from them first)
    hands_over: bool

    @property
    def replayed(self) -> Replayable:
        """What replay passes go over."""
        ...

    def learn_poll(self, poll: Poll, intake: Intake) -> Outcome:
        """Learn ``poll``'s labelled examples and answer its questions, each question by
        the model that has learned every example before it in the stream."""
        ...

    def learn_post(self, posted: Posted, intake: Intake, seen: int) -> Outcome:
        """Learn the examples posted to the HTTP API (:class:`InvalidInputError` for a
        post this mode cannot take, :class:`UnknownKeyError` for a key it holds no model
        of)."""
        ...

    def restored(self, learner: Model, payload: dict[str, Any], fresh: Callable[[], Model]) -> bool:
        """The daemon restored ``learner`` from a checkpoint holding ``payload``; whether
        the checkpoint's positions are where partitions resume (:class:`StateError` for
        a checkpoint this mode cannot go on from; ``fresh`` makes a new model)."""
        ...

    def join(self) -> bool:
        """After the restore, before the first poll: take what the mode holds elsewhere
        (a member reads the sync topic); whether the model changed."""
        ...

    def assigned(self, partitions: set[int]) -> Positions | None:
        """Partitions given to this daemon: where to resume those whose position lives
        elsewhere than in the consumer group's offsets (None: the model did not change)."""
        ...

    def revoking(self, partitions: set[int], positions: Positions) -> None:
        """Partitions about to be taken away (``positions``: where the daemon stands)."""
        ...

    def stands_at(self, positions: Positions) -> None:
        """The daemon's positions moved without learning (unreadable records skipped)."""
        ...

    def turned(self, idle: bool) -> bool:
        """A turn of the loop ended (``idle``: caught up, nothing polled); whether the
        model changed meanwhile."""
        ...

    def replay(self, max_passes: int, interrupt: Callable[[], bool]) -> None:
        """A replay slice over :attr:`replayed` (the daemon bounds it by ``interrupt``)."""
        ...

    def finishing(self) -> None:
        """The loop ended; the final checkpoint comes next."""
        ...

    def progressive(self) -> tuple[int, int]:
        """Examples judged before they were learned, and the mistakes among them."""
        ...

    def answers(self, features: Rows) -> list[bytes]:
        """The answers to questions, as the predictions topic takes them."""
        ...

    def predictor(self, asked_keys: Callable[[], Any]) -> Any:
        """A frozen copy of the model that answers the HTTP API (``asked_keys``: the keys
        the API was asked about since the last copy)."""
        ...

    def snapshot(self, stream_examples: int) -> dict[str, Any]:
        """The summary the metrics and ``GET /model`` read."""
        ...

    def description(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        """What ``GET /model`` says, from :meth:`snapshot`."""
        ...

    def checkpoint_extra(self) -> dict[str, Any] | None:
        """What a checkpoint holds beside the daemon's payload (None: no checkpoint may
        be written now)."""
        ...

    def commit(self, source: Source, positions: Positions) -> None:
        """A checkpoint holding ``positions`` is on disk: commit what it allows."""
        ...

    def save(self) -> int | None:
        """Without a checkpoint directory: save what the mode keeps elsewhere (bytes
        written; None: nothing, and no offset is committed)."""
        ...


def owned(
    first_lines: npt.NDArray[np.int64], rows: ParsedRows, answers: list[bytes]
) -> list[Answer]:
    """``answers`` to ``rows``, each with the message that asked it."""
    return list(zip(owners(first_lines, rows.line_numbers).tolist(), answers, strict=True))


def admitted_lines(decoded: DecodedPoll, rejected: list[Rejected]) -> npt.NDArray[np.int64]:
    """Line numbers of the labelled rows the model admitted: all but those its admission
    refused (``rejected``: the poll's rejections, the admission's among them)."""
    assert decoded.labelled is not None
    lines: npt.NDArray[np.int64] = decoded.labelled.line_numbers
    if len(rejected) > len(decoded.rejected):  # admission refused some rows
        lines = lines[~np.isin(lines, [item.line for item in rejected])]
    return lines


def features(rows: ParsedRows | Batch) -> Rows:
    """The features of parsed ``rows`` or of a batch of examples, as models take them."""
    return rows.indptr, rows.indices, rows.values
