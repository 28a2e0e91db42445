"""A learning group's member (see :mod:`streamlearn.group`): the model is the group's,
its share on the sync topic, its window in the checkpoints when there are any."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.group.member import GroupMember
from streamlearn.learn import Examples, Model
from streamlearn.learn.model import Rows
from streamlearn.modes.base import (
    Intake,
    Outcome,
    Poll,
    admitted_lines,
    features,
    owned,
    owners,
)
from streamlearn.modes.single import SingleModel
from streamlearn.sources.base import Positions, Source

log = logging.getLogger("streamlearn.daemon")


class GroupMode(SingleModel):
    """A learning group's member: the model is the group's (its share on the sync topic,
    its window in the checkpoints when there are any)."""

    hands_over = True

    def __init__(self, learner: Model, member: Callable[[Model], GroupMember]) -> None:
        super().__init__(learner)
        self.make_member = member
        self.member = member(learner)

    def learn_poll(self, poll: Poll, intake: Intake) -> Outcome:
        # a bank's max_labels counts the labels the other members brought
        return super().learn_poll(poll, replace(intake, limits=self.member.limits(intake.limits)))

    def learn_admitted(self, poll: Poll, batch: Examples, intake: Intake, done: Outcome) -> None:
        """``batch`` learned in pieces of whole messages, each ending with the message
        where the member's sync policy comes due (every ``--sync-every`` examples,
        :meth:`GroupMember.until_check`). After each piece but the last, the member is
        told what it learned from each partition and where the piece's messages end,
        and may publish: a record holds the share of the examples up to a cut and the
        positions just past their messages, whatever the size of the poll. The last
        piece ends at the poll's positions (the source's after it); the turn after the
        poll decides for it."""
        member = self.member
        messages, decoded = poll.messages, poll.decoded
        started = intake.clock()
        first_lines = decoded.first_lines()
        row_owners = owners(first_lines, admitted_lines(decoded, done.rejected))
        questions = decoded.unlabelled
        asked = np.empty(0, dtype=np.int64)
        if questions is not None:
            asked = owners(first_lines, questions.line_numbers)
        n = batch.n_examples
        row = message = question = 0
        judged = (0, 0)
        while True:
            stop = min(n, row + member.until_check())
            if stop < n:  # to the end of the message of the piece's last row
                stop = int(np.searchsorted(row_owners, row_owners[stop - 1], side="right"))
            last = stop == n
            end = len(messages) if last else int(row_owners[stop - 1]) + 1
            asked_stop = len(asked) if last else int(np.searchsorted(asked, end))
            piece = batch if row == 0 and last else batch.slice(row, stop)
            # the common model changes only between pieces: it answers the piece's
            # questions, and judges its examples, as it stands at the piece's start
            if questions is not None and asked_stop > question and intake.answering:
                asked_now = questions.slice(question, asked_stop)
                done.answers += owned(first_lines, asked_now, self.answers(features(asked_now)))
            judged = self._judged(piece, judged)
            if piece.n_examples:
                done.seen = self.learner.learn_on_schedule(piece, intake.schedule, done.seen)
            counts = _counts(messages.partitions[row_owners[row:stop]])
            if last:
                member.learned(counts, poll.positions)
                break
            member.learned(counts, messages.slice(message, end).end_positions())
            member.sync()
            row, message, question = stop, end, asked_stop
        if n:
            done.learned, done.started, done.judged = n, started, judged

    def _judged(self, batch: Examples, judged: tuple[int, int]) -> tuple[int, int]:
        """``judged`` (examples, mistakes) with ``batch``'s examples judged by the
        common model (a member's progressive accuracy is that of the model it answers
        with, not its learner's): for one model, a mistake where the label it would
        answer (+1 for a positive score, else -1) is not the example's; for a bank,
        where its argmax label is none of the example's."""
        if not batch.n_examples:
            return judged
        mistakes = self.member.mistakes(batch, (batch.indptr, batch.indices, batch.values))
        return judged[0] + batch.n_examples, judged[1] + mistakes

    def restored(self, learner: Model, payload: dict[str, Any], fresh: Callable[[], Model]) -> bool:
        self.learner = learner
        self.member = self.make_member(learner)
        self.member.resume_from(payload.get("group"), fresh)
        return False  # the sync topic says where partitions resume

    def join(self) -> bool:
        member = self.member
        member.join()
        self.learner = member.learner  # a new one, when the checkpoint's is not taken
        log.info("learning group member %s, sync every %d examples (%s)",
                 member.me, member.policy.every, member.policy.mode)  # fmt: skip
        return True

    def assigned(self, partitions: set[int]) -> Positions | None:
        return self.member.take(partitions)

    def revoking(self, partitions: set[int], positions: Positions) -> None:
        self.member.release(partitions, positions)

    def stands_at(self, positions: Positions) -> None:
        self.member.learned({}, positions)

    def turned(self, idle: bool) -> bool:
        return self.member.turn(idle=idle)

    def replay(self, max_passes: int, interrupt: Callable[[], bool]) -> None:
        self.member.replay(max_passes, interrupt)

    def finishing(self) -> None:
        self.member.publish_last_word()
        self.member.commit_published()

    def answers(self, features: Rows) -> list[bytes]:
        return self.member.answers(features)

    def predictor(self, asked_keys: Callable[[], Any]) -> Any:
        return self.member.predictor()  # the common model

    def snapshot(self, stream_examples: int) -> dict[str, Any]:
        snapshot = super().snapshot(stream_examples)
        snapshot["group"] = self.member.summary(
            float(snapshot.get("margin_achieved", math.nan)),
            float(snapshot.get("margin_upper_bound", math.nan)),
        )
        return snapshot

    def description(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        # a member's certificate is its window's; the group's view beside it
        return {**super().description(snapshot), "group": snapshot["group"]}

    def checkpoint_extra(self) -> dict[str, Any] | None:
        state = self.member.checkpoint_state()  # the window and share as its last record
        return None if state is None else {"group": state}

    def commit(self, source: Source, positions: Positions) -> None:
        self.member.commit_published()  # those of the record the checkpoint matches


def _counts(partitions: npt.NDArray[np.int32]) -> dict[int, int]:
    """How many times each partition appears (one per example learned from it)."""
    found, counts = np.unique(partitions, return_counts=True)
    return dict(zip(found.tolist(), counts.tolist(), strict=True))
