"""A binary learner's state as plain values, and back: what it has learned, the examples
``delta='auto'`` holds back, its class's extra state and its calibration.

:meth:`LinearLearner.state_dict <streamlearn.learn.base.LinearLearner.state_dict>` and
``from_state`` are these functions; the checkpoint codec stores what they give (plain
numbers, strings and numpy arrays), and a restored learner continues exactly.

>>> import numpy as np
>>> from streamlearn import PDM
>>> learner = PDM(eps=0.1, delta=1.0).learn(np.eye(3), [1, -1, 1])
>>> again = restore_learner(PDM, encode_learner(learner))
>>> np.array_equal(again.coef_, learner.coef_), again.examples_presented
(True, 3)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from streamlearn._kernels import check_rows
from streamlearn.errors import StateError, check_state_header
from streamlearn.learn.params import params_from_plain, plain_params
from streamlearn.learn.state import LearnerState
from streamlearn.learn.window import AutoDeltaWindow
from streamlearn.types import Batch, RowStatus

if TYPE_CHECKING:
    from streamlearn.learn.base import LinearLearner

    Learner = TypeVar("Learner", bound=LinearLearner)

STATE_FORMAT = "streamlearn.learner"
STATE_VERSION = 1
#: what :class:`LearnerState` writes that a learner's state holds as it is
LEARNED_KEYS = (
    "delta_value", "weights", "scalars", "stats", "passes", "converged", "stopped_by",
    "examples_seen", "evictions_forgotten", "defer_until",
)  # fmt: skip


def encode_learner(learner: LinearLearner) -> dict[str, Any]:
    """Everything needed to continue exactly: plain numbers, strings and numpy arrays."""
    learned = learner.state.state_dict()
    pending = Batch.concatenate(learner.window.pending)
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "algorithm": learner.algorithm,
        "params": plain_params(learner.get_params()),
        **{key: learned[key] for key in LEARNED_KEYS},
        **learner.window.state_dict(),
        "pending": {
            "indptr": pending.indptr,
            "indices": pending.indices,
            "values": pending.values,
            "labels": pending.labels,
        },
        "buffer": learned["buffer"],
        "extra": learner.extra_state(),
        "calibration": learner.calibrator.state(),
    }


def restore_learner(cls: type[Learner], state: dict[str, Any]) -> Learner:
    """A learner of class ``cls`` that continues exactly where the one that made
    ``state`` stopped."""
    check_state_header(state, STATE_FORMAT, STATE_VERSION, "learner")
    if state.get("algorithm") != cls.algorithm:
        raise StateError(
            f"state is for algorithm {state.get('algorithm')!r}, not {cls.algorithm!r}"
        )
    try:
        learner = cls(**params_from_plain(state["params"]))
        load_learner(learner, state)
    except StateError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise StateError(f"incomplete or malformed learner state: {exc}") from exc
    return learner


def load_learner(learner: LinearLearner, state: dict[str, Any]) -> None:
    """Make ``learner`` continue from ``state`` (:func:`encode_learner`'s) under its own
    parameters."""
    pending = state["pending"]
    held = Batch.from_csr(
        pending["indptr"], pending["indices"], pending["values"], pending["labels"]
    )
    learned = LearnerState.from_state(state)
    if learned.buffer.max_examples != (learner.buffer_size or learned.buffer.max_examples) or (
        learned.buffer.max_nnz != (learner.buffer_nnz or learned.buffer.max_nnz)
    ):
        raise StateError("replay buffer capacity in the state differs from the parameters")
    check_state_rows(state["buffer"]["indices"], learned.n_features, held)
    learner.state = learned
    learner.window = AutoDeltaWindow.for_buffer(
        learned.buffer.max_examples, learner.rho, Batch.concatenate, learner.delta
    )
    learner.window.load(state, held)
    learner.load_extra_state(state["extra"])
    learner.calibrator.load(state.get("calibration"))  # absent from 0.1.0's betas


def check_state_rows(buffer_indices: Any, n_features: int, pending: Any) -> None:
    """Refuse a state whose parts disagree where the kernels would read outside the
    weights: buffered examples with features beyond them, or pending examples (anything
    with CSR ``indptr``, ``indices``, ``values``) with a negative index or a value that
    is not finite.

    >>> check_state_rows(np.array([0, 4]), 4, Batch.from_csr([0], [], [], []))
    Traceback (most recent call last):
    ...
    streamlearn.errors.StateError: the replay buffer holds feature indices beyond the weights
    """
    stored = np.asarray(buffer_indices)
    if stored.shape[0] and int(stored.max()) >= n_features:
        raise StateError("the replay buffer holds feature indices beyond the weights")
    if pending.indptr.shape[0] == 1:
        return
    code, _ = check_rows(pending.indptr, pending.indices, pending.values)
    if code not in (RowStatus.OK, RowStatus.NOT_CANONICAL):
        raise StateError("the pending examples hold a negative index or a non-finite value")
