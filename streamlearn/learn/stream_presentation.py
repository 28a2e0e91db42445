"""How a binary learner presents new examples: stored in its replay buffer and presented
once, in order, by the engine's stream kernel (an example with more nonzeros than the
buffer can ever hold is presented without being stored).

:meth:`LinearLearner.learn_batch <streamlearn.learn.base.LinearLearner.learn_batch>`
decides what to present (``delta='auto'`` may hold examples back first) and presents it
here; :func:`learn_and_answer_in_one_pass` is its variant that answers questions on the
way, in the same pass of the engine.

>>> import numpy as np
>>> from streamlearn import PDM
>>> from streamlearn.types import Batch
>>> learner = PDM(delta=1.0)
>>> present_stream(learner, Batch.from_csr([0, 1, 2], [0, 1], [1.0, 1.0], [1, -1]))
>>> learner.examples_presented, len(learner.buffer)
(2, 2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import (
    all_ones,
    learn_stream,
    learn_stream_answering,
    present_unbuffered,
    row_sqnorms,
)
from streamlearn._kernels.engine import Rule
from streamlearn.learn import answers
from streamlearn.learn.model import Rows
from streamlearn.learn.state import LearnerState
from streamlearn.types import Batch

if TYPE_CHECKING:
    from streamlearn.learn.base import LinearLearner


def present_stream(learner: LinearLearner, batch: Batch) -> None:
    """Store and present ``batch``'s examples once, in order."""
    if batch.n_examples == 0:
        return
    state, sqnorms, rule = stream_ready(learner, batch)
    buf = state.buffer
    forget = learner.forgets
    before = (state.updates, state.sqnorm)
    first = 0
    while first < batch.n_examples:
        first = learn_stream(
            batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, buf.arrays(),
            buf.ring, buf.max_nnz, state.weights, state.scalars, rule, state.stats, first,
            forget, state.defer_until,
        )  # fmt: skip
        if first < batch.n_examples:  # more nonzeros than the buffer can ever hold
            present_too_large(learner, batch, sqnorms, rule, first)
            first += 1
    stream_learned(learner, batch, before)


def stream_ready(
    learner: LinearLearner, batch: Batch
) -> tuple[LearnerState, npt.NDArray[np.float64], Rule]:
    """Room for ``batch`` (weights, buffer); its squared norms and the kernels' rule."""
    state = learner.state
    state.grow_weights(batch.max_index + 1)
    state.buffer.reserve_slots(batch.n_examples)
    state.buffer.reserve_for(batch.nnz + batch.n_examples)
    sqnorms = row_sqnorms(batch.indptr, batch.values)
    return state, sqnorms, learner.kernel_rule(False, bool(all_ones(batch.values)))


def present_too_large(
    learner: LinearLearner, batch: Batch, sqnorms: npt.NDArray[np.float64], rule: Rule, row: int
) -> None:
    """Present row ``row`` of ``batch``, too large for the buffer ever to hold it, without
    storing it."""
    state = learner.state
    buf = state.buffer
    present_unbuffered(
        batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, row, buf.ring,
        buf.slot_alpha, state.weights, state.scalars, rule, state.stats, np.zeros(1),
        learner.forgets,
    )  # fmt: skip


def stream_learned(learner: LinearLearner, batch: Batch, before: tuple[float, float]) -> None:
    """Count ``batch`` as presented; ``before``: t and ||a||^2 before it was."""
    state = learner.state
    state.examples_seen += batch.n_examples
    if (state.updates, state.sqnorm) != before or learner.evictions_to_forget:
        state.converged = False  # the window changed: its replay is due
    learner.keep_in_range()


def learn_and_answer_in_one_pass(
    learner: LinearLearner, batch: Batch, questions: Rows, before: npt.NDArray[np.int64]
) -> list[bytes]:
    """Present ``batch`` as :func:`present_stream` does, answering question ``j`` (as
    ``learner.answers`` does) just before row ``before[j]`` is learned, in the same pass
    of the engine: a question costs no more than its answer. Delta must be settled."""
    state, sqnorms, rule = stream_ready(learner, batch)
    buf = state.buffer
    factor = learner.rule_output_factor()
    scores = np.empty(before.shape[0])
    cursor = np.zeros(2, dtype=np.int64)
    q_indptr, q_indices, q_values = questions
    before = np.ascontiguousarray(before, dtype=np.int64)
    updates_before = (state.updates, state.sqnorm)
    while not learn_stream_answering(
        batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, buf.arrays(),
        buf.ring, buf.max_nnz, state.weights, state.scalars, rule, state.stats,
        learner.forgets, state.defer_until, before, q_indptr, q_indices, q_values, factor,
        scores, cursor,
    ):  # fmt: skip
        present_too_large(learner, batch, sqnorms, rule, int(cursor[0]))
        cursor[0] += 1
    stream_learned(learner, batch, updates_before)
    return answers.binary_answers(scores)
