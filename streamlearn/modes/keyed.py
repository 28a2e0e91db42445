"""One model per message key (see :mod:`streamlearn.keyed`): the records on the state
topic are their checkpoints; :attr:`KeyedMode.learner` only says what a new key's model
is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlearn.errors import InvalidInputError
from streamlearn.http.live import Posted
from streamlearn.keyed.models import KeyedBatch, KeyedModels
from streamlearn.learn import Model
from streamlearn.modes.base import Intake, Outcome, Poll, Replayable
from streamlearn.modes.single import SingleModel
from streamlearn.sources.base import Positions


class KeyedMode(SingleModel):
    """One model per message key: the records on the state topic are their checkpoints;
    :attr:`learner` only says what a new key's model is."""

    hands_over = True

    def __init__(self, learner: Model, keyed: KeyedModels) -> None:
        super().__init__(learner)
        self.keyed = keyed

    @property
    def replayed(self) -> Replayable:
        return self.keyed

    def learn_poll(self, poll: Poll, intake: Intake) -> Outcome:
        """Each key's rows to its model, answered and rejected as one model's are."""
        started = intake.clock()
        messages, decoded = poll.messages, poll.decoded
        keys = [messages.key(i) for i in range(len(messages))]
        batch = KeyedBatch(keys, messages.partitions, messages.offsets, decoded.first_lines(),
                           decoded.labelled, decoded.unlabelled)  # fmt: skip
        applied = self.keyed.apply(batch, intake.limits, intake.schedule)
        rejected = sorted([*decoded.rejected, *applied.rejected], key=lambda item: item.line)
        return Outcome(poll.seen + applied.learned, applied.learned, started,
                       answers=applied.answers, rejected=rejected)  # fmt: skip

    def learn_post(self, posted: Posted, intake: Intake, seen: int) -> Outcome:
        if posted.key is None:
            raise InvalidInputError("this daemon learns one model per key: name it")
        started = intake.clock()
        applied = self.keyed.learn_posted(posted.key, posted.rows, intake.limits)
        return Outcome(seen + applied.learned, applied.learned, started,
                       rejected=applied.rejected)  # fmt: skip

    def assigned(self, partitions: set[int]) -> Positions | None:
        self.keyed.take(partitions)  # their keys' models are found from the next turn on
        return None

    def revoking(self, partitions: set[int], positions: Positions) -> None:
        self.keyed.release(partitions)  # their next owner restores their keys' models

    def turned(self, idle: bool) -> bool:
        return bool(self.keyed.expire_due())

    def replay(self, max_passes: int, interrupt: Callable[[], bool]) -> None:
        self.keyed.replay(max_passes=max_passes, interrupt=interrupt)

    def progressive(self) -> tuple[int, int]:
        return self.keyed.stream_judged, self.keyed.stream_mistakes

    def predictor(self, asked_keys: Callable[[], Any]) -> Any:
        return self.keyed.predictor(asked_keys())

    def snapshot(self, stream_examples: int) -> dict[str, Any]:
        return {**self.keyed.summary(), "stream_examples": stream_examples}

    def description(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return self.keyed.description(snapshot)

    def save(self) -> int | None:
        return self.keyed.save()
