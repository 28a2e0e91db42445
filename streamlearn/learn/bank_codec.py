"""A one-vs-rest bank's state as plain values, and back: its labels, every label's
weights, scalars, statistics and counts, the shared buffer and what ``delta='auto'``
holds back.

:meth:`ModelBank.state_dict <streamlearn.learn.bank.ModelBank.state_dict>`,
``state_to_write`` and ``from_state`` are these functions; a restored bank continues
exactly.

>>> import numpy as np
>>> from streamlearn.learn import PDM, ModelBank
>>> bank = ModelBank(PDM(delta=1.0)).learn(np.eye(3), [[0], [1], [0, 2]])
>>> again = restore_bank(ModelBank, encode_bank(bank, bank.buffer.state_dict()))
>>> again.labels_.tolist(), np.array_equal(again.decision_function(np.eye(3)),
...                                        bank.decision_function(np.eye(3)))
([0.0, 1.0, 2.0], True)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.engine import N_STATS
from streamlearn.errors import StateError, check_state_header
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.learner_codec import check_state_rows
from streamlearn.learn.params import params_from_plain, plain_params
from streamlearn.learn.state import (
    defer_until,
    evictions_forgotten,
    packed_weights,
    require_finite,
    stopped_by,
    unpacked_weights,
)
from streamlearn.learn.table import LEARNERS, LearnerTable
from streamlearn.replay.shared import SharedReplayBuffer

if TYPE_CHECKING:
    from streamlearn.learn.bank import ModelBank

    Bank = TypeVar("Bank", bound=ModelBank)

BANK_FORMAT = "streamlearn.bank"
BANK_VERSION = 1


def encode_bank(bank: ModelBank, buffer: dict[str, Any]) -> dict[str, Any]:
    """The bank's state around the shared buffer's state ``buffer`` (new arrays: the
    state stays as it is while the bank learns on)."""
    held = bank.state
    pending = LabelledRows.concatenate(held.window.pending)
    learners = []
    for label, learner in enumerate(held.learners):
        learners.append(
            {
                "tau_pos": getattr(learner, "tau_pos", math.nan),
                "positives": int(held.positives[label]),
                "passes": learner.state.passes,
                "converged": learner.state.converged,
                "stopped_by": learner.state.stopped_by,
                "examples_seen": learner.state.examples_seen,
                "evictions_forgotten": learner.state.evictions_forgotten,
                "defer_until": learner.state.defer_until,
                "extra": learner.extra_state(),
            }
        )
    n = held.n_labels
    return {
        "format": BANK_FORMAT,
        "version": BANK_VERSION,
        "algorithm": bank.algorithm,
        "params": plain_params(bank.base.get_params()),
        "tau_pos_kappa": math.nan if bank.tau_pos_kappa is None else bank.tau_pos_kappa,
        "delta_value": math.nan if held.delta_value is None else held.delta_value,
        "label_values": bank.labels_,
        "weights": packed_weights(held.weights[:n, : held.n_features]),
        "scalars": held.scalars[:n].copy(),
        "stats": held.stats[:n].copy(),
        "n_features": held.n_features,
        "examples_seen": held.examples_seen,
        **held.window.state_dict(),
        "pending": {
            "indptr": pending.indptr,
            "indices": pending.indices,
            "values": pending.values,
            "label_ptr": pending.label_ptr,
            "labels": pending.labels,
        },
        "buffer": buffer,
        "learners": learners,
        "progressive": held.progressive.copy(),
    }


def restore_bank(cls: type[Bank], saved: dict[str, Any], learners: LearnerTable = LEARNERS) -> Bank:
    """A bank of class ``cls`` that continues exactly where the one that made ``saved``
    stopped (``learners``: the table its algorithm is found in)."""
    check_state_header(saved, BANK_FORMAT, BANK_VERSION, "model bank")
    algorithm = saved.get("algorithm")
    if algorithm not in learners:
        raise StateError(f"unknown algorithm in bank state: {algorithm!r}")
    try:
        params = params_from_plain(saved["params"])
        kappa = float(saved["tau_pos_kappa"])
        bank = cls(learners[str(algorithm)](**params),
                   tau_pos_kappa=None if math.isnan(kappa) else kappa)  # fmt: skip
        load_bank(bank, saved)
    except StateError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise StateError(f"incomplete or malformed model bank state: {exc}") from exc
    return bank


def load_bank(bank: ModelBank, saved: dict[str, Any]) -> None:
    """Make ``bank`` continue from ``saved`` (:func:`encode_bank`'s) under its own
    parameters."""
    held, base = bank.state, bank.base
    delta_value = float(saved["delta_value"])
    held.delta_value = None if math.isnan(delta_value) else delta_value
    buffer = SharedReplayBuffer.from_state(saved["buffer"])
    if buffer.max_examples != (base.buffer_size or buffer.max_examples) or (
        buffer.max_nnz != (base.buffer_nnz or buffer.max_nnz)
    ):
        raise StateError("replay buffer capacity in the state differs from the parameters")
    held.new_buffer(buffer)
    values = [float(v) for v in np.asarray(saved["label_values"]).tolist()]
    n = len(values)
    if n != buffer.n_labels or len(saved["learners"]) != n:
        raise StateError("model bank state: labels, learners and buffer rows differ")
    weights = _rows(unpacked_weights(saved["weights"]), n)
    require_finite("weights", weights)
    require_finite("scalars", np.asarray(saved["scalars"], dtype=np.float64))
    held.n_features = int(saved["n_features"])
    rows = max(n, 1)
    held.weights = np.zeros((rows, max(16, held.n_features)), dtype=np.float64)
    held.weights[:n, : weights.shape[1]] = weights
    held.scalars = np.zeros((rows, 4), dtype=np.float64)
    held.scalars[:n] = np.asarray(saved["scalars"], dtype=np.float64).reshape(n, 4)
    held.stats = np.zeros((rows, N_STATS), dtype=np.int64)
    stats = _rows(np.asarray(saved["stats"], dtype=np.int64), n)
    held.stats[:n, : stats.shape[1]] = stats
    held.positives = np.zeros(rows, dtype=np.int64)
    held.examples_seen = int(saved["examples_seen"])
    pending = LabelledRows.from_arrays(_Arrays(saved["pending"]))
    check_state_rows(saved["buffer"]["features"]["indices"], held.n_features, pending)
    held.window.load(saved, pending)
    progressive = saved.get("progressive")  # states written before it count from 0
    if progressive is not None:
        held.progressive = np.asarray(progressive, dtype=np.int64).reshape(2).copy()
    held.label_values = values
    held.label_ids = {v: i for i, v in enumerate(values)}
    held.rules = None
    held.learners = []
    for label, one in enumerate(saved["learners"]):
        tau = float(one["tau_pos"])
        learner = held.new_learner(None if math.isnan(tau) else tau)
        learner.state.passes = int(one["passes"])
        learner.state.converged = bool(one["converged"])
        learner.state.stopped_by = stopped_by(one.get("stopped_by"))
        learner.state.examples_seen = int(one["examples_seen"])
        learner.state.evictions_forgotten = evictions_forgotten(
            one.get("evictions_forgotten"), buffer.features
        )
        learner.state.defer_until = defer_until(one.get("defer_until"), buffer.features)
        learner.load_extra_state(one["extra"])
        held.positives[label] = int(one["positives"])
        held.learners.append(learner)
        # on the bank's rows at once: the empty buffer of a window's size that each
        # new learner makes is freed before the next learner makes its own
        held.bind(label)


class _Arrays:
    """Attribute access to a dict of arrays (a state's ``pending`` rows)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.indptr = np.asarray(values["indptr"], dtype=np.int64)
        self.indices = np.asarray(values["indices"], dtype=np.int32)
        self.values = np.asarray(values["values"], dtype=np.float64)
        self.label_ptr = np.asarray(values["label_ptr"], dtype=np.int64)
        self.labels = np.asarray(values["labels"], dtype=np.float64)


def _rows(array: npt.NDArray[Any], n: int) -> npt.NDArray[Any]:
    """``array`` as n rows (a bank of no label stores empty arrays)."""
    return array.reshape(n, -1) if n else np.zeros((0, 0), dtype=array.dtype)
