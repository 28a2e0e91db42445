"""One replay buffer shared by the learners of a one-vs-rest bank.

Features are stored once (a :class:`ReplayBuffer` whose own label and slack arrays go
unused); each learner ``l`` owns a row of signs ``signs[l]`` (+1 where its label is in
the example's label set, -1 elsewhere) and a row of slack counts ``alphas[l]``, both
aligned with the buffer's slots. :meth:`SharedReplayBuffer.view` gives one learner's
buffer: the shared arrays with its own two rows.

>>> shared = SharedReplayBuffer(max_examples=4, max_nnz=100)
>>> shared.add_label(), shared.add_label(), shared.n_labels
(0, 1, 2)
>>> view = shared.view(1)
>>> view.slot_label is shared.signs[1], view.arena_idx is shared.features.arena_idx
(False, True)
>>> bool(np.shares_memory(view.slot_label, shared.signs))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import StateError
from streamlearn.replay.buffer import ReplayBuffer


class SharedReplayBuffer:
    """A bounded FIFO store of examples (features once) with per-learner signs and slack."""

    def __init__(self, max_examples: int, max_nnz: int) -> None:
        self.features = ReplayBuffer(max_examples, max_nnz)
        self.n_labels = 0
        self.signs = np.zeros((1, self.features.max_examples), dtype=np.int8)
        self.alphas = np.zeros((1, self.features.max_examples), dtype=np.float64)

    def __len__(self) -> int:
        return len(self.features)

    @property
    def max_examples(self) -> int:
        """Capacity in examples."""
        return self.features.max_examples

    @property
    def max_nnz(self) -> int:
        """Capacity in stored nonzeros."""
        return self.features.max_nnz

    @property
    def evicted(self) -> int:
        """Examples dropped so far to make room (oldest first)."""
        return self.features.evicted

    @property
    def unbuffered(self) -> int:
        """Examples too large for the whole arena, learned from but never stored."""
        return self.features.unbuffered

    def add_label(self) -> int:
        """Room for one more learner's rows (zeros); returns its number."""
        label = self.n_labels
        if label >= self.signs.shape[0]:
            rows = 2 * self.signs.shape[0]
            self.signs = _grown_rows(self.signs, rows)
            self.alphas = _grown_rows(self.alphas, rows)
        self.signs[label] = 0
        self.alphas[label] = 0.0
        self.n_labels += 1
        return label

    def view(self, label: int) -> ReplayBuffer:
        """Learner ``label``'s buffer: the shared slots and arena with its own signs and
        slack. Valid until the arena grows or a label is added (take a new one then)."""
        if not 0 <= label < self.n_labels:
            raise IndexError(f"no learner {label} in a bank of {self.n_labels}")
        feats = self.features
        view = ReplayBuffer.__new__(ReplayBuffer)
        view.max_examples = feats.max_examples
        view.max_nnz = feats.max_nnz
        view.slot_start = feats.slot_start
        view.slot_len = feats.slot_len
        view.slot_label = self.signs[label]
        view.slot_alpha = self.alphas[label]
        view.slot_sqnorm = feats.slot_sqnorm
        view.arena_idx = feats.arena_idx
        view.arena_val = feats.arena_val
        view.ring = feats.ring
        return view

    def state_dict(self) -> dict[str, Any]:
        """The features once, and each learner's signs and slack for the live slots."""
        slots = self.features.live_slots()
        features = self.features.state_dict()
        del features["labels"], features["alpha"]  # unused: the rows below hold them
        return {
            "features": features,
            "signs": self.signs[: self.n_labels][:, slots].copy(),
            "alphas": self.alphas[: self.n_labels][:, slots].copy(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SharedReplayBuffer:
        """Inverse of :meth:`state_dict`."""
        features = dict(state["features"])
        count = np.asarray(features["indptr"]).shape[0] - 1
        features["labels"] = np.ones(count, dtype=np.int8)  # placeholders: signs hold them
        features["alpha"] = np.zeros(count, dtype=np.float64)
        signs = np.asarray(state["signs"], dtype=np.int8)
        alphas = np.asarray(state["alphas"], dtype=np.float64)
        if signs.ndim != 2 or signs.shape != alphas.shape or signs.shape[1] != count:
            raise StateError("shared buffer state: signs and slack do not match the examples")
        if not np.all(np.isin(signs, (-1, 1))) or not np.all(np.isfinite(alphas)):
            raise StateError("shared buffer state: signs must be +1 or -1 and slack finite")
        shared = cls(int(features["max_examples"]), int(features["max_nnz"]))
        shared.features = ReplayBuffer.from_state(features)
        for _ in range(signs.shape[0]):
            shared.add_label()
        shared.signs[: signs.shape[0], :count] = signs
        shared.alphas[: signs.shape[0], :count] = alphas
        return shared


def _grown_rows(array: npt.NDArray[Any], rows: int) -> npt.NDArray[Any]:
    out = np.zeros((rows, array.shape[1]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out
