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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidParameterError, UnknownKeyError
from streamlearn.keyed import reports
from streamlearn.keyed.copies import Copies, KeyedPredictor
from streamlearn.keyed.registry import Resident, ResidentModels
from streamlearn.keyed.rows import KeyGroups, key_ids
from streamlearn.keyed.state_records import FLUSH_TIMEOUT, StateRecords
from streamlearn.keyed.store import StateStore
from streamlearn.keyed.together import Layouts
from streamlearn.keyed.together_poll import TogetherPoll
from streamlearn.learn import Model, ModelLimits
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.parse.messages import NO_KEY
from streamlearn.replay import ReplaySchedule

log = logging.getLogger("streamlearn.keyed")

#: models held in memory at most, and their bytes, unless told otherwise
DEFAULT_MAX_MODELS = 1000
DEFAULT_MAX_MODEL_BYTES = 1 << 30
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
        self.store = store
        self.resident = ResidentModels(max_models, max_bytes)
        self.wall = wall
        #: answers the questions of keys that have no model
        self.empty = build()
        #: the models' records on the state topic, and the copies for the HTTP API
        self.records = StateRecords(store, restore, self.empty, flush_timeout=flush_timeout,
                                    writer=writer, wall=wall, clock=clock)  # fmt: skip
        self._copies = Copies(self.resident, self.records)
        self._replayed = 0
        self.created = 0
        self.restored = 0
        self.spilled = 0
        self.skipped = 0
        self.update_events = 0
        self.passes = 0
        self.stream_judged = 0
        self.stream_mistakes = 0
        #: seconds a key's model may go without learning before it is removed (None:
        #: never), the keys removed so far, and when the next look for them is due
        self.key_ttl = key_ttl
        self.expired = 0
        self._next_expiry = -math.inf
        #: whether the keys of a poll are learned together where they can be, the
        #: layouts of their models, and the poll's keys learned together
        self.together = together
        self._layouts = Layouts()
        self._poll_together = TogetherPoll(self._layouts, self.resident, wall)

    @property
    def refused(self) -> int:
        """Records of the state topic refused: not a model this daemon can go on with."""
        return self.records.refused

    @property
    def unwritten(self) -> int:
        """Records put but not acknowledged by the broker at the last flush."""
        return self.records.unwritten

    # -- learning and answering ----------------------------------------------------------

    def apply(
        self,
        batch: KeyedBatch,
        limits: ModelLimits | None = None,
        schedule: ReplaySchedule = NO_REPLAY,
    ) -> Applied:
        """Learn each key's labelled rows and answer its questions, in stream order;
        ``schedule`` replays each model after its own examples (its count of them)."""
        self.records.open({int(p) for p in np.unique(batch.partitions).tolist()})
        ids, keys = key_ids(batch.keys)
        labelled = self._groups(batch.labelled, batch, ids)
        questions = self._groups(batch.questions, batch, ids)
        done = Applied()
        keyless = np.concatenate([labelled.keyless, questions.keyless]).tolist()
        done.rejected = [Rejected(int(line), NO_KEY, "") for line in keyless]
        one = _one_partition(batch.partitions)
        ends: list[dict[int, int]] = []
        last: list[int] = []
        if one is None:
            ends = _key_ends(ids, batch.partitions, batch.offsets, len(keys))
        else:  # a poll of one partition, the usual case: no dict made per key
            last = _last_offsets(ids, batch.offsets, len(keys))
        answered: list[tuple[int, int, bytes]] = []
        poll = self._poll_together
        together = poll.choose(
            self.empty, batch.offsets, keys, labelled, questions,
            enabled=self.together and not schedule.enabled,
        )  # fmt: skip
        held = self.resident
        key_id, n_keys = 0, len(keys)
        # keys chosen in a poll of one partition are taken in runs, most of them in one
        in_runs = one if together.any() else None
        try:
            while key_id < n_keys:
                if in_runs is not None:
                    taken, learned = poll.wait_run(together, keys, key_id, in_runs, last)
                    if taken > key_id:
                        done.learned += learned
                        key_id = taken
                        if held.over_bounds():
                            self._spill(held.victims(keep=keys[taken - 1]))
                        continue
                key = keys[key_id]
                key_ends = ends[key_id] if one is None else {one: last[key_id]}
                last_partition = next(reversed(key_ends))
                chosen = together.get(key_id)
                resident = None
                if chosen is not None:
                    resident = poll.wait(key, last_partition, chosen)
                    if resident is not None:
                        done.learned += chosen.n
                if resident is None:
                    answered.extend(self._turn(key, key_id, last_partition, labelled, questions,
                                               batch, limits, schedule, done))  # fmt: skip
                    resident = held.peek(key)
                if resident is not None:
                    positions = resident.positions
                    for partition, end in key_ends.items():
                        positions[partition] = max(positions.get(partition, 0), end)
                    if held.over_bounds():
                        self._spill(held.victims(keep=key))
                key_id += 1
        finally:  # the keys counted as learned are learned, whatever came after them
            self._learn_waiting(last=True)
        self.skipped += done.skipped
        self.records.flush()
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

    def _learn_waiting(self, *, last: bool = False) -> None:
        """The kernel call of the models waiting for it, and what it counts; with
        ``last``, the poll is over."""
        learned = self._poll_together.learn_waiting(last=last)
        if learned is not None:
            self.update_events += learned.update_events
            self.stream_judged += learned.judged
            self.stream_mistakes += learned.mistakes

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
        self.records.open()
        resident = self._known(key)
        if resident is None:
            raise UnknownKeyError(key)
        done = Applied()
        self._learn(key, resident, rows, ParsedRows.empty(), _NO_OWNERS, limits, NO_REPLAY, done)
        self._spill(self.resident.victims(keep=key))
        self.records.flush()
        return done

    def _known(self, key: bytes) -> Resident | None:
        """The model of ``key`` in memory, or restored from its record at the partition
        its messages last came from; None when this daemon has none."""
        found = self.resident.get(key)
        if found is not None:
            return found
        data = self.records.find(key)
        if data is None:
            return None
        resident = self.records.restored(key, data, None)
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
        self.resident.stamp(resident, self.wall())
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
            self.records.delete(partition, key)
            self._copies.forget(key)
        removed = len(idle)
        if removed:
            self.expired += removed
            self.records.flush()
            log.info("removed the models of %d keys idle for %g s (%d so far)", removed,
                     self.key_ttl, self.expired)  # fmt: skip
        return removed

    def take(self, partitions: set[int]) -> None:
        """The consumer group gives this daemon ``partitions``: their keys' records are
        read at the next :meth:`apply` or :meth:`predictor` (the group's callback must
        not fail on a state topic that cannot be read)."""
        self.records.take(partitions)

    def _resident(self, key: bytes, partition: int, *, create: bool) -> Resident | None:
        """The model of ``key`` in memory: held, restored from its record, or (with
        ``create``) new; None when it has none and ``create`` is false."""
        found = self.resident.get(key)
        if found is not None:
            found.partition = partition
            return found
        data = self.records.find(key)
        if data is None and not create:
            return None
        self._spill(self.resident.victims(room=1))
        resident = None if data is None else self.records.restored(key, data, partition)
        if resident is not None:
            self.restored += 1
        else:
            resident = Resident(self._build(), partition)
            self.created += 1
        return self._held(key, resident)

    def _held(self, key: bytes, resident: Resident) -> Resident:
        """``resident``, just made or restored, held in memory as the model of ``key``."""
        self.resident.stamp(resident, self.wall(), changed=False)
        self.resident.add(key, resident)
        return resident

    def _spill(self, keys: Iterable[bytes]) -> None:
        """Move the models of ``keys`` out of memory (written if they changed)."""
        keys = list(keys)
        if self._poll_together.waits_for(keys):
            self._learn_waiting()
        for key in keys:
            self._layouts.forget(key)
            resident = self.resident.pop(key)
            if resident is None:
                continue
            if resident.dirty:
                self.records.write(key, resident)
            self._copies.spilled(key, resident.version)
            self.spilled += 1

    def save(self) -> int:
        """Write every model changed since its last record and wait for them all; the
        bytes written. Raises :class:`CheckpointError` when some are not written (they
        are kept, and written again at the next flush)."""
        written = self.store.bytes_written
        for key, resident in self.resident.items():
            if resident.dirty:
                self.records.write(key, resident)
        self.records.flush_all()
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
                self.records.write(key, resident)
                written += 1
        self.records.release(partitions)
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

    # -- what the daemon reports and answers with ----------------------------------------

    def summary(self) -> dict[str, Any]:
        """Counts over the keys (monotone ones over the run), and the ``keyed`` figures
        (:func:`~streamlearn.keyed.reports.summary`)."""
        return reports.summary(self)

    def description(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        """What ``GET /model`` says without a key, from a :meth:`summary` ``snapshot``."""
        return reports.description(self, snapshot)

    def predictor(self, asked: Iterable[bytes] = ()) -> KeyedPredictor:
        """Copies of the models of the keys requests asked for (``asked``: those asked
        since the last call), each copied again only when its model has changed."""
        self.records.open()
        return self._copies.published(asked)


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
    partition = _one_partition(partitions)
    if partition is not None:  # a poll of one partition, the usual case
        return [{partition: end} for end in _last_offsets(ids, offsets, n_keys)]
    ends: list[dict[int, int]] = [{} for _ in range(n_keys)]
    for key_id, partition, offset in zip(ids.tolist(), partitions.tolist(), offsets.tolist(),
                                         strict=True):  # fmt: skip
        if key_id >= 0:
            held = ends[key_id]
            end = max(held.pop(partition, 0), offset + 1)
            held[partition] = end  # re-inserted: the partition of the last message last
    return ends


def _one_partition(partitions: npt.NDArray[Any]) -> int | None:
    """The partition of every message of a poll, when they share one (None: several,
    or no message)."""
    if partitions.shape[0] and bool((partitions == partitions[0]).all()):
        return int(partitions[0])
    return None


def _last_offsets(ids: IntArray, offsets: IntArray, n_keys: int) -> list[int]:
    """Per key number, the offset after its last message (of a poll of one partition).

    >>> _last_offsets(np.array([0, 1, 0, -1]), np.array([7, 8, 9, 10]), 2)
    [10, 9]
    """
    keyed = ids >= 0
    last = np.zeros(n_keys, dtype=np.int64)
    np.maximum.at(last, ids[keyed], offsets[keyed] + 1)
    out: list[int] = last.tolist()
    return out


def _lined(
    asked: ParsedRows, owners: IntArray, answers: list[bytes]
) -> list[tuple[int, int, bytes]]:
    """(line, message, answer) of each question."""
    return list(zip(asked.line_numbers.tolist(), owners.tolist(), answers, strict=True))
