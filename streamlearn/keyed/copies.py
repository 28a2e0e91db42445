"""Frozen copies of keyed models for the HTTP API: one per key a request named.

The daemon copies only the models of the keys that requests ask for (at most
``--max-models`` of them, the least recently asked forgotten first), and copies one
again only once it has changed (:class:`Copies`). A :class:`KeyedPredictor` is what the
daemon publishes: the copies as they were then, and the keys it looked for and found no
model of.

>>> import numpy as np
>>> from streamlearn.learn import PDM
>>> model = PDM(delta=1.0).learn(np.eye(2), [1, -1])
>>> published = KeyedPredictor({b"a": KeyCopy(model.predictor(), {"key": "a"}), b"z": None})
>>> b"a" in published, b"z" in published, b"q" in published
(True, True, False)
>>> published.get(b"z") is None, published.get(b"a").description
(True, {'key': 'a'})
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from streamlearn.keyed.registry import ResidentModels
from streamlearn.keyed.state_records import StateRecords
from streamlearn.learn import Model
from streamlearn.learn.description import describe
from streamlearn.learn.predictor import Predictor

#: what ``Published.predictor.kind`` says of a keyed daemon's copies
KEYED_KIND = "keyed"


@dataclass(frozen=True)
class KeyCopy:
    """One key's model, frozen: what answers, and what ``GET /model?key=`` says."""

    predictor: Predictor
    description: dict[str, Any]


@dataclass(frozen=True)
class KeyedPredictor:
    """The copies the daemon published, by key (None: the daemon looked, and this
    member has no model of the key)."""

    copies: Mapping[bytes, KeyCopy | None]

    @property
    def kind(self) -> str:
        return KEYED_KIND

    def __contains__(self, key: bytes) -> bool:
        """Whether the daemon has looked for ``key`` (else ask it to, and wait)."""
        return key in self.copies

    def get(self, key: bytes) -> KeyCopy | None:
        """The copy of ``key``'s model (None: no model, or not looked for)."""
        return self.copies.get(key)


def copy_of(key: bytes, model: Model, examples: int, *, in_memory: bool) -> KeyCopy:
    """A frozen copy of ``model`` and what ``GET /model?key=`` says of it."""
    description = {
        "key": key.decode("utf-8", "replace"),
        **describe(model, model.summary(), examples),
        "in_memory": in_memory,
    }
    return KeyCopy(model.predictor(), description)


class Copies:
    """The copies of the keys requests asked for, the least recently asked first: of
    the models in ``resident``, or of those only ``records`` hold."""

    def __init__(self, resident: ResidentModels, records: StateRecords) -> None:
        self._resident = resident
        self._records = records
        #: key -> (the model's version when copied, copy); (-1, None): to copy again
        self._copies: OrderedDict[bytes, tuple[int, KeyCopy | None]] = OrderedDict()

    def published(self, asked: Iterable[bytes] = ()) -> KeyedPredictor:
        """Copies of the models of the keys asked for (``asked``: those asked since the
        last call), each copied again only when its model has changed."""
        limit = self._resident.max_models
        for key in asked:
            if key not in self._copies:
                self._copies[key] = (-1, None)
            self._copies.move_to_end(key)
        while len(self._copies) > limit:
            self._copies.popitem(last=False)
        copies: dict[bytes, KeyCopy | None] = {}
        for key, (version, copy) in list(self._copies.items()):
            resident = self._resident.peek(key)
            if resident is not None and (copy is None or version != resident.version):
                copy = copy_of(key, resident.model, resident.examples, in_memory=True)
                self._copies[key] = (resident.version, copy)
            elif resident is None and copy is None:
                copy = self._stored_copy(key)
                self._copies[key] = (0, copy) if copy is not None else (-1, None)
            copies[key] = copy
        return KeyedPredictor(copies)

    def _stored_copy(self, key: bytes) -> KeyCopy | None:
        """A copy of the model of ``key`` from its record, which stays where it is (None:
        no record in this daemon's partitions, or one refused)."""
        stored = self._records.stored(key)
        if stored is None:
            return None
        model, examples = stored
        return copy_of(key, model, examples, in_memory=False)

    def spilled(self, key: bytes, version: int) -> None:
        """The model of ``key`` left memory at ``version``: a copy of an older one is
        made again, from the record."""
        copied = self._copies.get(key)
        if copied is not None and copied[0] != version:
            self._copies[key] = (-1, None)  # the record is newer than the copy

    def forget(self, key: bytes) -> None:
        """``key`` has no model any more."""
        self._copies.pop(key, None)

    def clear(self) -> None:
        """Forget every copy (other daemons answer for some of those keys now)."""
        self._copies.clear()
