"""The examples predicted with an id, shared by the HTTP thread and the daemon's.

The HTTP thread adds what POST /predict answered with an id, at once: a prediction is
never held back behind a daemon turn (which may be a long batch or a replay slice), and
a label posted right after its prediction finds the example. The daemon's thread finds
and joins labels (between two batches, as it learns everything posted), writes the
store into checkpoints and restores it. Each side holds the lock for a few dictionary
operations only.

>>> import numpy as np
>>> shared = SharedPending(PendingExamples(max_examples=4, ttl=60.0))
>>> rows = (np.array([0, 1, 1]), np.array([2], dtype=np.int32), np.array([1.0]))
>>> shared.add(["a", None], rows, np.array([1.0, -1.0]), now=0.0)
[]
>>> shared.add(["a", "b"], rows, np.array([1.0, -1.0]), now=1.0)
[(1, 'id pending')]
>>> shared.counts()["examples"]
1
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.learn.model import Rows
from streamlearn.pending import PendingExample, PendingExamples


class SharedPending:
    """A :class:`PendingExamples` behind a lock (see the module doc)."""

    def __init__(self, store: PendingExamples) -> None:
        self._store = store
        self._lock = threading.Lock()

    def add(
        self,
        ids: Sequence[str | None],
        rows: Rows,
        predicted: npt.NDArray[np.float64],
        now: float,
        *,
        whole: bool = True,
    ) -> list[tuple[int, str]]:
        """Keep each row that has an id, with the label its prediction named; the rows
        (from 1) whose id cannot be taken, and why (an id twice in ``ids`` among them).
        ``whole``: all or none (nothing is kept when a row is refused); else the others
        are kept."""
        indptr, indices, values = rows
        with self._lock:
            store = self._store
            refused, seen = [], set()
            for row, example_id in enumerate(ids, start=1):
                if example_id is None:
                    continue
                why = store.taken(example_id) or ("id twice" if example_id in seen else None)
                if why is not None:
                    refused.append((row, why))
                seen.add(example_id)
            if refused and whole:
                return refused
            skipped = {row - 1 for row, _ in refused}
            for row, example_id in enumerate(ids):
                if example_id is None or row in skipped:
                    continue
                start, stop = int(indptr[row]), int(indptr[row + 1])
                store.add(example_id, PendingExample(
                    np.array(indices[start:stop], dtype=np.int32),
                    np.array(values[start:stop], dtype=np.float64),
                    float(predicted[row]), now,
                ))  # fmt: skip
        return refused

    def find(self, example_id: str, now: float) -> PendingExample | str:
        """:meth:`PendingExamples.find` (the daemon's thread)."""
        with self._lock:
            return self._store.find(example_id, now)

    def refuse(self, reason: str) -> None:
        """:meth:`PendingExamples.refuse`."""
        with self._lock:
            self._store.refuse(reason)

    def joined(self, example_id: str) -> None:
        """:meth:`PendingExamples.joined` (the daemon's thread)."""
        with self._lock:
            self._store.joined(example_id)

    def expire(self, now: float) -> None:
        """Let the examples that waited too long go."""
        with self._lock:
            self._store.expire(now)

    @property
    def changes(self) -> int:
        """A count of the store's changes (a checkpoint is due when it moved)."""
        return self._store.changes

    def counts(self) -> dict[str, Any]:
        """:meth:`PendingExamples.counts`."""
        with self._lock:
            return self._store.counts()

    def state(self) -> dict[str, Any]:
        """:meth:`PendingExamples.state`."""
        with self._lock:
            return self._store.state()

    def restore(self, state: dict[str, Any]) -> None:
        """:meth:`PendingExamples.restore`."""
        with self._lock:
            self._store.restore(state)
