"""The read side of a binary learner: what it answers and reports from its learned state.

A :class:`~streamlearn.learn.base.LinearLearner` changes its state (learning, replay,
Delta, its state encoding); this, its base, only reads it: the figures of the model
(``coef_``, ``intercept_``, counts), decision values, predictions, calibrated
probabilities, frozen predictors, the daemon's answers and the margin certificate.
It needs the learner's :class:`~streamlearn.learn.state.LearnerState`, its
augmentation ``rho``, its table entry (the rule's output factor), its ``delta='auto'``
window and its calibration.

>>> import numpy as np
>>> from streamlearn import PDM
>>> learner = PDM(delta=0.0).fit(np.eye(2), [1, -1])
>>> isinstance(learner, BinaryModelView), learner.predict(np.eye(2)).tolist()
(True, [1, -1])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from streamlearn.learn import answers
from streamlearn.learn.calibration import Platt
from streamlearn.learn.certificate import certificate
from streamlearn.learn.inputs import as_rows
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.learner_summary import learner_summary
from streamlearn.learn.predictor import (
    BinaryPredictor,
    calibrated,
    dual_predictor,
    scaled_decisions,
)
from streamlearn.learn.state import LearnerState
from streamlearn.learn.window import AutoDeltaWindow
from streamlearn.learn.window_calibration import LearnerCalibration
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.replay import ReplayBuffer
from streamlearn.types import Batch

if TYPE_CHECKING:
    from streamlearn.learn.table import LearnerEntry


class BinaryModelView:
    """What a binary learner answers and reports, read from its state (see the module
    doc)."""

    #: the table entry the learner's class was made from
    entry: ClassVar[LearnerEntry]
    #: the algorithm's name (``pdm``, ``paum``, ...)
    algorithm: ClassVar[str] = ""
    rho: float
    forget: str
    #: what the learner has learned
    state: LearnerState
    #: the examples that fix Delta while ``delta='auto'`` waits for them
    window: AutoDeltaWindow[Batch]
    #: the Platt scaling of the probabilities (the window's fit, or one fixed)
    calibrator: LearnerCalibration

    @property
    def delta_(self) -> float | None:
        """The Delta in use; None while ``delta='auto'`` still waits for its examples."""
        return self.state.delta

    @property
    def n_features_in_(self) -> int:
        """One more than the largest feature index seen."""
        return self.state.n_features

    def features_to_learn(self) -> int:
        """One more than the largest feature index the learner has weights for or will
        have them for: those of the examples an older version's state held back for
        ``delta='auto'`` too.

        >>> from streamlearn import PDM
        >>> model = PDM(eps=0.1).learn(np.eye(3), [1, -1, 1])
        >>> model.n_features_in_, model.features_to_learn()
        (3, 3)
        """
        return max(self.state.n_features, self.window.features_spanned())

    @property
    def updates(self) -> float:
        """t, the number of updates (a multiple update of lambda counts lambda)."""
        return self.state.updates

    @property
    def examples_presented(self) -> int:
        """New examples presented so far (not those ``delta='auto'`` still holds)."""
        return self.state.examples_seen

    @property
    def stream_judged(self) -> int:
        """New examples judged just before learning them: every one presented."""
        return self.state.examples_seen

    @property
    def stream_mistakes(self) -> int:
        """New examples the model got wrong just before learning them (progressive)."""
        return int(self.state.stats[3])

    @property
    def output_scale(self) -> float:
        """Factor from the engine's weights to the reported ones (for PAUM, times the
        learning rate)."""
        return self.state.scale * self.rule_output_factor()

    def rule_output_factor(self) -> float:
        """:attr:`output_scale` without the state's own scale."""
        factor = self.entry.output_factor
        return 1.0 if factor is None else float(factor(self))

    @property
    def coef_(self) -> npt.NDArray[np.float64]:
        """Dense weights w over features ``0 .. n_features_in_ - 1``."""
        state = self.state
        return state.weights[: state.n_features] * self.output_scale

    @property
    def intercept_(self) -> float:
        """The bias rho * beta."""
        return float(self.rho * self.state.scalars[0] * self.output_scale)

    @property
    def alpha_(self) -> npt.NDArray[np.float64]:
        """Slack coordinates alpha_k of the buffered examples, oldest first, in the units of
        ``coef_`` (a . y_k = l_k (w . x_k + b) + Delta^2 alpha_k)."""
        return self.state.buffer.alpha() * self.output_scale

    @property
    def buffer(self) -> ReplayBuffer:
        """The replay buffer (read it, do not modify it)."""
        return self.state.buffer

    @property
    def held_examples(self) -> int:
        """Examples ``delta='auto'`` holds back, not yet in the model."""
        return self.window.held_examples

    def kept_every_example(self) -> bool:
        """Whether the buffer holds every example learned (none evicted, none too large)."""
        buf = self.state.buffer
        return buf.evicted == 0 and buf.unbuffered == 0

    def margin_unit(self) -> float:
        """``||a||^2 / t`` in the engine's units (``||a||^2`` when a is a convex
        combination, as Kozinec's): an upper bound on the smallest a . y_k of the learned
        examples; NaN before the first update."""
        state = self.state
        if state.updates <= 0.0 or state.sqnorm <= 0.0:
            return math.nan
        return state.sqnorm if self.entry.convex_combination else state.sqnorm / state.updates

    @property
    def forgets(self) -> bool:
        """Whether evicted examples leave the model (``forget='window'``)."""
        return self.forget == "window"

    @property
    def evictions_to_forget(self) -> int:
        """Examples evicted from the buffer whose contributions the model still holds
        until the next replay takes them out: those the last replay saw
        (``forget='window'``; 0 with ``'never'``, whose model keeps them for good)."""
        return self.state.evictions_pending if self.forgets else 0

    # -- answers -------------------------------------------------------------------------

    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:
        """w . x + rho * beta for every row of X (features never seen weigh 0)."""
        indptr, indices, values = as_rows(X)
        return scaled_decisions((indptr, indices, values), self.state.weights,
                                self.output_scale, self.intercept_)  # fmt: skip

    def predict(self, X: Any) -> npt.NDArray[np.int64]:
        """+1 where the decision value is positive, -1 elsewhere."""
        return np.where(self.decision_function(X) > 0.0, 1, -1).astype(np.int64)

    def margin_scores(self, X: Any) -> npt.NDArray[np.float64]:
        """Decision values in margin units: w . x + b over :meth:`margin_unit` (in the
        units of ``coef_``); the decision values themselves before the first update."""
        factor = self._margin_factor()
        scores = self.decision_function(X)
        return scores * factor if math.isfinite(factor) else scores

    def _margin_factor(self) -> float:
        """1 / (:meth:`margin_unit` in the units of ``coef_``); NaN before the first update."""
        unit = self.margin_unit()
        return 1.0 / (unit * self.rule_output_factor()) if unit > 0.0 else math.nan

    def calibration(self) -> Platt:
        """The Platt scaling of :meth:`margin_scores` that :meth:`predict_proba` uses:
        the one :meth:`fix_calibration` set, else :meth:`window_calibration`."""
        return self.calibrator.current(self)

    def fix_calibration(self, platt: Platt | None) -> None:
        """Use ``platt`` for the probabilities from now on (None: the window's again);
        a learning group sets the one its members agree on."""
        self.calibrator.fixed = platt

    def window_calibration(self) -> Platt:
        """The Platt scaling of :meth:`margin_scores` fitted on the window with the
        current model, fitted again when due (:mod:`streamlearn.learn.window_calibration`)."""
        return self.calibrator.of_window(self)

    def predict_proba(self, X: Any) -> npt.NDArray[np.float64]:
        """Calibrated probabilities: one row per example, the columns for -1 and +1
        (:meth:`calibration`)."""
        positive = calibrated(self.decision_function(X), self._margin_factor(), self.calibration())
        return np.column_stack([1.0 - positive, positive])

    def class_probabilities(self, X: Any) -> npt.NDArray[np.float64]:
        """:meth:`predict_proba` (the model interface's name for a distribution over the
        classes)."""
        return self.predict_proba(X)

    def predictor(self) -> BinaryPredictor:
        """A frozen copy that answers as this learner does now, from any thread."""
        state = self.state
        return BinaryPredictor(
            weights=state.weights[: state.n_features].copy(),
            scale=self.output_scale,
            intercept=self.intercept_,
            margin_factor=self._margin_factor(),
            calibration=self.calibration(),
        )

    def predictor_of(
        self,
        weights: npt.NDArray[np.float64],
        *,
        beta: float,
        updates: float,
        slack: float,
        calibration: Platt,
        delta: float | None = None,
    ) -> BinaryPredictor:
        """A frozen copy of another model held in this learner's units (a learning
        group's common model): :func:`~streamlearn.learn.predictor.dual_predictor`."""
        return dual_predictor(self, weights, beta=beta, updates=updates, slack=slack,
                              calibration=calibration, delta=delta)  # fmt: skip

    def allocated_bytes(self) -> int:
        """Bytes of the weights and the replay buffer as allocated."""
        return int(self.state.weights.nbytes) + self.state.buffer.allocated_bytes

    #: what :meth:`prediction_lines` writes: decision values, or labels +1/-1
    outputs: ClassVar[tuple[str, ...]] = answers.BINARY_OUTPUTS
    label_output: ClassVar[str] = "labels"
    #: what :meth:`answers` writes: ``"score label"`` text
    answer_type: ClassVar[str] = "text/plain; charset=utf-8"

    def answers(self, X: Any) -> list[bytes]:
        """Each row's prediction as the daemon sends it: ``"score label"`` (label +1
        where the score is positive, else -1)."""
        return answers.binary_answers(self.decision_function(X))

    def prediction_lines(self, rows: ParsedRows, output: str) -> Iterator[str]:
        """One line per parsed line: the decision value (``scores``) or the label
        ``1``/``-1`` (``labels``); a rejected line gives ``nan`` (or ``0``)."""
        scores = (
            self.decision_function((rows.indptr, rows.indices, rows.values))
            if rows.n_rows
            else np.zeros(0)
        )
        return answers.binary_lines(rows, scores, output)

    def evaluate(
        self, parts: Iterable[ParsedRows], on_rejected: Callable[[list[Rejected]], None]
    ) -> dict[str, Any]:
        """Binary figures (accuracy, precision, recall, F1, average precision, AUC) on
        labelled rows; rows without one binary label go to ``on_rejected``."""
        return answers.evaluate_binary(self, parts, on_rejected)

    def exported_weights(self) -> npt.NDArray[np.float64]:
        """``coef_``."""
        return self.coef_

    def buffer_rows(self) -> LabelledRows:
        """The buffered examples, oldest first, each with its label +1 or -1."""
        held = self.state.buffer.examples()
        singletons = np.arange(held.n_examples + 1, dtype=np.int64)
        return LabelledRows(
            held.indptr, held.indices, held.values, singletons, held.labels.astype(np.float64)
        )

    # -- certificate ---------------------------------------------------------------------

    def margin_upper_bound(self) -> float:
        """An upper bound on the buffer's maximum directional margin.

        ||a|| / t for a run of perceptron updates without eviction; in general
        ||h|| / s with h the buffered examples' share of a (see
        :class:`~streamlearn.learn.certificate.Certificate`).
        """
        return certificate(self.state, self.rho).upper_bound

    def class_margins(self) -> tuple[float, float]:
        """min a . y_k / ||a|| over the buffered negatives and positives (inf if none)."""
        return certificate(self.state, self.rho).class_margins()

    @property
    def converged(self) -> bool:
        """True when the last full replay pass made no update and nothing changed since."""
        return self.state.converged

    def summary(self) -> dict[str, Any]:
        """Counts and the margin certificate of the current solution on the buffer.

        ``margin_achieved`` is gamma_d' = min_k a . y_k / ||a|| over the buffer,
        ``margin_upper_bound`` bounds the buffer's maximum margin from above and
        ``certified_gap`` = 1 - margin_achieved / margin_upper_bound bounds how far the
        solution is from the maximum margin, relatively: it lies in [0, 1] while the
        achieved margin is positive (up to rounding), and exceeds 1 while some buffered
        example is still on the wrong side. All three are about the buffered examples;
        they stay valid after eviction (see
        :class:`~streamlearn.learn.certificate.Certificate`).
        """
        return learner_summary(self)
