"""The read side of a one-vs-rest bank: what it answers and reports from its state.

A :class:`~streamlearn.learn.bank.ModelBank` changes its
:class:`~streamlearn.learn.bank_state.BankState` (labels coming, learning, replay,
Delta, its state encoding); this, its base, only reads it: the labels and counts,
decision values per label, the multi-class and multi-label predictions, calibrated
probabilities, frozen predictors, the daemon's answers and the per-label certificates
(how they are written is :mod:`~streamlearn.learn.bank_answers`).

>>> import numpy as np
>>> from streamlearn.learn import PDM, ModelBank
>>> bank = ModelBank(PDM(delta=0.0)).fit(np.eye(2), [3, 4])
>>> isinstance(bank, BankModelView), bank.predict(np.eye(2)).tolist()
(True, [3.0, 4.0])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.bank_one import canonical_decisions
from streamlearn._kernels.rows import MAX_ROW_SQNORM
from streamlearn.errors import InvalidInputError, StateError
from streamlearn.learn import bank_answers
from streamlearn.learn.bank_state import BankState
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.calibration import Softmax, fit_temperature
from streamlearn.learn.inputs import as_rows
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.predictor import BankPredictor, scaled_decisions
from streamlearn.learn.state import BETA, SCALE, SQNORM, UPDATES
from streamlearn.learn.window_calibration import calibration_due, calibration_stride
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.replay.shared import SharedReplayBuffer
from streamlearn.types import MAX_FEATURE_INDEX, RowStatus


class BankModelView:
    """What a bank answers and reports, read from its state (see the module doc)."""

    #: what :meth:`prediction_lines` writes (see :mod:`streamlearn.learn.bank_answers`)
    outputs: ClassVar[tuple[str, ...]] = bank_answers.BANK_OUTPUTS
    label_output: ClassVar[str] = "class"
    #: what :meth:`answers` writes: one JSON object per example
    answer_type: ClassVar[str] = "application/json"

    #: the learner whose class and parameters every label's learner takes
    base: LinearLearner
    #: kappa of the per-label margin of positives (PAUM banks), or None
    tau_pos_kappa: float | None
    #: what the bank has learned: labels, learners, their arrays, the shared buffer
    state: BankState
    #: the class calibration, and the examples and passes it was fitted at
    class_fit: tuple[Softmax, int, int] | None

    @property
    def algorithm(self) -> str:
        """The learners' algorithm name."""
        return self.base.algorithm

    # -- what the bank holds -------------------------------------------------------------

    @property
    def labels_(self) -> npt.NDArray[np.float64]:
        """Label values by label id (the order in which they first appeared)."""
        return np.array(self.state.label_values, dtype=np.float64)

    @property
    def n_labels(self) -> int:
        """Number of labels (learners)."""
        return len(self.state.label_values)

    def labels_to_learn(self) -> npt.NDArray[np.float64]:
        """Every label value the bank has a learner for or will have one for: those of
        the examples an older version's state held back for ``delta='auto'`` too
        (sorted).

        >>> from streamlearn.learn import PDM, ModelBank
        >>> bank = ModelBank(PDM(eps=0.1)).learn(np.eye(2), [[4], [2, 9]])
        >>> bank.labels_.tolist(), bank.labels_to_learn().tolist()
        ([4.0, 2.0, 9.0], [2.0, 4.0, 9.0])
        """
        held = [rows.labels for rows in self.state.window.pending]
        return np.unique(np.concatenate([self.labels_, *held]))

    def features_to_learn(self) -> int:
        """One more than the largest feature index the bank has weights for or will have
        them for: those of the examples an older version's state held back for
        ``delta='auto'`` too.

        >>> from streamlearn.learn import PDM, ModelBank
        >>> bank = ModelBank(PDM(eps=0.1)).learn(np.eye(3), [[4], [2], [9]])
        >>> bank.n_features_in_, bank.features_to_learn()
        (3, 3)
        """
        return max(self.state.n_features, self.state.window.features_spanned())

    @property
    def delta_(self) -> float | None:
        """The bank's Delta; None while ``delta='auto'`` still waits for its examples."""
        return self.state.delta_value

    @property
    def n_features_in_(self) -> int:
        """One more than the largest feature index seen."""
        return self.state.n_features

    @property
    def examples_presented(self) -> int:
        """Examples presented to the bank (not those ``delta='auto'`` still holds)."""
        return self.state.examples_seen

    @property
    def stream_judged(self) -> int:
        """Presented examples with at least one label (those :attr:`stream_mistakes`
        judges)."""
        return int(self.state.progressive[0])

    @property
    def stream_mistakes(self) -> int:
        """Progressive multi-class mistakes: of the presented examples with at least one
        label, those whose argmax label just before learning them (ties to the label seen
        first) was not one of their labels (for single-label examples, multi-class errors;
        for label sets, the one-error). An example that brings a new label is judged over
        the labels known before it."""
        return int(self.state.progressive[1])

    @property
    def positives_(self) -> npt.NDArray[np.int64]:
        """Per label id, how many presented examples carried the label."""
        return self.state.positives[: self.n_labels].copy()

    @property
    def buffer(self) -> SharedReplayBuffer:
        """The shared replay buffer (read it, do not modify it)."""
        return self.state.buffer

    @property
    def held_examples(self) -> int:
        """Examples ``delta='auto'`` holds back, not yet in the bank."""
        return self.state.window.held_examples

    def kept_every_example(self) -> bool:
        """Whether the buffer holds every example learned (none evicted, none too large)."""
        return self.state.buffer.evicted == 0 and self.state.buffer.unbuffered == 0

    @property
    def converged(self) -> bool:
        """Whether every learner's last full replay pass made no update."""
        return all(learner.converged for learner in self.learners())

    def allocated_bytes(self) -> int:
        """Bytes of every label's weights and of the shared buffer (its features once,
        the rows of signs and slack of every label) as allocated."""
        return int(self.state.weights.nbytes) + self.state.buffer.allocated_bytes

    def learners(self) -> list[LinearLearner]:
        """The learners by label id, bound to the bank's arrays (valid until the bank
        learns again): each is a full binary learner (``coef_``, ``summary()``, ...) to
        read; learn through the bank, never through them."""
        for label in range(self.n_labels):
            self.state.bind(label)
        return list(self.state.learners)

    def learner(self, label: float) -> LinearLearner:
        """The binary learner of one label value (to read, as :meth:`learners`)."""
        if float(label) not in self.state.label_ids:
            raise KeyError(f"no label {label!r} in the bank")
        label_id = self.state.label_ids[float(label)]
        self.state.bind(label_id)
        return self.state.learners[label_id]

    @property
    def tau_pos_(self) -> npt.NDArray[np.float64]:
        """Banks of learners with ``tau_pos`` (PAUM): each label's current margin of
        positives (by label id)."""
        return np.array([getattr(learner, "tau_pos", math.nan) for learner in self.state.learners])

    # -- prediction ----------------------------------------------------------------------

    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:
        """Decision values w_l . x + b_l, one row per example, one column per label id."""
        indptr, indices, values = as_rows(X)
        out = np.zeros((indptr.shape[0] - 1, self.n_labels), dtype=np.float64)
        for label, learner in enumerate(self.learners()):
            out[:, label] = scaled_decisions(
                (indptr, indices, values), learner.state.weights, learner.output_scale,
                learner.intercept_,
            )  # fmt: skip
        return out

    def decision_row(
        self, indices: npt.NDArray[np.integer[Any]], values: npt.NDArray[np.float64]
    ) -> npt.NDArray[np.float64]:
        """Decision values of one example (any order, no repeated index) per label id, in
        the engine's units ``scale (w . x + rho beta)`` (for PAUM before the learning
        rate): for callers that hold one example. Indices beyond the features seen
        weigh 0; a negative one raises :class:`InvalidInputError`.

        >>> from streamlearn.learn import PDM, ModelBank
        >>> bank = ModelBank(PDM(delta=0.0)).learn(np.eye(2), [3, 4])
        >>> bank.decision_row(np.array([0, 5]), np.array([1.0, 9.0])).round(3).tolist()
        [1.0, -1.0]
        """
        n = self.n_labels
        if indices.shape[0] and indices.min() < 0:
            raise InvalidInputError(f"feature index {indices.min()} is negative")
        known = indices < self.state.weights.shape[1]
        if not known.all():
            indices, values = indices[known], values[known]
        scalars = self.state.scalars[:n]
        dots = self.state.weights[:n, indices] @ values
        out: npt.NDArray[np.float64] = scalars[:, SCALE] * (dots + self.base.rho * scalars[:, BETA])
        return out

    def canonical_decisions(
        self, indices: npt.NDArray[np.int64], values: npt.NDArray[np.float64], decide: bool
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
        """One raw example (any order, zeros and repeated indices allowed) in canonical
        form (zeros dropped, indices sorted, repeated ones added up, as ``as_rows`` makes
        it), with, when ``decide``, its :meth:`decision_row` per label id; None when a
        value is NaN or infinite. One compiled call, for callers that hold one example.
        A negative index, one above 2^31 - 2, or values whose squares add up to more
        than float64 holds raise :class:`InvalidInputError`.

        >>> from streamlearn.learn import PDM, ModelBank
        >>> bank = ModelBank(PDM(delta=0.0)).learn(np.eye(2), [3, 4])
        >>> raw = np.array([1, 0, 1]), np.array([1.0, 2.0, 3.0])
        >>> idx, val, f = bank.canonical_decisions(*raw, decide=True)
        >>> idx.tolist(), val.tolist(), f.round(3).tolist()
        ([0, 1], [2.0, 4.0], [-2.0, 2.0])
        """
        n = indices.shape[0]
        out_idx = np.empty(n, dtype=np.int32)
        out_val = np.empty(n, dtype=np.float64)
        n_labels = self.n_labels if decide else 0
        out_f = np.empty(n_labels, dtype=np.float64)
        nnz = canonical_decisions(
            indices, values, out_idx, out_val, self.state.weights, self.state.scalars, n_labels,
            float(self.base.rho), out_f,
        )  # fmt: skip
        if nnz == -RowStatus.NOT_FINITE:
            return None
        if nnz == -RowStatus.BAD_INDEX:
            bad = indices[(indices < 0) | (indices > MAX_FEATURE_INDEX)][0]
            raise InvalidInputError(f"feature index {bad} is outside [0, {MAX_FEATURE_INDEX}]")
        if nnz == -RowStatus.TOO_LARGE:
            raise InvalidInputError(
                "the example's values are too large: the sum of their squares is above "
                f"{MAX_ROW_SQNORM:g}"
            )
        return out_idx[:nnz], out_val[:nnz], out_f

    def margin_units(self) -> npt.NDArray[np.float64]:
        """Per label id, the learner's margin unit in the units of :meth:`decision_row`:
        ``||a||^2 / t`` (``||a||^2`` for a convex combination, as Kozinec's), an upper
        bound on the smallest a . y_k of its learned examples; NaN before its first
        update."""
        n = self.n_labels
        sqnorm = self.state.scalars[:n, SQNORM]
        updates = self.state.scalars[:n, UPDATES]
        per_update = not self.base.entry.convex_combination
        units = sqnorm / np.where(updates > 0.0, updates, 1.0) if per_update else sqnorm.copy()
        units[(updates <= 0.0) | (sqnorm <= 0.0)] = math.nan
        result: npt.NDArray[np.float64] = units
        return result

    def predict(self, X: Any) -> npt.NDArray[np.float64]:
        """Multi-class: the label value of the largest decision value (ties: the lowest
        label id, i.e. the label seen first)."""
        if self.n_labels == 0:
            raise StateError("the bank has no label yet")
        best: npt.NDArray[np.float64] = self.labels_[np.argmax(self.decision_function(X), axis=1)]
        return best

    def predict_sets(self, X: Any) -> list[npt.NDArray[np.float64]]:
        """Multi-label: per example, the label values with a positive decision value,
        by label id."""
        positive = self.decision_function(X) > 0.0
        values = self.labels_
        return [values[row] for row in positive]

    def rank(self, X: Any) -> npt.NDArray[np.float64]:
        """Per example, every label value ordered by decreasing decision value (ties:
        lower label id first)."""
        scores = self.decision_function(X)
        return self.labels_[np.argsort(-scores, axis=1, kind="stable")]

    def predict_proba(self, X: Any) -> npt.NDArray[np.float64]:
        """Each label's calibrated probability, one column per label id: its learner's
        ``predict_proba`` (a Platt sigmoid of the decision value in margin units, fitted
        on the window with that label's signs). The columns need not add up to 1: each
        answers "this label or not" (normalise them for a multi-class distribution)."""
        indptr, indices, values = as_rows(X)
        out = np.zeros((indptr.shape[0] - 1, self.n_labels), dtype=np.float64)
        for label, learner in enumerate(self.learners()):
            out[:, label] = learner.predict_proba((indptr, indices, values))[:, 1]
        return out

    def class_probabilities(self, X: Any) -> npt.NDArray[np.float64]:
        """Multi-class probabilities, one column per label id, each row adding up to 1:
        the softmax of the decision values times one scale fitted on the window's
        examples that carry one label (:meth:`class_calibration`). The most probable
        label is always :meth:`predict`'s."""
        return self.class_calibration().probabilities(self.decision_function(X))

    def class_calibration(self) -> Softmax:
        """The temperature of :meth:`class_probabilities`, fitted on an even sample of
        the window (8192 examples at most) with the current model; fitted again on the
        schedule of ``LinearLearner.calibration`` (after a replay, or once as many
        examples as at the last fit have been learned, 16 at least, 256 at most)."""
        passes = sum(learner.state.passes for learner in self.learners())
        fitted = self.class_fit
        if fitted is not None:
            softmax, examples, fitted_passes = fitted
            if passes == fitted_passes and not calibration_due(examples, self.state.examples_seen):
                return softmax
        features = self.state.buffer.features
        stride = calibration_stride(len(features))
        sample = features.examples(stride)
        signs = self.state.buffer.signs[: self.n_labels][:, features.live_slots()[::stride]]
        single = (signs > 0).sum(axis=0) == 1
        scores = self.decision_function((sample.indptr, sample.indices, sample.values))
        truth = np.argmax(signs[:, single] > 0, axis=0)
        softmax = fit_temperature(scores[single], truth)
        self.class_fit = (softmax, self.state.examples_seen, passes)
        return softmax

    def predictor(self) -> BankPredictor:
        """A frozen copy that answers as this bank does now, from any thread: every
        label's weights, intercept, margin unit and calibration."""
        frozen = [learner.predictor() for learner in self.learners()]
        weights = np.zeros((len(frozen), self.n_features_in_))
        for label, one in enumerate(frozen):
            weights[label, : one.weights.shape[0]] = one.weights
        return BankPredictor(
            labels=tuple(bank_answers.label_value(v) for v in self.labels_.tolist()),
            weights=weights,
            scales=np.array([one.scale for one in frozen]),
            intercepts=np.array([one.intercept for one in frozen]),
            margin_factors=np.array([one.margin_factor for one in frozen]),
            calibrations=tuple(one.calibration for one in frozen),
        )

    def answers(self, X: Any) -> list[bytes]:
        """Each row's prediction as the daemon sends it: a JSON object
        (:func:`~streamlearn.learn.bank_answers.bank_prediction`)."""
        return bank_answers.bank_answers(self, self.decision_function(X))

    def prediction_lines(self, rows: ParsedRows, output: str) -> Iterator[str]:
        """One line per parsed line, as ``output`` writes it (one of :attr:`outputs`:
        label sets, the class, the ranking or every score); ``nan`` for a rejected line."""
        return bank_answers.bank_lines(self, rows, bank_answers.bank_scores(self, rows), output)

    def evaluate(
        self, parts: Iterable[ParsedRows], on_rejected: Callable[[list[Rejected]], None]
    ) -> dict[str, Any]:
        """Per-label and averaged figures (and multi-class ones where every row has one
        label): :func:`~streamlearn.learn.bank_answers.evaluate_bank`."""
        return bank_answers.evaluate_bank(self, parts, on_rejected)

    def exported_weights(self) -> npt.NDArray[np.float64]:
        """One row of weights per label id."""
        return bank_answers.bank_weights(self)

    def buffer_rows(self) -> LabelledRows:
        """The buffered examples, oldest first, each with its label set: the label values
        whose learners take it as a positive."""
        feats = self.state.buffer.features
        held = feats.examples()
        positive = self.state.buffer.signs[: self.n_labels][:, feats.live_slots()] > 0
        counts = positive.sum(axis=0)
        label_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        labels = np.concatenate(
            [self.labels_[positive[:, i]] for i in range(held.n_examples)] or [np.zeros(0)]
        )
        return LabelledRows(held.indptr, held.indices, held.values, label_ptr, labels)

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` shows of a bank."""
        return bank_answers.describe_bank(self)

    # -- reports -------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Bank-wide counts, and per label its learner's summary (certificate included):
        :func:`~streamlearn.learn.bank_answers.bank_summary`."""
        return bank_answers.bank_summary(self)
