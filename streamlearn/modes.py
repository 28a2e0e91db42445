"""What the serve loop learns: one model, a learning group's member, or keyed models.

The daemon polls, decodes, replays, publishes and checkpoints the same way whatever it
learns; what differs is behind :class:`Mode`: what replay passes go over, what a turn
does besides (a member reads and publishes records, keyed models expire idle keys), what
a partition handed over means, which model answers, what a snapshot says and what a
checkpoint holds beside the daemon's own payload.

>>> from streamlearn.learn import PDM
>>> mode = SingleModel(PDM(delta=1.0))
>>> mode.turned(idle=True), mode.assigned({0, 1}), mode.checkpoint_extra()
(False, None, {})
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sized
from typing import Any, Protocol

from streamlearn.errors import StateError
from streamlearn.group.member import GroupMember
from streamlearn.keyed.models import KeyedModels
from streamlearn.learn import Model
from streamlearn.learn.answers import binary_answers
from streamlearn.learn.description import describe
from streamlearn.learn.model import Rows
from streamlearn.sources.base import Positions, Source

log = logging.getLogger("streamlearn.daemon")


class Replayable(Protocol):
    """What replay passes go over: the model, or a keyed daemon's models in memory."""

    @property
    def buffer(self) -> Sized: ...
    @property
    def converged(self) -> bool: ...
    def replay(
        self, max_passes: int | None = None, interrupt: Callable[[], bool] | None = None
    ) -> object: ...


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


class SingleModel:
    """One model: the daemon's checkpoints hold all of it."""

    hands_over = False

    def __init__(self, learner: Model) -> None:
        self.learner = learner

    @property
    def replayed(self) -> Replayable:
        return self.learner

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


class GroupMode(SingleModel):
    """A learning group's member: the model is the group's (its share on the sync topic,
    its window in the checkpoints when there are any)."""

    hands_over = True

    def __init__(self, learner: Model, member: Callable[[Model], GroupMember]) -> None:
        super().__init__(learner)
        self.make_member = member
        self.member = member(learner)

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
        learner = self.member.learner
        updates = learner.state.updates
        learner.replay(max_passes=max_passes, interrupt=interrupt)
        if learner.state.updates != updates:
            self.member.changed()  # a pass without updates leaves the share as it was

    def finishing(self) -> None:
        self.member.publish_last_word()
        self.member.commit_published()

    def answers(self, features: Rows) -> list[bytes]:
        return binary_answers(self.member.predictor().scores(features))

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
