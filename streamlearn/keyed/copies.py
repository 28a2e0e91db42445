"""Frozen copies of keyed models for the HTTP API: one per key a request named.

The daemon copies only the models of the keys that requests ask for (at most
``--max-models`` of them, the least recently asked forgotten first), and copies one
again only once it has changed. A :class:`KeyedPredictor` is what the daemon publishes:
the copies as they were then, and the keys it looked for and found no model of.

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
