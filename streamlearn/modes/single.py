"""One model: the daemon's checkpoints hold all of it.

>>> from streamlearn.learn import PDM
>>> mode = SingleModel(PDM(delta=1.0))
>>> mode.turned(idle=True), mode.assigned({0, 1}), mode.checkpoint_extra()
(False, None, {})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from streamlearn.errors import InvalidInputError, StateError
from streamlearn.http.live import Posted
from streamlearn.learn import Examples, Model
from streamlearn.learn.description import describe
from streamlearn.learn.model import Rows
from streamlearn.modes.base import (
    Intake,
    Outcome,
    Poll,
    Replayable,
    admitted_lines,
    features,
    owned,
)
from streamlearn.sources.base import Positions, Source


class SingleModel:
    """One model: the daemon's checkpoints hold all of it."""

    hands_over = False

    def __init__(self, learner: Model) -> None:
        self.learner = learner

    @property
    def replayed(self) -> Replayable:
        return self.learner

    # -- learning --------------------------------------------------------------------------

    def learn_poll(self, poll: Poll, intake: Intake) -> Outcome:
        decoded = poll.decoded
        done = Outcome(poll.seen, rejected=decoded.rejected)
        if decoded.labelled is None:
            questions = decoded.unlabelled
            if questions is not None and intake.answering:
                answers = self.answers(features(questions))
                done.answers = owned(decoded.first_lines(), questions, answers)
            return done
        # admitted here, not when decoded ahead: the model as this poll finds it
        batch, done.rejected = self.learner.admit(decoded.labelled, intake.limits)
        self.learn_admitted(poll, batch, intake, done)
        return done

    def learn_admitted(self, poll: Poll, batch: Examples, intake: Intake, done: Outcome) -> None:
        """Learn ``batch``, the poll's admitted examples, and answer the poll's questions,
        each after the examples before it in the stream."""
        decoded = poll.decoded
        questions = decoded.unlabelled
        if questions is None:
            self._learn(batch, intake, done)
            return
        done.started = intake.clock()
        done.learned = batch.n_examples
        if not intake.answering:  # counted, answered nowhere
            if batch.n_examples:
                done.seen = self.learner.learn_on_schedule(batch, intake.schedule, done.seen)
            return
        before = np.searchsorted(admitted_lines(decoded, done.rejected), questions.line_numbers)
        done.seen, answers = self.learner.learn_and_answer(
            batch, features(questions), before, intake.schedule, done.seen
        )
        done.answers = owned(decoded.first_lines(), questions, answers)

    def learn_post(self, posted: Posted, intake: Intake, seen: int) -> Outcome:
        if posted.key is not None:
            raise InvalidInputError("this daemon learns one model: drop the key")
        batch, rejected = self.learner.admit(posted.rows, intake.limits)
        done = Outcome(seen, rejected=rejected)
        self._learn(batch, intake, done)
        return done

    def _learn(self, batch: Examples, intake: Intake, done: Outcome) -> None:
        """Learn ``batch`` (with no question among it), in pieces when ``intake`` asks:
        the same model as the batch whole, every replay schedule counting examples."""
        n = batch.n_examples
        if n == 0:
            return
        done.started = intake.clock()
        piece = intake.piece
        if piece is None or piece >= n:
            done.seen = self.learner.learn_on_schedule(batch, intake.schedule, done.seen)
        else:
            done.pieces = []
            for start in range(0, n, piece):
                judged, mistakes = self.progressive()
                part = batch.slice(start, min(n, start + piece))
                done.seen = self.learner.learn_on_schedule(part, intake.schedule, done.seen)
                now_judged, now_mistakes = self.progressive()
                done.pieces.append((now_judged - judged, now_mistakes - mistakes))
        done.learned = n

    # -- the rest of the loop ---------------------------------------------------------------

    def restored(self, learner: Model, payload: dict[str, Any], fresh: Callable[[], Model]) -> bool:
        if "group" in payload:
            # its model holds the other members' shares, which only a member can take out
            raise StateError(
                "it is a learning group member's checkpoint: start serve with its "
                "--sync-topic and --member-id, or with another --checkpoint-dir"
            )
        self.learner = learner
        return True

    def join(self) -> bool:
        return False

    def assigned(self, partitions: set[int]) -> Positions | None:
        return None

    def revoking(self, partitions: set[int], positions: Positions) -> None:
        return None

    def stands_at(self, positions: Positions) -> None:
        return None

    def turned(self, idle: bool) -> bool:
        return False

    def replay(self, max_passes: int, interrupt: Callable[[], bool]) -> None:
        self.learner.replay(max_passes=max_passes, interrupt=interrupt)

    def finishing(self) -> None:
        return None

    def progressive(self) -> tuple[int, int]:
        return self.learner.stream_judged, self.learner.stream_mistakes

    def answers(self, features: Rows) -> list[bytes]:
        return self.learner.answers(features)

    def predictor(self, asked_keys: Callable[[], Any]) -> Any:
        return self.learner.predictor()

    def snapshot(self, stream_examples: int) -> dict[str, Any]:
        return {**self.learner.summary(), "stream_examples": stream_examples}

    def description(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return describe(self.learner, snapshot, snapshot["stream_examples"])

    def checkpoint_extra(self) -> dict[str, Any] | None:
        return {}

    def commit(self, source: Source, positions: Positions) -> None:
        # only positions a checkpoint on disk holds: without checkpoints, none (a restart
        # in the same consumer group would otherwise skip what a lost model learned)
        source.commit(dict(positions))

    def save(self) -> int | None:
        return None
