"""One model per message key, within a memory bound, the rest on the state topic.

:class:`KeyedModels` is what the daemon holds instead of one model when it learns per
key (``serve --model-key``). For each poll it sorts the rows out by the key of their
message and hands each key's rows to that key's model, in stream order: the labelled
ones are learned, the others answered by the model that has learned every labelled
example of the key before them (:meth:`KeyedModels.apply`). A message without a key has
no model: its lines are rejected (``no key``).

Memory is bounded by a count of models and by their bytes
(:class:`~streamlearn.keyed.registry.ResidentModels`): the least recently used models
leave memory for the state topic (:mod:`~streamlearn.keyed.store`), written only if
they changed since their last record, and come back from it, bit for bit, with their
next message. Each record holds how far the model has come in its partition, so a
message read again (after a restart, or by the next owner of a partition) is not
learned twice. :meth:`KeyedModels.save` writes every changed model; the daemon commits
its offsets only once the broker has them all, so a crash loses nothing either.

>>> import numpy as np
>>> from streamlearn.keyed.store import MemoryStates
>>> from streamlearn.learn import PDM
>>> from streamlearn.parse.svmlight import SvmlightParser
>>> store = MemoryStates()
>>> models = KeyedModels(lambda: PDM(delta=1.0), PDM.from_state, store, max_models=1)
>>> lines = b"+1 1:1\\n-1 1:1\\n1:1\\n1:1\\n"          # a says +1, b says -1 for x1
>>> batch = KeyedBatch.of([b"a", b"b", b"a", b"b"], SvmlightParser().feed(lines))
>>> done = models.apply(batch)
>>> done.learned, [(owner, answer.split()[1]) for owner, answer in done.answers]
(2, [(2, b'1'), (3, b'-1')])
>>> again = models.apply(KeyedBatch.of([b"a"], SvmlightParser().feed(b"1:1\\n"), first=4))
>>> again.answers[0][1].split()[1], len(models.resident), models.spilled, models.restored
(b'1', 1, 2, 1)
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import (
    InvalidParameterError,
    StateError,
    StreamlearnError,
    UndeliveredError,
    UnknownKeyError,
)
from streamlearn.keyed.copies import KeyCopy, KeyedPredictor
from streamlearn.keyed.records import ModelRecord, decode_record, encode_record
from streamlearn.keyed.registry import Resident, ResidentModels
from streamlearn.keyed.rows import KeyGroups, key_ids
from streamlearn.keyed.store import StateStore
from streamlearn.keyed.together import (
    Layout,
    Layouts,
    PollRows,
    learn_together,
    make_room,
    needs_room,
    run_min,
)
from streamlearn.learn import Model, ModelLimits
from streamlearn.learn.description import describe
from streamlearn.learn.params import plain_params
from streamlearn.learn.stream_learner import stream_learner
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.parse.messages import NO_KEY
from streamlearn.replay import ReplaySchedule

log = logging.getLogger("streamlearn.keyed")

#: models held in memory at most, and their bytes, unless told otherwise
DEFAULT_MAX_MODELS = 1000
DEFAULT_MAX_MODEL_BYTES = 1 << 30
#: seconds a write of records may wait for the broker
FLUSH_TIMEOUT = 30.0
#: seconds between two logs of records the broker did not take
WARN_INTERVAL = 60.0
#: learning a batch without replay (the daemon paces replay itself)
NO_REPLAY = ReplaySchedule(every=0)
_NO_OWNERS = np.empty(0, dtype=np.int64)


IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class KeyedBatch:
    """A poll's messages as the keyed models need them: each message's key, partition
    and offset, the first line of each, and its rows (labelled, and questions)."""

    keys: Sequence[bytes | None]
    partitions: npt.NDArray[np.integer[Any]]
    offsets: IntArray
    first_lines: IntArray
    labelled: ParsedRows | None
    questions: ParsedRows | None

    @staticmethod
    def of(
        keys: Sequence[bytes | None], rows: ParsedRows, partition: int = 0, first: int = 0
    ) -> KeyedBatch:
        """One row per message, the messages at offsets ``first``, ``first + 1``... of
        ``partition`` (tests and examples; the rows' lines count from 1)."""
        n = len(keys)
        labelled = np.diff(rows.label_ptr) > 0
        return KeyedBatch(
            keys,
            np.full(n, partition, dtype=np.int32),
            np.arange(first, first + n, dtype=np.int64),
            np.arange(1, n + 1, dtype=np.int64),
            rows.select(labelled, []) if labelled.any() else None,
            rows.select(~labelled, []) if not labelled.all() else None,
        )


@dataclass
class Applied:
    """What :meth:`KeyedModels.apply` did with a batch."""

    #: labelled examples learned
    learned: int = 0
    #: (message, answer) per question, in stream order
    answers: list[tuple[int, bytes]] = field(default_factory=list)
    #: lines without a key, and those the models refused (their labels), by line
    rejected: list[Rejected] = field(default_factory=list)
    #: labelled examples already in their model (read again), not learned again
    skipped: int = 0


@dataclass(frozen=True)
class _Counts:
    """A model's counters, to report what one call changed."""

    update_events: int
    passes: int
    judged: int
    mistakes: int

    @staticmethod
    def of(model: Model) -> _Counts:
        learners = model.learners()
        return _Counts(
            sum(int(learner.state.stats[0]) for learner in learners),
            sum(int(learner.state.passes) for learner in learners),
            model.stream_judged,
            model.stream_mistakes,
        )


class KeyedModels:
    """The models of the keys, in memory and on the state topic (see the module doc).

    ``build`` makes a new key's model, ``restore`` a model from its ``state_dict()``;
    ``store`` holds the records of the models that left memory. ``wall`` stamps the
    records, ``writer`` names the software that wrote them. ``together`` (the default)
    learns the keys of a poll whose models learn a plain stream in one kernel call
    (:mod:`~streamlearn.keyed.together`); False gives every key a turn of its own, with
    the same results.
    """

    def __init__(
        self,
        build: Callable[[], Model],
        restore: Callable[[dict[str, Any]], Model],
        store: StateStore,
        *,
        max_models: int = DEFAULT_MAX_MODELS,
        max_bytes: int = DEFAULT_MAX_MODEL_BYTES,
        flush_timeout: float = FLUSH_TIMEOUT,
        writer: str | None = None,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        key_ttl: float | None = None,
        together: bool = True,
    ) -> None:
        if key_ttl is not None and not (math.isfinite(key_ttl) and key_ttl > 0):
            raise InvalidParameterError(f"--key-ttl must be a duration > 0, got {key_ttl!r}")
        self._build = build
        self._restore = restore
        self.store = store
        self.resident = ResidentModels(max_models, max_bytes)
        self.flush_timeout = flush_timeout
        self.writer = writer
        self.wall = wall
        self.clock = clock
        #: answers the questions of keys that have no model
        self.empty = build()
        #: the partitions whose keys' records the store has read, and those the
        #: consumer group gave this daemon (read at the next turn, not in its callback)
        self._open: set[int] = set()
        self._assigned: set[int] = set()
        self._tick = 0
        self._replayed = 0
        self._written_since_flush = False
        #: copies for the HTTP API: key -> (the model's version when copied, copy)
        self._copies: OrderedDict[bytes, tuple[int, KeyCopy | None]] = OrderedDict()
        self._warned_params = False
        self._warned_at = -math.inf
        self.created = 0
        self.restored = 0
        self.spilled = 0
        #: records of the state topic refused: not a model this daemon can go on with
        self.refused = 0
        self._refused_logged = -float("inf")
        self.skipped = 0
        #: records put but not acknowledged by the broker at the last flush
        self.unwritten = 0
        self.update_events = 0
        self.passes = 0
        self.stream_judged = 0
        self.stream_mistakes = 0
        #: seconds a key's model may go without learning before it is removed (None:
        #: never), the keys removed so far, and when the next look for them is due
        self.key_ttl = key_ttl
        self.expired = 0
        self._next_expiry = -math.inf
        #: whether the keys of a poll are learned together where they can be; the layouts
        #: of their models, the keys waiting for the kernel call of their poll (their
        #: layouts and runs of its rows), and that poll's rows
        self.together = together
        self._layouts = Layouts()
        self._waiting: dict[bytes, tuple[Layout, int]] = {}
        self._poll: PollRows | None = None

    # -- learning and answering ----------------------------------------------------------

    def apply(
        self,
        batch: KeyedBatch,
        limits: ModelLimits | None = None,
        schedule: ReplaySchedule = NO_REPLAY,
    ) -> Applied:
        """Learn each key's labelled rows and answer its questions, in stream order;
        ``schedule`` replays each model after its own examples (its count of them)."""
        self._open_partitions({int(p) for p in np.unique(batch.partitions).tolist()})
        ids, keys = key_ids(batch.keys)
        labelled = self._groups(batch.labelled, batch, ids)
        questions = self._groups(batch.questions, batch, ids)
        done = Applied()
        keyless = np.concatenate([labelled.keyless, questions.keyless]).tolist()
        done.rejected = [Rejected(int(line), NO_KEY, "") for line in keyless]
        ends = _key_ends(ids, batch.partitions, batch.offsets, len(keys))
        answered: list[tuple[int, int, bytes]] = []
        together = self._together(batch, keys, labelled, questions, schedule)
        held = self.resident
        try:
            for key_id, key in enumerate(keys):
                key_ends = ends[key_id]
                last_partition = next(reversed(key_ends))
                chosen = together.get(key_id)
                resident = None
                if chosen is not None:
                    resident = self._wait_together(key, last_partition, chosen, done)
                if resident is None:
                    answered.extend(self._turn(key, key_id, last_partition, labelled, questions,
                                               batch, limits, schedule, done))  # fmt: skip
                    resident = held.peek(key)
                    if resident is None:
                        continue  # no model: the empty model answered its questions
                positions = resident.positions
                for partition, end in key_ends.items():
                    positions[partition] = max(positions.get(partition, 0), end)
                if held.over_bounds():
                    self._spill(held.victims(keep=key))
        finally:  # the keys counted as learned are learned, whatever came after them
            self._learn_waiting()
            self._poll = None
        self.skipped += done.skipped
        self._flush_spills()
        answered.sort()
        done.answers = [(owner, answer) for _, owner, answer in answered]
        done.rejected.sort(key=lambda item: item.line)
        return done

    def _turn(
        self,
        key: bytes,
        key_id: int,
        last_partition: int,
        labelled: KeyGroups,
        questions: KeyGroups,
        batch: KeyedBatch,
        limits: ModelLimits | None,
        schedule: ReplaySchedule,
        done: Applied,
    ) -> list[tuple[int, int, bytes]]:
        """A key's turn of its own: its rows learned and its questions answered."""
        rows, owners = labelled.rows_of(key_id)
        asked, asked_owners = questions.rows_of(key_id)
        resident = self._resident(key, last_partition, create=rows.n_rows > 0)
        if resident is None:  # no model yet, nothing to learn: the empty model answers
            if asked.n_rows:
                answers = self.empty.answers((asked.indptr, asked.indices, asked.values))
                return _lined(asked, asked_owners, answers)
            return []
        new = _unseen(resident, batch.partitions[owners], batch.offsets[owners])
        if not new.all():
            done.skipped += int((~new).sum())
            rows = rows.select(new, [])
        return self._learn(key, resident, rows, asked, asked_owners, limits, schedule, done)

    def _together(
        self,
        batch: KeyedBatch,
        keys: list[bytes],
        labelled: KeyGroups,
        questions: KeyGroups,
        schedule: ReplaySchedule,
    ) -> dict[int, _Candidate]:
        """The keys (their numbers) whose rows this poll may learn together (see
        :mod:`~streamlearn.keyed.together`; :meth:`_wait_together` decides)."""
        self._poll = None
        if not self.together or schedule.enabled or not labelled.runs:
            return {}
        if stream_learner(self.empty) is None:
            return {}  # the models are banks: each key takes its turn
        bounds = np.array(list(labelled.runs.values()), dtype=np.int64).reshape(-1, 2)
        first, last = bounds[:, 0], bounds[:, 1]
        poll = PollRows.admitted(self.empty, labelled.rows, first, last)
        earliest = run_min(batch.offsets[labelled.owners], first, last).tolist()
        figures = zip(labelled.runs, poll.whole.tolist(), (poll.last - poll.first).tolist(),
                      poll.widest.tolist(), earliest, poll.max_sqnorm.tolist(),
                      strict=True)  # fmt: skip
        chosen: dict[int, _Candidate] = {}
        asked = questions.runs
        held = self.resident
        layouts = self._layouts
        for run, (key_id, whole, n, widest, first_offset, peak) in enumerate(figures):
            if not whole or key_id in asked:
                continue
            key = keys[key_id]
            layout = layouts.known(key)  # checked at the key's turn: the model's own?
            if layout is None and not layouts.settled(key):
                resident = held.peek(key)
                layout = None if resident is None else layouts.get(key, resident.model)
            if layout is not None:
                chosen[key_id] = _Candidate(layout, run, n, widest, first_offset, peak)
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

    def _wait_together(
        self, key: bytes, partition: int, candidate: _Candidate, done: Applied
    ) -> Resident | None:
        """``key``'s turn when its rows may be learned together: when they are (its
        model is the one laid out, its rows go together: see ``Layout.takes``, and none
        was read before), its model makes room for them, counts them and waits for the
        kernel call, and is returned. None: the key takes its turn as before."""
        layout, n = candidate.layout, candidate.n
        resident = self.resident.get(key)  # the most recently used now, either way
        if (resident is None or resident.model is not layout.learner
                or self._layouts.known(key) is not layout
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
            remade = self._layouts.grown(key, layout)
            if remade is None:
                return None  # its turn makes no more room: it has what it needs
            layout = remade
            self.resident.measure(key)
        learner.state.examples_seen += n
        window = learner.window
        if window.room:  # the window counts them (the kernel leaves it alone)
            window.max_sqnorm = max(window.max_sqnorm, candidate.peak)
            window.seen += n
        resident.examples += n
        done.learned += n
        self._waiting[key] = (layout, candidate.run)
        resident.dirty = True
        resident.active_at = self.wall()
        self._tick += 1
        resident.version = self._tick
        return resident

    def _learn_waiting(self) -> None:
        """The kernel call of the models waiting for it, and what it counts."""
        if not self._waiting:
            return
        poll = self._poll
        assert poll is not None
        keys = list(self._waiting)
        waiting = list(self._waiting.values())
        self._waiting = {}
        layouts = [layout for layout, _ in waiting]
        runs = np.fromiter((run for _, run in waiting), np.int64, len(waiting))
        learned = learn_together(self._layouts, layouts, runs, poll)
        self.update_events += learned.update_events
        self.stream_judged += learned.judged
        self.stream_mistakes += learned.mistakes
        for position in learned.scaled_down or ():
            self._layouts.forget(keys[position])

    def learn_posted(
        self, key: bytes, rows: ParsedRows, limits: ModelLimits | None = None
    ) -> Applied:
        """Learn the labelled ``rows`` posted for ``key`` (``POST /learn?key=``) into its
        model, which this daemon must hold (in memory, or on the state topic of one of
        its partitions): a key's model starts with its messages, whose partition says
        where the model's record goes. Posted rows have no offsets: none is skipped as
        read before, and the key's positions stay where its messages left them.

        Raises :class:`UnknownKeyError` when this daemon has no model of ``key``.
        """
        self._open_partitions()
        resident = self._known(key)
        if resident is None:
            raise UnknownKeyError(key)
        done = Applied()
        self._learn(key, resident, rows, ParsedRows.empty(), _NO_OWNERS, limits, NO_REPLAY, done)
        self._spill(self.resident.victims(keep=key))
        self._flush_spills()
        return done

    def _known(self, key: bytes) -> Resident | None:
        """The model of ``key`` in memory, or restored from its record at the partition
        its messages last came from; None when this daemon has none."""
        found = self.resident.get(key)
        if found is not None:
            return found
        data = self.store.find(key)
        if data is None:
            return None
        resident = self._restored_or_refused(key, data, None)
        if resident is None:
            return None  # a record refused: the key's next message starts it afresh
        self._spill(self.resident.victims(room=1))
        self.restored += 1
        return self._held(key, resident)

    def _learn(
        self,
        key: bytes,
        resident: Resident,
        rows: ParsedRows,
        asked: ParsedRows,
        asked_owners: IntArray,
        limits: ModelLimits | None,
        schedule: ReplaySchedule,
        done: Applied,
    ) -> list[tuple[int, int, bytes]]:
        """Learn ``rows`` into ``resident``'s model, answering ``asked`` on the way."""
        self._layouts.forget(key)
        model = resident.model
        before = _Counts.of(model)
        examples, refused = model.admit(rows, limits or ModelLimits())
        done.rejected.extend(refused)
        answered: list[tuple[int, int, bytes]] = []
        if asked.n_rows:
            lines = rows.line_numbers
            if refused:
                lines = lines[~np.isin(lines, [item.line for item in refused])]
            resident.examples, answers = model.learn_and_answer(
                examples, (asked.indptr, asked.indices, asked.values),
                np.searchsorted(lines, asked.line_numbers), schedule, resident.examples,
            )  # fmt: skip
            answered = _lined(asked, asked_owners, answers)
        elif examples.n_examples:
            resident.examples = model.learn_on_schedule(examples, schedule, resident.examples)
        if examples.n_examples:
            done.learned += examples.n_examples
            self._changed(key, resident, before)
        return answered

    def _groups(self, rows: ParsedRows | None, batch: KeyedBatch, ids: IntArray) -> KeyGroups:
        if rows is None or rows.n_rows == 0:
            return KeyGroups.none()
        owners = np.searchsorted(batch.first_lines, rows.line_numbers, side="right") - 1
        return KeyGroups.of(rows, ids, owners)

    def _changed(self, key: bytes, resident: Resident, before: _Counts) -> None:
        """``resident``'s model changed: count what it did, measure it again."""
        after = _Counts.of(resident.model)
        self.update_events += after.update_events - before.update_events
        self.passes += after.passes - before.passes
        self.stream_judged += after.judged - before.judged
        self.stream_mistakes += after.mistakes - before.mistakes
        resident.dirty = True
        resident.active_at = self.wall()
        self._tick += 1
        resident.version = self._tick
        self.resident.measure(key)

    # -- memory and the state topic --------------------------------------------------------

    def expire_due(self) -> int:
        """:meth:`expire` when it is due (a look every tenth of ``key_ttl``, once a
        minute at most); the keys removed."""
        if self.key_ttl is None:
            return 0
        now = self.wall()
        if now < self._next_expiry:
            return 0
        self._next_expiry = now + min(self.key_ttl / 10, 60.0)
        return self.expire(now)

    def expire(self, now: float) -> int:
        """Remove the models of the keys that have learned nothing for ``key_ttl``
        seconds before ``now``: from memory, and from the state topic with a tombstone
        (compaction then drops their records; a key that comes again starts a new
        model). A spilled key counts from when its record was written. Returns the
        keys removed."""
        if self.key_ttl is None:
            return 0
        cutoff = now - self.key_ttl
        idle = [(r.partition, key) for key, r in self.resident.items() if r.active_at < cutoff]
        # spilled keys by their records' time (a resident key's record is older than it)
        idle += [(p, key) for p, key in self.store.stale(cutoff) if key not in self.resident]
        for partition, key in idle:
            self._layouts.forget(key)
            self.resident.pop(key)
            self.store.delete(partition, key)
            self._copies.pop(key, None)
        removed = len(idle)
        if removed:
            self.expired += removed
            self._written_since_flush = True
            self._flush_spills()
            log.info("removed the models of %d keys idle for %g s (%d so far)", removed,
                     self.key_ttl, self.expired)  # fmt: skip
        return removed

    def take(self, partitions: set[int]) -> None:
        """The consumer group gives this daemon ``partitions``: their keys' records are
        read at the next :meth:`apply` or :meth:`predictor` (the group's callback must
        not fail on a state topic that cannot be read)."""
        self._assigned |= partitions

    def _open_partitions(self, partitions: Iterable[int] = ()) -> None:
        """Read the records of ``partitions`` and of those the group gave, if not yet."""
        new = (set(partitions) | self._assigned) - self._open
        if new:
            self.store.open(new)
            self._open |= new

    def _resident(self, key: bytes, partition: int, *, create: bool) -> Resident | None:
        """The model of ``key`` in memory: held, restored from its record, or (with
        ``create``) new; None when it has none and ``create`` is false."""
        found = self.resident.get(key)
        if found is not None:
            found.partition = partition
            return found
        data = self.store.find(key)
        if data is None and not create:
            return None
        self._spill(self.resident.victims(room=1))
        resident = None if data is None else self._restored_or_refused(key, data, partition)
        if resident is not None:
            self.restored += 1
        else:
            resident = Resident(self._build(), partition)
            self.created += 1
        return self._held(key, resident)

    def _held(self, key: bytes, resident: Resident) -> Resident:
        """``resident``, just made or restored, held in memory as the model of ``key``."""
        self._tick += 1
        resident.version = self._tick
        resident.active_at = self.wall()
        self.resident.add(key, resident)
        return resident

    def _restored_or_refused(
        self, key: bytes, data: bytes, partition: int | None
    ) -> Resident | None:
        """The model of ``key`` from its record; None when the record is refused (not a
        model this daemon can go on with: damaged, foreign, not finite, too large...):
        counted, logged once a minute, and the key starts a new model. Whoever can write
        to the state topic could otherwise stop the daemon, at every start."""
        try:
            return self._restored(key, data, partition)
        except (StreamlearnError, ValueError, TypeError, KeyError, OverflowError) as exc:
            self.refused += 1
            now = self.wall()
            if now - self._refused_logged >= WARN_INTERVAL:
                self._refused_logged = now
                log.error("refused the state record of key %r (%s): the key starts a new "
                          "model (%d refused so far)", key, exc, self.refused)  # fmt: skip
            return None

    def _restored(self, key: bytes, data: bytes, partition: int | None) -> Resident:
        """The model of ``key`` from its record (:class:`StateError` when it is not one
        this daemon can go on with); its partition ``partition``, or with None the one
        its messages last came from, as the record's positions say."""
        record = decode_record(data, key)
        if partition is None:
            positions = record.positions
            if not positions:
                raise StateError(f"the state record of key {key!r} holds no position")
            partition = max(positions, key=positions.__getitem__)
        model = self._restore(record.state)
        params, ours = model.get_params(), self.empty.get_params()
        held, asked = (bool(p.get("one_vs_rest", False)) for p in (params, ours))
        if held != asked:
            kind = "a one-vs-rest bank" if held else "a binary model"
            raise StateError(f"the state record of key {key!r} holds {kind}")
        if (model.algorithm, params) != (self.empty.algorithm, ours) and not self._warned_params:
            self._warned_params = True
            log.warning("the state topic's models go on with their own algorithm and "
                        "parameters: %s %s (asked %s %s)", model.algorithm, params,
                        self.empty.algorithm, ours)  # fmt: skip
        return Resident(model, partition, dict(record.positions), record.examples)

    def _record(self, key: bytes, resident: Resident) -> bytes:
        record = ModelRecord(key, resident.model.state_dict(), resident.positions,
                             resident.examples)  # fmt: skip
        return encode_record(record, created=self.wall(), writer=self.writer)

    def _write(self, key: bytes, resident: Resident) -> None:
        self.store.put(resident.partition, key, self._record(key, resident))
        resident.dirty = False
        self._written_since_flush = True

    def _spill(self, keys: Iterable[bytes]) -> None:
        """Move the models of ``keys`` out of memory (written if they changed)."""
        keys = list(keys)
        if any(key in self._waiting for key in keys):
            self._learn_waiting()
        for key in keys:
            self._layouts.forget(key)
            resident = self.resident.pop(key)
            if resident is None:
                continue
            if resident.dirty:
                self._write(key, resident)
            copied = self._copies.get(key)
            if copied is not None and copied[0] != resident.version:
                self._copies[key] = (-1, None)  # the record is newer than the copy
            self.spilled += 1

    def _flush_spills(self) -> None:
        """Wait for the records of the models that left memory (failures are kept and
        written again at the next flush)."""
        if not self._written_since_flush and not self.unwritten:
            return
        self._written_since_flush = False
        self.unwritten = self.store.flush(self.flush_timeout)
        if self.unwritten and self.clock() - self._warned_at >= WARN_INTERVAL:
            self._warned_at = self.clock()
            log.error("%d model records not written to the state topic yet (they are kept "
                      "and written again; offsets are not committed meanwhile)",
                      self.unwritten)  # fmt: skip

    def save(self) -> int:
        """Write every model changed since its last record and wait for them all; the
        bytes written. Raises :class:`CheckpointError` when some are not written (they
        are kept, and written again at the next flush)."""
        written = self.store.bytes_written
        for key, resident in self.resident.items():
            if resident.dirty:
                self._write(key, resident)
        self._written_since_flush = False
        self.unwritten = self.store.flush(self.flush_timeout)
        if self.unwritten:
            raise UndeliveredError(
                f"{self.unwritten} model records not written to the state topic within "
                f"{self.flush_timeout:g} s (is the broker reachable?)"
            )
        return self.store.bytes_written - written

    def release(self, partitions: set[int]) -> None:
        """Another daemon takes ``partitions``: write the models of their keys that
        changed, and forget them (their next owner restores them from their records)."""
        leaving = [key for key, resident in self.resident.items()
                   if resident.partition in partitions]  # fmt: skip
        written = 0
        for key in leaving:
            self._layouts.forget(key)
            resident = self.resident.pop(key)
            if resident is not None and resident.dirty:
                self._write(key, resident)
                written += 1
        self._written_since_flush = False
        unwritten = self.store.flush(self.flush_timeout)
        if unwritten:
            log.error("%d model records of partitions %s not written before the partitions "
                      "left: their next owner learns again from the last records written",
                      unwritten, sorted(partitions))  # fmt: skip
        self.store.forget(partitions)
        self._open -= partitions
        self._assigned -= partitions
        self._copies.clear()  # other daemons answer for those keys now
        log.info("keyed models: partitions %s released, their %d models in memory (%d "
                 "written) left to their next owner", sorted(partitions), len(leaving),
                 written)  # fmt: skip

    # -- replay (the daemon paces it; a pass goes over the models in memory) -------------

    @property
    def buffer(self) -> _HeldExamples:
        """The examples the models in memory hold (its length)."""
        return _HeldExamples(self.resident)

    @property
    def converged(self) -> bool:
        """Whether every model in memory has converged."""
        return all(resident.model.converged for _, resident in self.resident.items())

    def replay(
        self, max_passes: int | None = None, interrupt: Callable[[], bool] | None = None
    ) -> KeyedModels:
        """Replay the models in memory that have not converged, in turn (from where the
        last call stopped), until ``interrupt`` says to stop."""
        waiting = [key for key, resident in self.resident.items()
                   if not resident.model.converged]  # fmt: skip
        if not waiting:
            return self
        start = self._replayed % len(waiting)
        for key in waiting[start:] + waiting[:start]:
            if interrupt is not None and interrupt():
                break
            resident = self.resident.peek(key)
            assert resident is not None
            before = _Counts.of(resident.model)
            self._layouts.forget(key)
            resident.model.replay(max_passes=max_passes, interrupt=interrupt)
            self._changed(key, resident, before)
            self._replayed += 1
        return self

    # -- what the daemon reports ---------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Counts over the keys (monotone ones over the run), and the ``keyed`` figures:
        models in memory and on the state topic, their moves, the records written."""
        residents = [resident for _, resident in self.resident.items()]
        store = self.store
        return {
            "algorithm": self.empty.algorithm,
            "update_events": self.update_events,
            "passes": self.passes,
            "converged": all(r.model.converged for r in residents),
            "buffer_examples": sum(len(r.model.buffer) for r in residents),
            "buffer_nnz": sum(
                learner.state.buffer.nnz for r in residents for learner in r.model.learners()
            ),
            "pending_examples": 0,
            "keyed": {
                "resident": len(residents),
                "resident_bytes": self.resident.bytes,
                "max_models": self.resident.max_models,
                "max_bytes": self.resident.max_bytes,
                "stored": store.known(),
                "created": self.created,
                "restored": self.restored,
                "spilled": self.spilled,
                "refused": self.refused,
                "expired": self.expired,
                "skipped_examples": self.skipped,
                "records_written": store.records_written,
                "bytes_written": store.bytes_written,
                "bytes_read": store.bytes_read,
                "unwritten": self.unwritten,
            },
        }

    def description(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        """What ``GET /model`` says without a key: the algorithm, parameters, counts
        and the ``keyed`` figures of a :meth:`summary` ``snapshot``."""
        return {
            "algorithm": self.empty.algorithm,
            "kind": "keyed",
            "params": plain_params(self.empty.get_params()),
            "examples": snapshot.get("stream_examples", 0),
            "update_events": snapshot["update_events"],
            "passes": snapshot["passes"],
            "window_examples": snapshot["buffer_examples"],
            "converged": snapshot["converged"],
            "keyed": snapshot["keyed"],
        }

    def predictor(self, asked: Iterable[bytes] = ()) -> KeyedPredictor:
        """Copies of the models of the keys requests asked for (``asked``: those asked
        since the last call), each copied again only when its model has changed."""
        self._open_partitions()
        limit = self.resident.max_models
        for key in asked:
            if key not in self._copies:
                self._copies[key] = (-1, None)
            self._copies.move_to_end(key)
        while len(self._copies) > limit:
            self._copies.popitem(last=False)
        copies: dict[bytes, KeyCopy | None] = {}
        for key, (version, copy) in list(self._copies.items()):
            resident = self.resident.peek(key)
            if resident is not None and (copy is None or version != resident.version):
                copy = _copy(key, resident.model, resident.examples, in_memory=True)
                self._copies[key] = (resident.version, copy)
            elif resident is None and copy is None:
                copy = self._stored_copy(key)
                self._copies[key] = (0, copy) if copy is not None else (-1, None)
            copies[key] = copy
        return KeyedPredictor(copies)

    def _stored_copy(self, key: bytes) -> KeyCopy | None:
        """A copy of the model of ``key`` from its record, which stays where it is (None:
        no record in this daemon's partitions)."""
        data = self.store.find(key)
        if data is None:
            return None
        try:
            record = decode_record(data, key)
            model = self._restore(record.state)
        except (StreamlearnError, ValueError, TypeError, KeyError, OverflowError):
            return None  # refused when the key's examples come (see _restored_or_refused)
        return _copy(key, model, record.examples, in_memory=False)


@dataclass
class _Candidate:
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


def warm_up(build: Callable[[], Model], restore: Callable[[dict[str, Any]], Model]) -> None:
    """Learn two tiny polls of two keys, so that the kernel of the keys learned together
    is compiled (or loaded) before a daemon's first poll."""
    from streamlearn.keyed.store import MemoryStates
    from streamlearn.parse.svmlight import SvmlightParser

    models = KeyedModels(build, restore, MemoryStates(), max_models=2)
    for first in (0, 2):
        rows = SvmlightParser().feed(b"+1 1:1 2:0.5\n-1 2:1\n")
        models.apply(KeyedBatch.of([b"a", b"b"], rows, first=first))


class _HeldExamples:
    """The examples the models in memory hold, as a length (the daemon's pacing asks)."""

    def __init__(self, resident: ResidentModels) -> None:
        self._resident = resident

    def __len__(self) -> int:
        return sum(len(resident.model.buffer) for _, resident in self._resident.items())


def _unseen(resident: Resident, partitions: npt.NDArray[Any], offsets: IntArray) -> Any:
    """Which messages (their partitions and offsets) the model has not taken yet."""
    new = np.ones(offsets.shape[0], dtype=bool)
    if not offsets.shape[0] or max(resident.positions.values(), default=0) <= offsets.min():
        return new  # the usual case: every message is past what the model has taken
    for partition, end in resident.positions.items():
        new &= ~((partitions == partition) & (offsets < end))
    return new


def _key_ends(
    ids: IntArray, partitions: npt.NDArray[Any], offsets: IntArray, n_keys: int
) -> list[dict[int, int]]:
    """Per key number, the offset after its last message in each partition (the
    partition of its last message last).

    >>> ids, partitions = np.array([0, 1, 0, -1]), np.array([3, 3, 3, 3])
    >>> _key_ends(ids, partitions, np.array([7, 8, 9, 10]), 2)
    [{3: 10}, {3: 9}]
    >>> _key_ends(ids, np.array([3, 3, 4, 4]), np.array([7, 8, 9, 10]), 2)
    [{3: 8, 4: 10}, {3: 9}]
    """
    keyed = ids >= 0
    if partitions.shape[0] and bool((partitions == partitions[0]).all()):
        partition = int(partitions[0])  # a poll of one partition, the usual case
        last = np.zeros(n_keys, dtype=np.int64)
        np.maximum.at(last, ids[keyed], offsets[keyed] + 1)
        return [{partition: end} for end in last.tolist()]
    ends: list[dict[int, int]] = [{} for _ in range(n_keys)]
    for key_id, partition, offset in zip(ids.tolist(), partitions.tolist(), offsets.tolist(),
                                         strict=True):  # fmt: skip
        if key_id >= 0:
            held = ends[key_id]
            end = max(held.pop(partition, 0), offset + 1)
            held[partition] = end  # re-inserted: the partition of the last message last
    return ends


def _lined(
    asked: ParsedRows, owners: IntArray, answers: list[bytes]
) -> list[tuple[int, int, bytes]]:
    """(line, message, answer) of each question."""
    return list(zip(asked.line_numbers.tolist(), owners.tolist(), answers, strict=True))


def _copy(key: bytes, model: Model, examples: int, *, in_memory: bool) -> KeyCopy:
    """A frozen copy of ``model`` and what ``GET /model?key=`` says of it."""
    description = {
        "key": key.decode("utf-8", "replace"),
        **describe(model, model.summary(), examples),
        "in_memory": in_memory,
    }
    return KeyCopy(model.predictor(), description)
