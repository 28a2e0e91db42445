"""The keyed models' records on the state topic: read, written, flushed, refused.

:class:`StateRecords` is what :class:`~streamlearn.keyed.models.KeyedModels` does with
its :class:`~streamlearn.keyed.store.StateStore`: it reads a partition's records once the
partition is this daemon's (at the next turn, not in the consumer group's callback),
turns a key's record into its model again, or refuses it (counted, logged once a minute:
the key starts a new model), writes a changed model's record to the partition of its
key, and waits for the broker to take the records written.

>>> from streamlearn.keyed.store import MemoryStates
>>> from streamlearn.learn import PDM
>>> records = StateRecords(MemoryStates(), PDM.from_state, PDM(delta=1.0))
>>> records.open({0})
>>> records.write(b"a", Resident(PDM(delta=1.0), partition=0, positions={0: 3}))
>>> records.flush(); records.unwritten
0
>>> back = records.restored(b"a", records.store.find(b"a"), None)
>>> back.partition, back.positions, records.restored(b"b", b"junk", 0), records.refused
(0, {0: 3}, None, 1)
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from streamlearn.errors import StateError, StreamlearnError, UndeliveredError
from streamlearn.keyed.records import ModelRecord, decode_record, encode_record
from streamlearn.keyed.registry import Resident
from streamlearn.keyed.store import StateStore
from streamlearn.learn import Model

log = logging.getLogger("streamlearn.keyed")

#: seconds a write of records may wait for the broker
FLUSH_TIMEOUT = 30.0
#: seconds between two logs of records the broker did not take, or of records refused
WARN_INTERVAL = 60.0
#: what a record that is not a model this daemon can go on with raises on the way back
REFUSALS = (StreamlearnError, ValueError, TypeError, KeyError, OverflowError)


class StateRecords:
    """The records of the keyed models in ``store`` (see the module doc).

    ``restore`` makes a model from its ``state_dict()``; ``empty`` is a new key's model,
    whose kind, algorithm and parameters the records' models are compared with.
    ``wall`` stamps the records, ``writer`` names the software that wrote them.
    """

    def __init__(
        self,
        store: StateStore,
        restore: Callable[[dict[str, Any]], Model],
        empty: Model,
        *,
        flush_timeout: float = FLUSH_TIMEOUT,
        writer: str | None = None,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self._restore = restore
        self._empty = empty
        self.flush_timeout = flush_timeout
        self.writer = writer
        self.wall = wall
        self.clock = clock
        #: the partitions whose keys' records the store has read, and those the
        #: consumer group gave this daemon (read at the next turn, not in its callback)
        self._open: set[int] = set()
        self._assigned: set[int] = set()
        self._written_since_flush = False
        self._warned_params = False
        self._warned_at = -math.inf
        #: records refused: not a model this daemon can go on with
        self.refused = 0
        self._refused_logged = -math.inf
        #: records put but not acknowledged by the broker at the last flush
        self.unwritten = 0

    # -- partitions ------------------------------------------------------------------------

    def take(self, partitions: set[int]) -> None:
        """The consumer group gives this daemon ``partitions``: their records are read at
        the next :meth:`open`."""
        self._assigned |= partitions

    def open(self, partitions: Iterable[int] = ()) -> None:
        """Read the records of ``partitions`` and of those the group gave, if not yet."""
        new = (set(partitions) | self._assigned) - self._open
        if new:
            self.store.open(new)
            self._open |= new

    def release(self, partitions: set[int]) -> None:
        """Wait for the records written (those of ``partitions`` leaving with them), then
        forget the records of ``partitions``: another daemon takes them."""
        self._written_since_flush = False
        unwritten = self.store.flush(self.flush_timeout)
        if unwritten:
            log.error("%d model records of partitions %s not written before the partitions "
                      "left: their next owner learns again from the last records written",
                      unwritten, sorted(partitions))  # fmt: skip
        self.store.forget(partitions)
        self._open -= partitions
        self._assigned -= partitions

    # -- reading ---------------------------------------------------------------------------

    def find(self, key: bytes) -> bytes | None:
        """The record of ``key`` in this daemon's partitions (None: none)."""
        return self.store.find(key)

    def stored(self, key: bytes) -> tuple[Model, int] | None:
        """The model of ``key`` from its record, which stays where it is, and its count of
        examples; None when there is no record, or it would be refused (it is counted
        when the key's examples come)."""
        data = self.store.find(key)
        if data is None:
            return None
        try:
            record = decode_record(data, key)
            return self._restore(record.state), record.examples
        except REFUSALS:
            return None

    def restored(self, key: bytes, data: bytes, partition: int | None) -> Resident | None:
        """The model of ``key`` from its record; None when the record is refused (not a
        model this daemon can go on with: damaged, foreign, not finite, too large...):
        counted, logged once a minute, and the key starts a new model. Whoever can write
        to the state topic could otherwise stop the daemon, at every start."""
        try:
            return self._restored(key, data, partition)
        except REFUSALS as exc:
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
        empty = self._empty
        params, ours = model.get_params(), empty.get_params()
        held, asked = (bool(p.get("one_vs_rest", False)) for p in (params, ours))
        if held != asked:
            kind = "a one-vs-rest bank" if held else "a binary model"
            raise StateError(f"the state record of key {key!r} holds {kind}")
        if (model.algorithm, params) != (empty.algorithm, ours) and not self._warned_params:
            self._warned_params = True
            log.warning("the state topic's models go on with their own algorithm and "
                        "parameters: %s %s (asked %s %s)", model.algorithm, params,
                        empty.algorithm, ours)  # fmt: skip
        return Resident(model, partition, dict(record.positions), record.examples)

    # -- writing ---------------------------------------------------------------------------

    def write(self, key: bytes, resident: Resident) -> None:
        """Put the record of ``resident``'s model to its partition (no longer changed)."""
        record = ModelRecord(key, resident.model.state_dict(), resident.positions,
                             resident.examples)  # fmt: skip
        value = encode_record(record, created=self.wall(), writer=self.writer)
        self.store.put(resident.partition, key, value)
        resident.dirty = False
        self._written_since_flush = True

    def delete(self, partition: int, key: bytes) -> None:
        """Put a tombstone for ``key`` to ``partition``: compaction drops its records."""
        self.store.delete(partition, key)
        self._written_since_flush = True

    def flush(self) -> None:
        """Wait for the records written since the last flush (failures are kept and
        written again at the next flush; logged once a minute)."""
        if not self._written_since_flush and not self.unwritten:
            return
        self._written_since_flush = False
        self.unwritten = self.store.flush(self.flush_timeout)
        if self.unwritten and self.clock() - self._warned_at >= WARN_INTERVAL:
            self._warned_at = self.clock()
            log.error("%d model records not written to the state topic yet (they are kept "
                      "and written again; offsets are not committed meanwhile)",
                      self.unwritten)  # fmt: skip

    def flush_all(self) -> None:
        """Wait for every record written; :class:`UndeliveredError` when some are not
        taken within ``flush_timeout`` (they are kept, and written again at the next
        flush)."""
        self._written_since_flush = False
        self.unwritten = self.store.flush(self.flush_timeout)
        if self.unwritten:
            raise UndeliveredError(
                f"{self.unwritten} model records not written to the state topic within "
                f"{self.flush_timeout:g} s (is the broker reachable?)"
            )
