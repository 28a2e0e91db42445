"""How a one-vs-rest bank presents new examples: stored once in the shared buffer and
presented to every label's learner, in order, by the engine's bank kernel; a label the
stream brings gets its learner just before the row that brings it, presented the
buffered examples as negatives first (see :mod:`streamlearn.learn.bank`).

:class:`~streamlearn.learn.bank.ModelBank` decides what to present (``delta='auto'`` may
hold examples back first) and presents it here, on its
:class:`~streamlearn.learn.bank_state.BankState`.

>>> import numpy as np
>>> from streamlearn.learn import PDM, ModelBank, as_labelled_rows
>>> bank = ModelBank(PDM(delta=1.0))
>>> present(bank, as_labelled_rows(np.eye(2), [[3], [4]]))
>>> bank.state.label_values, bank.state.examples_seen
([3.0, 4.0], 2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import row_sqnorms
from streamlearn._kernels.bank import bank_learn_stream, bank_present_unbuffered, present_history
from streamlearn.learn.bank_state import BankState
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.state import SCALE_DOWN_ABOVE, UPDATES

if TYPE_CHECKING:
    from streamlearn.learn.bank import ModelBank


def present(bank: ModelBank, rows: LabelledRows) -> None:
    """Present rows in order, starting each new label's learner just before the row
    that brings it."""
    state = bank.state
    values, firsts = np.unique(rows.labels, return_index=True)
    new = sorted(
        (position, value)
        for value, position in zip(values.tolist(), firsts.tolist(), strict=True)
        if value not in state.label_ids
    )
    first_position = {value: position for position, value in new}
    # the row of each new label's first appearance; within a row, labels in their order
    first_rows = np.searchsorted(rows.label_ptr, list(first_position.values()), side="right")
    start = 0
    candidates = state.n_labels  # labels known before the first row of the next slice
    for value, row in zip(first_position, (first_rows - 1).tolist(), strict=True):
        if row != start:
            present_known(state, rows.slice(start, row), candidates)
            start = row
            candidates = state.n_labels
        add_label(state, value, bank.tau_pos_for(1, state.examples_seen + 1))
    present_known(state, rows.slice(start, rows.n_examples), candidates)


def present_one(
    state: BankState,
    indices: npt.NDArray[np.int32],
    values: npt.NDArray[np.float64],
    ids: list[Any],
) -> None:
    """:func:`present_known` of one row whose labels (by id) the bank knows."""
    n_labels = state.n_labels
    nnz = indices.shape[0]
    if nnz:
        state.grow_features(int(indices[-1]) + 1)
    state.reserve(1, nnz + 1)
    signs = np.full((1, max(n_labels, 1)), -1, dtype=np.int8)
    if n_labels == 0:
        signs = np.zeros((1, 0), dtype=np.int8)
    elif ids:
        signs[0, ids] = 1
        state.positives[ids] += 1
    state.examples_seen += 1
    indptr = np.array([0, nnz], dtype=np.int64)
    updates_before = state.scalars[:n_labels, UPDATES].copy()
    stream_rows(state, indptr, indices, values, signs, n_labels)
    changed = (state.scalars[:n_labels, UPDATES] != updates_before).tolist()
    for learner, label_changed in zip(state.learners, changed, strict=True):
        learner.state.examples_seen += 1
        if label_changed or state.evicted_since_replay(learner):
            learner.state.converged = False


def present_known(state: BankState, rows: LabelledRows, first_candidates: int) -> None:
    """Present rows whose labels the bank knows; the first row is judged over the
    labels below ``first_candidates``."""
    n = rows.n_examples
    if n == 0:
        return
    feats = rows.features()
    state.grow_features(feats.max_index + 1)
    state.reserve(n, feats.nnz + n)
    signs = example_signs(state, rows)
    n_labels = state.n_labels
    state.positives[:n_labels] += np.sum(signs > 0, axis=0)
    state.examples_seen += n
    if n_labels == 0:
        signs = np.zeros((n, 0), dtype=np.int8)
    updates_before = state.scalars[:n_labels, UPDATES].copy()
    stream_rows(state, feats.indptr, feats.indices, feats.values, signs, first_candidates)
    changed = state.scalars[:n_labels, UPDATES] != updates_before
    for label, learner in enumerate(state.learners):
        learner.state.examples_seen += n
        if changed[label] or state.evicted_since_replay(learner):
            learner.state.converged = False  # the window changed: its replay is due


def stream_rows(
    state: BankState,
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    values: npt.NDArray[np.float64],
    signs: npt.NDArray[np.int8],
    first_candidates: int,
) -> None:
    """Store and present new rows with their signs per label (see
    :func:`~streamlearn._kernels.bank.bank_learn_stream`)."""
    buf = state.buffer.features
    sqnorms = row_sqnorms(indptr, values)
    learners = (
        state.buffer.alphas, state.weights, state.scalars, state.base.rule,
        state.rule_params(), state.base.rho, state.delta_sq, state.stats, state.progressive,
    )  # fmt: skip
    n = indptr.shape[0] - 1
    forget = state.base.forget == "window"
    defer_until = np.array(
        [learner.state.defer_until for learner in state.learners], dtype=np.int64
    )
    first = 0
    while first < n:
        first = bank_learn_stream(
            indptr, indices, values, signs, sqnorms, buf.slot_start, buf.slot_len,
            buf.slot_sqnorm, buf.arena_idx, buf.arena_val, buf.ring, buf.max_nnz,
            state.buffer.signs, learners, first_candidates, first, forget, defer_until,
        )  # fmt: skip
        if first < n:  # more nonzeros than the arena can ever hold
            bank_present_unbuffered(
                indptr, indices, values, signs, sqnorms, first, buf.ring, learners,
                first_candidates, np.zeros((max(signs.shape[1], 1), 1)), forget,
            )  # fmt: skip
            first += 1
    large = state.scalars[: state.n_labels, UPDATES] > SCALE_DOWN_ABOVE
    for label in np.flatnonzero(large).tolist():
        state.bind(label)
        state.learners[label].keep_in_range()


def example_signs(state: BankState, rows: LabelledRows) -> npt.NDArray[np.int8]:
    """+1/-1 per example and label id (every label of the rows is known here)."""
    signs = np.full((rows.n_examples, max(state.n_labels, 1)), -1, dtype=np.int8)
    if rows.labels.shape[0]:
        known = np.array(state.label_values, dtype=np.float64)  # by id
        by_value = np.argsort(known, kind="stable")
        ids = by_value[np.searchsorted(known, rows.labels, sorter=by_value)]
        row_of_label = np.repeat(np.arange(rows.n_examples), np.diff(rows.label_ptr))
        signs[row_of_label, ids] = 1
    return signs


def add_label(state: BankState, value: float, tau_pos: float | None) -> None:
    """A new learner for ``value`` (its margin of positives ``tau_pos``, None: the
    base's), presented the buffered examples as negatives."""
    label = state.add_row()
    state.label_ids[value] = label
    state.label_values.append(value)
    state.learners.append(state.new_learner(tau_pos))
    slots = state.buffer.features.live_slots()
    feats = state.buffer.features
    present_history(
        slots, feats.slot_start, feats.slot_len, feats.slot_sqnorm, feats.arena_idx,
        feats.arena_val, -1, state.buffer.signs[label], state.buffer.alphas[label],
        state.weights[label], state.scalars[label], state.base.rule,
        state.rule_params()[label], state.base.rho, state.delta_sq, state.stats[label],
    )  # fmt: skip
    state.learners[label].state.examples_seen = int(slots.shape[0])
    # examples evicted before the label came were never its learner's; those it
    # has are forgotten as they go until its first replay
    state.learners[label].state.evictions_forgotten = state.buffer.evicted
