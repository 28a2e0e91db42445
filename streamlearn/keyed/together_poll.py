"""A poll's keys learned together, as the keyed models go over them: chosen, waiting,
then learned in one kernel call (the kernel's side is :mod:`~streamlearn.keyed.together`).

:meth:`TogetherPoll.choose` names the keys whose rows the poll may learn together;
at each one's turn :meth:`TogetherPoll.wait` checks that its model is still the one laid
out and its rows still go together, counts them as its model's own ``learn_batch``
would, and holds the key for the call; :meth:`TogetherPoll.learn_waiting` makes the call
for every key held (before anything else touches their models, and at the poll's end).
:meth:`TogetherPoll.wait_run` does what :meth:`TogetherPoll.wait` does, for a run of the
keys of a poll of one partition in one loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

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


@dataclass
class Chosen:
    """The keys of a poll whose rows it may learn together, by key number: each one's
    layout (None: not chosen) and the figures of its :class:`Candidate`, as lists (a
    :class:`Candidate` is made only for a key that goes its own way)."""

    layouts: list[Layout | None]
    runs: list[int]
    n: list[int]
    widest: list[int]
    first_offsets: list[int]
    peaks: list[float]
    room: list[bool]

    @staticmethod
    def none() -> Chosen:
        """No key chosen."""
        return Chosen([], [], [], [], [], [], [])

    def any(self) -> bool:
        """Whether a key is chosen (every one but :meth:`none` chooses some)."""
        return bool(self.layouts)

    def get(self, key_id: int) -> Candidate | None:
        """The candidate of key number ``key_id`` (None: not chosen)."""
        layout = self.layouts[key_id] if key_id < len(self.layouts) else None
        if layout is None:
            return None
        return Candidate(layout, self.runs[key_id], self.n[key_id], self.widest[key_id],
                         self.first_offsets[key_id], self.peaks[key_id],
                         self.room[key_id])  # fmt: skip


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
    ) -> Chosen:
        """The keys (their numbers) whose rows this poll may learn together, when
        ``enabled``: models like ``empty`` that learn a plain stream; ``offsets`` are the
        poll's messages' (:meth:`wait` decides)."""
        self._poll = None
        if not enabled or not labelled.runs:
            return Chosen.none()
        if stream_learner(empty) is None:
            return Chosen.none()  # the models are banks: each key takes its turn
        first, last = labelled.run_first, labelled.run_last
        poll = PollRows.admitted(empty, labelled.rows, first, last)
        earliest = run_min(offsets[labelled.owners], first, last)
        asked = np.zeros(len(keys), dtype=bool)
        asked[questions.run_keys] = True
        runs = np.flatnonzero(poll.whole & ~asked[labelled.run_keys])
        ids = labelled.run_keys[runs].tolist()
        if not ids:
            return Chosen.none()
        layouts = self.layouts
        found = list(map(layouts.lookup(), map(keys.__getitem__, ids)))
        if None in found:  # models not laid out yet, or that do not go together
            self._lay_out(keys, ids, found)
            going = [position for position, layout in enumerate(found) if layout is not None]
            if not going:
                return Chosen.none()
            runs = runs[going]
            found = [found[position] for position in going]
        chosen_layouts = cast(list[Layout], found)  # every one found
        chosen_ids = labelled.run_keys[runs]
        by_id: list[Layout | None] = [None] * len(keys)
        for key_id, layout in zip(chosen_ids.tolist(), chosen_layouts, strict=True):
            by_id[key_id] = layout
        rows = layouts.rows(chosen_layouts)
        room = np.zeros(len(keys), dtype=bool)
        room[chosen_ids] = needs_room(layouts, rows, runs, poll)

        def spread(values: npt.NDArray[Any]) -> list[Any]:
            out = np.zeros(len(keys), dtype=values.dtype)
            out[chosen_ids] = values[runs]
            result: list[Any] = out.tolist()
            return result

        all_runs = np.arange(first.shape[0], dtype=np.int64)
        self._poll = poll
        return Chosen(by_id, spread(all_runs), spread(poll.last - poll.first),
                      spread(poll.widest), spread(earliest), spread(poll.max_sqnorm),
                      room.tolist())  # fmt: skip

    def _lay_out(self, keys: list[bytes], ids: list[int], found: list[Layout | None]) -> None:
        """Lay out, in ``found``, the models of keys ``ids`` that have no layout and were
        not looked at yet (whether each is still the key's own is checked at its turn)."""
        layouts = self.layouts
        held = self._resident
        for position, layout in enumerate(found):
            if layout is None:
                key = keys[ids[position]]
                if not layouts.settled(key):
                    resident = held.peek(key)
                    if resident is not None:
                        found[position] = layouts.get(key, resident.model)

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

    def wait_run(
        self, chosen: Chosen, keys: list[bytes], start: int, partition: int, ends: list[int]
    ) -> tuple[int, int]:
        """:meth:`wait` of keys ``start``, ``start + 1``... in turn, each model's
        position in ``partition`` then taken up to ``ends[key number]``, as long as each
        key is chosen, goes together with the room its model has, and the models stay
        within their bounds (the last key taken may leave them over: the caller spills).
        The number of the first key not taken, and the examples counted.

        One loop for the keys of a poll of one partition, the usual case, with what
        :meth:`wait` does for each written out (no :class:`Candidate` made, no method
        called per key); a key it stops at takes :meth:`wait`, or its turn."""
        held = self._resident
        models_get, move = held.lru_access()
        known = self.layouts.lookup()
        waiting = self._waiting
        wall = self._wall
        layouts, runs, counts, widest = chosen.layouts, chosen.runs, chosen.n, chosen.widest
        first_offsets, peaks, room = chosen.first_offsets, chosen.peaks, chosen.room
        # nothing below adds, removes or measures a model: over the bounds now, the
        # first key taken is the last (the caller spills, as after each key's turn)
        over = held.over_bounds()
        tick = held.tick
        learned = 0
        key_id = start
        stop = len(layouts)
        while key_id < stop:
            layout = layouts[key_id]
            if layout is None or room[key_id]:
                break
            key = keys[key_id]
            resident = models_get(key)
            learner = layout.learner
            if resident is None or resident.model is not learner or known(key) is not layout:
                break
            n = counts[key_id]
            window = learner.window
            if widest[key_id] > layout.max_nnz or window.pending:
                break
            left = window.size - window.seen
            if left and not (window.seen > 0 and left > n):
                break
            positions = resident.positions
            if max(positions.values(), default=0) > first_offsets[key_id]:
                break
            move(key)
            resident.partition = partition
            learner.state.examples_seen += n
            if left:  # the window counts them (the kernel leaves it alone)
                if peaks[key_id] > window.max_sqnorm:
                    window.max_sqnorm = peaks[key_id]
                window.seen += n
            resident.examples += n
            waiting[key] = (layout, runs[key_id])
            tick += 1
            resident.version = tick
            resident.active_at = wall()
            resident.dirty = True
            held.tick = tick
            learned += n
            positions[partition] = max(positions.get(partition, 0), ends[key_id])
            key_id += 1
            if over:
                break
        return key_id, learned

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
        waiting = self._waiting
        self._waiting = {}
        layouts, runs = zip(*waiting.values(), strict=True)
        learned = learn_together(self.layouts, layouts, np.array(runs, dtype=np.int64), poll)
        if learned.scaled_down:
            keys = list(waiting)
            for position in learned.scaled_down:
                self.layouts.forget(keys[position])
        return learned
