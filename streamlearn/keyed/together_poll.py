"""A poll's keys learned together, as the keyed models go over them: chosen, waiting,
then learned in one kernel call (the kernel's side is :mod:`~streamlearn.keyed.together`).

:meth:`TogetherPoll.choose` names the keys whose rows the poll may learn together;
at each one's turn :meth:`TogetherPoll.wait` checks that its model is still the one laid
out and its rows still go together, counts them as its model's own ``learn_batch``
would, and holds the key for the call; :meth:`TogetherPoll.learn_waiting` makes the call
for every key held (before anything else touches their models, and at the poll's end).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streamlearn.keyed.registry import Resident, ResidentModels
from streamlearn.keyed.rows import KeyGroups
from streamlearn.keyed.together import (
    Layout,
    Layouts,
    Learned,
    PollRows,
    learn_together,
    make_room,
    needs_room,
    run_min,
)
from streamlearn.learn import Model
from streamlearn.learn.stream_learner import stream_learner


@dataclass
class Candidate:
    """A key whose rows a poll may learn together: its model's layout, its run of the
    poll's rows, how many there are and the widest's nonzeros, the offset of its first
    message, the largest squared norm among them, and whether its model must make room
    for them first."""

    layout: Layout
    run: int
    n: int
    widest: int
    first_offset: int
    peak: float
    room: bool = False


class TogetherPoll:
    """The keys of the current poll learned together (see the module doc): ``layouts``
    of the models of ``resident``, whose versions a key's wait stamps at ``wall``."""

    def __init__(
        self, layouts: Layouts, resident: ResidentModels, wall: Callable[[], float]
    ) -> None:
        self.layouts = layouts
        self._resident = resident
        self._wall = wall
        #: the keys waiting for the kernel call (their layouts and runs of the poll's
        #: rows), and the poll's rows
        self._waiting: dict[bytes, tuple[Layout, int]] = {}
        self._poll: PollRows | None = None

    def choose(
        self,
        empty: Model,
        offsets: npt.NDArray[np.int64],
        keys: list[bytes],
        labelled: KeyGroups,
        questions: KeyGroups,
        *,
        enabled: bool,
    ) -> dict[int, Candidate]:
        """The keys (their numbers) whose rows this poll may learn together, when
        ``enabled``: models like ``empty`` that learn a plain stream; ``offsets`` are the
        poll's messages' (:meth:`wait` decides)."""
        self._poll = None
        if not enabled or not labelled.runs:
            return {}
        if stream_learner(empty) is None:
            return {}  # the models are banks: each key takes its turn
        bounds = np.array(list(labelled.runs.values()), dtype=np.int64).reshape(-1, 2)
        first, last = bounds[:, 0], bounds[:, 1]
        poll = PollRows.admitted(empty, labelled.rows, first, last)
        earliest = run_min(offsets[labelled.owners], first, last).tolist()
        figures = zip(labelled.runs, poll.whole.tolist(), (poll.last - poll.first).tolist(),
                      poll.widest.tolist(), earliest, poll.max_sqnorm.tolist(),
                      strict=True)  # fmt: skip
        chosen: dict[int, Candidate] = {}
        asked = questions.runs
        held = self._resident
        layouts = self.layouts
        for run, (key_id, whole, n, widest, first_offset, peak) in enumerate(figures):
            if not whole or key_id in asked:
                continue
            key = keys[key_id]
            layout = layouts.known(key)  # checked at the key's turn: the model's own?
            if layout is None and not layouts.settled(key):
                resident = held.peek(key)
                layout = None if resident is None else layouts.get(key, resident.model)
            if layout is not None:
                chosen[key_id] = Candidate(layout, run, n, widest, first_offset, peak)
        if not chosen:
            return {}
        candidates = list(chosen.values())
        rows = layouts.rows([candidate.layout for candidate in candidates])
        runs = np.fromiter((candidate.run for candidate in candidates), np.int64, len(rows))
        for candidate, grow in zip(candidates, needs_room(layouts, rows, runs, poll),
                                   strict=True):  # fmt: skip
            candidate.room = grow
        self._poll = poll
        return chosen

    def wait(self, key: bytes, partition: int, candidate: Candidate) -> Resident | None:
        """``key``'s turn when its rows may be learned together: when they are (its
        model is the one laid out, its rows go together: see ``Layout.takes``, and none
        was read before), its model makes room for them, counts them and waits for the
        kernel call, and is returned. None: the key takes its turn as before."""
        layout, n = candidate.layout, candidate.n
        resident = self._resident.get(key)  # the most recently used now, either way
        if (resident is None or resident.model is not layout.learner
                or self.layouts.known(key) is not layout
                or not layout.takes(n, candidate.widest)
                or max(resident.positions.values(), default=0) > candidate.first_offset
                ):  # fmt: skip
            return None
        resident.partition = partition
        learner = layout.learner
        if candidate.room:
            poll = self._poll
            assert poll is not None
            make_room(learner, poll, candidate.run)  # as its turn would, first
            remade = self.layouts.grown(key, layout)
            if remade is None:
                return None  # its turn makes no more room: it has what it needs
            layout = remade
            self._resident.measure(key)
        learner.state.examples_seen += n
        window = learner.window
        if window.room:  # the window counts them (the kernel leaves it alone)
            window.max_sqnorm = max(window.max_sqnorm, candidate.peak)
            window.seen += n
        resident.examples += n
        self._waiting[key] = (layout, candidate.run)
        self._resident.stamp(resident, self._wall())
        return resident

    def waits_for(self, keys: Sequence[bytes]) -> bool:
        """Whether a model of ``keys`` waits for the kernel call."""
        return any(key in self._waiting for key in keys)

    def learn_waiting(self, *, last: bool = False) -> Learned | None:
        """The kernel call of the models waiting for it (None: none waits); with
        ``last``, the poll is over."""
        poll = self._poll
        if last:
            self._poll = None
        if not self._waiting:
            return None
        assert poll is not None
        keys = list(self._waiting)
        waiting = list(self._waiting.values())
        self._waiting = {}
        layouts = [layout for layout, _ in waiting]
        runs = np.fromiter((run for _, run in waiting), np.int64, len(waiting))
        learned = learn_together(self.layouts, layouts, runs, poll)
        for position in learned.scaled_down or ():
            self.layouts.forget(keys[position])
        return learned
