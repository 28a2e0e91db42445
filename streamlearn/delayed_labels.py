"""Labels that come after their example: the daemon's side of the examples kept by id.

An example predicted with an id (``POST /predict`` with ``"id"``, or an unlabelled Kafka
message with a key when ``--labels-topic`` is set) waits in a
:class:`~streamlearn.http.pending.SharedPending` store until its label comes, by
``POST /learn`` with ``{"id", "label"}`` or as a message of the labels topic (key: the
id; value: the label, or a bank's labels as svmlight writes them, ``1,3``).
:class:`DelayedLabels` holds what the daemon's loop does with them: keep the keyed
questions of a poll, read the labels topic, find the examples that labels join, score
the predictions made when they were kept, and put the store and the labels topic's
positions into checkpoints. The learning itself is the mode's, as for a posted example.

>>> import time
>>> import numpy as np
>>> from streamlearn.http.pending import SharedPending
>>> from streamlearn.pending import PendingExamples
>>> delayed = DelayedLabels(SharedPending(PendingExamples(max_examples=8, ttl=60.0)))
>>> rows = (np.array([0, 1]), np.array([3], dtype=np.int32), np.array([1.0]))
>>> delayed.pending.add(["a"], rows, np.array([1.0]), now=time.time())
[]
>>> found, refused = delayed.find([(1, "a", [1.0]), (2, "a", [-1.0]), (3, "b", [1.0])])
>>> [one.example_id for one in found], [(item.line, item.reason) for item in refused]
(['a'], [(2, 'already labelled'), (3, 'unknown id')])
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamlearn.errors import StateError
from streamlearn.http.live import Posted
from streamlearn.parse import ParsedRows, Rejected, SvmlightParser
from streamlearn.pending import ALREADY_LABELLED, Joined, is_correct, labelled_rows
from streamlearn.sources.outputs import OutputCounts, owners

if TYPE_CHECKING:
    from streamlearn.http.pending import SharedPending
    from streamlearn.learn import Model
    from streamlearn.modes.base import DecodedPoll, Outcome
    from streamlearn.sources.base import MessageBatch, Positions, Source

log = logging.getLogger("streamlearn.daemon")

#: a label by id: the line (from 1) it came as, the id, and its label(s)
LabelById = tuple[int, str, list[float]]


class DelayedLabels:
    """The examples kept by id and, with ``labels``, the labels topic (see the module
    doc). ``labels`` needs a store: it is read by the daemon's loop between polls."""

    def __init__(self, pending: SharedPending, labels: Source | None = None) -> None:
        self.pending = pending
        #: the labels topic (None: labels come over HTTP only)
        self.labels = labels
        #: where the labels topic's messages learned end, per partition
        self.positions: Positions = {}

    @property
    def changes(self) -> int:
        """A count of the store's changes: a checkpoint is due when it moves."""
        return self.pending.changes

    # -- checkpoints ---------------------------------------------------------------------

    def restore(self, payload: dict[str, Any], path: Path) -> None:
        """Take back the examples a checkpoint kept (none in a checkpoint written before
        they were kept) and where the labels topic was read to."""
        state = payload.get("pending")
        if state is not None:
            try:
                self.pending.restore(state)
            except StateError as exc:
                raise StateError(f"{path}: {exc}") from exc
        if self.labels is not None:
            held = payload.get("labels_positions", {})
            self.positions = {int(p): int(o) for p, o in held.items()}

    def seek(self) -> None:
        """Read the labels topic from where the checkpoint left it."""
        if self.labels is not None:
            self.labels.seek(dict(self.positions))

    def payload(self) -> dict[str, Any]:
        """What a checkpoint holds of them."""
        payload: dict[str, Any] = {"pending": self.pending.state()}
        if self.labels is not None:
            payload["labels_positions"] = {str(p): o for p, o in self.positions.items()}
        return payload

    def commit(self) -> None:
        """Commit the labels topic's positions (after the checkpoint that holds them)."""
        if self.labels is not None:
            self.labels.commit(dict(self.positions))

    def counts(self) -> dict[str, Any]:
        """The store's figures, once what has outlived ``--pending-ttl`` has left it."""
        self.pending.expire(time.time())
        return self.pending.counts()

    # -- the loop ------------------------------------------------------------------------

    def keep_keyed(self, messages: MessageBatch, decoded: DecodedPoll, model: Model) -> None:
        """Keep the poll's unlabelled examples whose message has a key, under their key,
        for a label on the labels topic (the label each names is ``model``'s after the
        poll: the one that answered them when the poll held no labelled example)."""
        questions = decoded.unlabelled
        if self.labels is None or questions is None:
            return
        keys = [messages.key(i) for i in owners(decoded.first_lines(), questions.line_numbers)]
        ids = [None if not key else key.decode("utf-8", "replace") for key in keys]
        if not any(ids):
            return
        rows = (questions.indptr, questions.indices, questions.values)
        predicted = model.predictor().predicted_labels(rows)
        refused = self.pending.add(ids, rows, predicted, time.time(), whole=False)
        if refused:
            log.warning("%d unlabelled messages not kept for a label: their key waits for "
                        "its label or was labelled (e.g. %r)", len(refused),
                        ids[refused[0][0] - 1])  # fmt: skip

    def poll_labels(self, max_messages: int, counts: OutputCounts) -> Posted | None:
        """The labels topic's new messages as a post of labels by id (None: none came);
        those that are not a label with a key are logged and counted as rejected."""
        labels = self.labels
        if labels is None:
            return None
        messages = labels.poll(0.0, max_messages)
        joins, bad = [], 0
        for i in range(len(messages)):
            key = messages.key(i)
            parsed = SvmlightParser().parse_all(messages.value(i).strip() + b"\n")
            if not key or parsed.n_rows != 1 or parsed.indices.shape[0]:
                bad += 1
                continue
            joins.append((i + 1, key.decode("utf-8", "replace"), parsed.labels.tolist()))
        if bad:
            log.warning("%d messages of the labels topic are not a label with a key", bad)
            counts.count_rejected("bad message", bad)
        if len(messages):
            self.positions = labels.position()
        return Posted(ParsedRows.empty(), joins=joins) if joins else None

    def find(self, joins: Sequence[LabelById]) -> tuple[list[Joined], list[Rejected]]:
        """The examples that ``joins`` label, and the labels that found none (unknown,
        expired, evicted, or already labelled: a second label for one id among
        ``joins`` too), each counted by the store."""
        pending, now = self.pending, time.time()
        found, refused, taken = [], [], set()
        for line, example_id, labels in joins:
            if example_id in taken:  # labelled just before, among these labels
                pending.refuse(ALREADY_LABELLED)
                refused.append(Rejected(line, ALREADY_LABELLED, example_id))
                continue
            taken.add(example_id)
            example = pending.find(example_id, now)
            if isinstance(example, str):
                refused.append(Rejected(line, example, example_id))
            else:
                found.append(Joined(line, example_id, labels, example))
        return found, refused

    def learn(
        self, joins: Sequence[LabelById], learn: Callable[[Posted], Outcome]
    ) -> tuple[Outcome | None, list[Rejected]]:
        """Learn the examples that ``joins`` label by ``learn`` (a post of them, as the
        mode learns a post), then :meth:`learned`; what it learned (None: nothing found)
        and the labels that found no example (:meth:`find`)."""
        found, refused = self.find(joins)
        if not found:
            return None, refused
        done = learn(Posted(labelled_rows(found)))
        self.learned(found, done)
        return done, refused

    def learned(self, found: Sequence[Joined], done: Outcome) -> None:
        """``done`` learned the rows of :func:`~streamlearn.pending.labelled_rows` of
        ``found`` (those it refused wait on for a good label): the joined examples leave
        the store, and the progressive figures score the predictions made when they were
        kept, not the model's now."""
        refused_lines = {item.line for item in done.rejected}
        learned = [one for one in found if one.line not in refused_lines]
        wrong = sum(not is_correct(one.example.predicted, one.labels) for one in learned)
        done.judged = (len(learned), wrong)
        for one in learned:
            self.pending.joined(one.example_id)


def warn_if_dropped(payload: dict[str, Any], path: Path) -> None:
    """A checkpoint holds examples waiting for their label, which a daemon that keeps
    none drops at its next checkpoint: say so."""
    if payload.get("pending") is not None:
        log.warning("%s holds examples waiting for their label: without --http-learn or "
                    "--labels-topic they are dropped at the next checkpoint", path)  # fmt: skip
