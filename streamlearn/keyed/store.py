"""Where keyed models go when they leave memory: the state topic, as the models use it.

:class:`StateStore` is what :class:`~streamlearn.keyed.models.KeyedModels` asks of it;
:class:`streamlearn.sources.kafka_state.StateTopic` is the compacted Kafka topic, and
:class:`MemoryStates` keeps the records in a dict (for tests and for the library).

The records of a key go to the partition its messages come from, so that whoever owns
an input partition finds its keys' models in the same partition of the state topic:
:meth:`StateStore.open` reads a partition's records before its keys are looked for.

>>> store = MemoryStates()
>>> store.open({0})
>>> store.put(0, b"a", b"first"); store.put(0, b"a", b"second"); store.flush(1.0)
0
>>> store.find(b"a"), store.find(b"b"), store.known()
(b'second', None, 1)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class StateStore(Protocol):
    """The keyed models' records, by key (see the module doc)."""

    #: bytes of record values written and read, and records written
    bytes_written: int
    bytes_read: int
    records_written: int

    def open(self, partitions: set[int]) -> None:
        """Read the records of ``partitions``: from now on their keys can be found."""
        ...

    def forget(self, partitions: set[int]) -> None:
        """Forget the keys of ``partitions``, and drop their writes still unacknowledged
        (another daemon owns them now: a late write would overwrite its records)."""
        ...

    def find(self, key: bytes) -> bytes | None:
        """The latest record of ``key`` in the open partitions (written or on its way),
        or None."""
        ...

    def put(self, partition: int, key: bytes, value: bytes) -> None:
        """Write ``value`` for ``key`` to ``partition``; :meth:`find` gives it at once,
        :meth:`flush` waits for it."""
        ...

    def delete(self, partition: int, key: bytes) -> None:
        """Remove ``key``'s record from ``partition`` (a tombstone: compaction then drops
        every record of the key); :meth:`find` gives None at once."""
        ...

    def stale(self, before: float) -> list[tuple[int, bytes]]:
        """The (partition, key) of the records in the open partitions written before
        ``before`` (seconds since the epoch)."""
        ...

    def flush(self, timeout: float) -> int:
        """Wait, ``timeout`` seconds at most, for the records put to be written (those
        that failed are put again, here or at the next flush); the number of records
        not written yet."""
        ...

    def known(self) -> int:
        """Keys with a record in the open partitions."""
        ...


class MemoryStates:
    """A :class:`StateStore` in memory; every value written is kept, as a topic that is
    never compacted keeps them (``history``). ``failing`` makes writes fail (tests)."""

    def __init__(
        self, partitions: int | None = None, wall: Callable[[], float] = time.time
    ) -> None:
        self.history: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self._latest: dict[bytes, bytes] = {}
        self._partition_of: dict[bytes, int] = {}
        self._written_at: dict[bytes, float] = {}
        self._waiting: dict[bytes, tuple[int, bytes | None]] = {}
        self.wall = wall
        self._open: set[int] = set()
        self.failing = False
        self.bytes_written = 0
        self.bytes_read = 0
        self.records_written = 0
        self.finds = 0

    def open(self, partitions: set[int]) -> None:
        self._open |= partitions

    def forget(self, partitions: set[int]) -> None:
        self._open -= partitions
        for key, (partition, _) in list(self._waiting.items()):
            if partition in partitions:
                del self._waiting[key]

    def find(self, key: bytes) -> bytes | None:
        self.finds += 1
        waiting = self._waiting.get(key)
        if waiting is not None:
            return waiting[1]
        if self._partition_of.get(key) not in self._open:
            return None
        value = self._latest.get(key)
        self.bytes_read += len(value or b"")
        return value

    def put(self, partition: int, key: bytes, value: bytes) -> None:
        self._waiting[key] = (partition, value)

    def delete(self, partition: int, key: bytes) -> None:
        self._waiting[key] = (partition, None)

    def stale(self, before: float) -> list[tuple[int, bytes]]:
        return [
            (partition, key)
            for key, partition in self._partition_of.items()
            if partition in self._open and key not in self._waiting
            and self._written_at[key] < before
        ]  # fmt: skip

    def flush(self, timeout: float) -> int:
        if self.failing:
            return len(self._waiting)
        for key, (partition, value) in self._waiting.items():
            self.history.setdefault(partition, []).append((key, value))
            self.records_written += 1
            if value is None:
                self._latest.pop(key, None)
                self._partition_of.pop(key, None)
                self._written_at.pop(key, None)
                continue
            self._latest[key] = value
            self._partition_of[key] = partition
            self._written_at[key] = self.wall()
            self.bytes_written += len(value)
        self._waiting.clear()
        return 0

    def known(self) -> int:
        return sum(1 for p in self._partition_of.values() if p in self._open)
