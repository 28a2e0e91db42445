"""A one-vs-rest model bank: one binary learner per label over one shared replay buffer.

Every label gets a learner of the same class and parameters (PDM, PAUM, ...) that
learns "this label" (+1) against "any other" (-1). The examples are parsed once and
stored once, in a :class:`~streamlearn.replay.shared.SharedReplayBuffer`; each learner
keeps its own weights, scalars, statistics and, aligned with the shared slots, the sign
and slack coordinate alpha_k of every buffered example for its label.

Labels appear as the stream goes. When an example brings a label never seen before,
the new label's learner is created and, before that example, **presented every example
then in the buffer once, oldest first, as a negative** (exactly as
``learn_stream`` would have presented them had the learner existed from the start).
Then the example is presented to every learner. Examples evicted before the label
appeared, and replay passes that ran before it, are not repeated; otherwise a learner
of the bank is bit for bit the standalone learner trained on the same stream with the
labels mapped to +1/-1 for its label.

Delta (``delta='auto'``) is fixed once for the whole bank, from the first
min(1000, buffer_size) examples, as a single learner fixes it. Each label's replay
passes use its own active sets and the permutation ``pass_permutation(seed, p)`` of its
own pass count p, as a standalone learner with the same seed would.

Prediction: :meth:`ModelBank.decision_function` gives one column per label (label ids
in order of first appearance); :meth:`ModelBank.predict` is the multi-class argmax (ties
go to the lowest label id, the label seen first); :meth:`ModelBank.predict_sets` gives
every label with a positive decision value; :meth:`ModelBank.rank` orders all labels by
decision value.

PAUM per label: with ``tau_pos_kappa`` (kappa), label l's margin of positives is
``tau_pos * 2 / (1 + exp(-kappa * c_l))`` with c_l the fraction of the examples presented
so far that carry label l (the paper's proposal tau_pos proportional to
1/(1 + exp(-kappa c)), scaled so that a label with c -> 0 gets ``tau_pos``). c_l is
measured when the label's learner starts (the example that brings it counted; 0 for a
label started by :meth:`ModelBank.declare_labels`) and again
at the start of every :meth:`ModelBank.replay`, from all examples presented so far
(evicted ones included); stream learning between two replays keeps it fixed. So after
a replay to convergence every buffered example meets PAUM's condition with tau_pos from
the label's frequency over the whole stream.

>>> import numpy as np
>>> from streamlearn.learn import PDM
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 2.0]])
>>> bank = ModelBank(PDM(eps=0.1, delta=0.0)).fit(X, [[1], [2], [1, 2], [2]])
>>> bank.labels_.tolist(), bank.predict_sets(X)[2].tolist()
([1.0, 2.0], [1.0, 2.0])
>>> bank.predict(np.array([[0.0, 3.0]])).tolist()
[2.0]
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.bank_one import canonical_decisions
from streamlearn._kernels.rows import MAX_ROW_SQNORM
from streamlearn.errors import (
    InvalidInputError,
    InvalidParameterError,
    StateError,
)
from streamlearn.learn import bank_answers
from streamlearn.learn.bank_codec import encode_bank, load_bank, restore_bank
from streamlearn.learn.bank_state import BankState
from streamlearn.learn.bank_stream import add_label, present, present_one
from streamlearn.learn.base import (
    LinearLearner,
    arena_cells,
    refuse_rebuilding,
    refuse_small_buffer,
)
from streamlearn.learn.calibration import Softmax, fit_temperature
from streamlearn.learn.inputs import as_rows
from streamlearn.learn.labelsets import (
    HasLabelSets,
    LabelledRows,
    apply_bank_budget,
    as_labelled_rows,
    indicator_columns,
)
from streamlearn.learn.model import (
    Examples,
    Model,
    ModelLimits,
    Rows,
    learn_and_answer,
    learn_on_schedule,
)
from streamlearn.learn.params import (
    STREAM_BUFFER_NNZ,
    STREAM_BUFFER_SIZE,
    finite,
    plain_params,
    without_bank_params,
)
from streamlearn.learn.predictor import BankPredictor, scaled_decisions
from streamlearn.learn.state import (
    BETA,
    SCALE,
    SQNORM,
    UPDATES,
)
from streamlearn.learn.table import LEARNERS, LearnerTable
from streamlearn.learn.window_calibration import calibration_due, calibration_stride
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.replay import ReplaySchedule
from streamlearn.replay.shared import SharedReplayBuffer
from streamlearn.types import MAX_FEATURE_INDEX, Batch, RowStatus


class ModelBank:
    """One-vs-rest: a binary learner per label, one shared buffer (see the module doc).

    Parameters
    ----------
    base
        A learner whose class and parameters every label's learner takes (only its
        parameters are used, not its state).
    tau_pos_kappa
        Learners with a margin of positives ``tau_pos`` (PAUM): kappa of the per-label
        margin ``tau_pos * 2 / (1 + exp(-kappa c))``, c the label's fraction of
        positives. None (default) gives every label the base's ``tau_pos``. kappa < 0
        gives rarer labels larger margins.
    """

    #: what :meth:`prediction_lines` writes (see :mod:`streamlearn.learn.bank_answers`)
    outputs: ClassVar[tuple[str, ...]] = bank_answers.BANK_OUTPUTS
    label_output: ClassVar[str] = "class"
    #: what :meth:`answers` writes: one JSON object per example
    answer_type: ClassVar[str] = "application/json"

    def __init__(self, base: LinearLearner, *, tau_pos_kappa: float | None = None) -> None:
        if not isinstance(base, LinearLearner):
            raise InvalidParameterError("base must be a learner (PDM(), PAUM(), ...)")
        if tau_pos_kappa is not None:
            if "tau_pos" not in base.param_names():
                raise InvalidParameterError("tau_pos_kappa is a parameter of PAUM banks only")
            tau_pos_kappa = finite("tau_pos_kappa", tau_pos_kappa)
        self.base = base
        self.tau_pos_kappa = tau_pos_kappa
        #: what the bank has learned: labels, learners, their arrays, the shared buffer
        self.state = BankState(
            base,
            SharedReplayBuffer(
                base.buffer_size or STREAM_BUFFER_SIZE, base.buffer_nnz or STREAM_BUFFER_NNZ
            ),
        )
        #: the class calibration, and the examples and passes it was fitted at
        self.class_fit: tuple[Softmax, int, int] | None = None
        #: the learner an interrupted replay resumes with
        self._replay_from = 0

    @property
    def algorithm(self) -> str:
        """The learners' algorithm name."""
        return self.base.algorithm

    @property
    def one_vs_rest(self) -> bool:
        """True: one learner per label."""
        return True

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

        >>> from streamlearn.learn import PDM
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

        >>> from streamlearn.learn import PDM
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

    # -- learning ------------------------------------------------------------------------

    def learn(self, X: Any, Y: Any) -> Self:
        """Present each example once, in order: X as learners take it, Y a 1-D array of
        class labels, a sequence of label sets, a ``(label_ptr, labels)`` pair of 1-D
        numpy arrays, or an indicator matrix of 0 and 1 (2-D numpy or scipy sparse):
        then every column is a label, 0 to n_columns - 1, declared first, whether any
        row holds it or not."""
        rows = as_labelled_rows(X, Y)
        columns = indicator_columns(Y)
        if columns is not None:
            self.declare_labels(np.arange(columns))
        self.learn_rows(rows)
        return self

    def admit(self, rows: ParsedRows, limits: ModelLimits) -> tuple[Examples, list[Rejected]]:
        """Rows with their label sets (any numbers, several or none: a negative for every
        label), without those that would take the bank past ``limits``: more labels than
        ``max_labels``, or more weights (labels x features) than ``max_weights``."""
        return apply_bank_budget(
            LabelledRows.from_arrays(rows), rows.line_numbers, rows.rejected,
            self.labels_to_learn(),
            sys.maxsize if limits.max_labels is None else limits.max_labels,
            n_features=self.features_to_learn(), max_weights=limits.max_weights,
        )  # fmt: skip

    def learn_rows(self, rows: Examples | HasLabelSets) -> None:
        """:meth:`learn` for rows with label sets (e.g. the svmlight parser's output); a
        batch's +1/-1 labels are label sets of one label each."""
        labelled = _labelled(rows)
        self._release_held()  # what the state of an older version held back
        window = self.state.window
        if window.room and labelled.n_examples:
            if self.state.delta_value is None:  # the first example: a provisional Delta
                self.state.fix_delta(window.provisional(labelled))
            taken = window.observe(labelled)
            if window.room:
                present(self, labelled)
                return
            present(self, labelled.slice(0, taken))
            self._settle_delta()
            labelled = labelled.slice(taken, labelled.n_examples)
        present(self, labelled)

    def learn_on_schedule(self, rows: Examples, schedule: ReplaySchedule, seen: int) -> int:
        """:meth:`learn_rows`, replaying wherever ``schedule`` says once ``seen`` stream
        examples came before; returns the new count."""
        return learn_on_schedule(self, _labelled(rows), schedule, seen)

    def learn_and_answer(
        self,
        rows: Examples,
        questions: Rows,
        before: npt.NDArray[np.int64],
        schedule: ReplaySchedule,
        seen: int,
    ) -> tuple[int, list[bytes]]:
        """:meth:`learn_on_schedule`, answering question ``j`` just before row
        ``before[j]`` is learned; returns the new count and the answers."""
        return learn_and_answer(self, _labelled(rows), questions, before, schedule, seen)

    def flush(self) -> Self:
        """Settle Delta (``delta='auto'``) from the examples that came, if its window is
        not full yet: the end of a stream."""
        self._flush_pending()
        return self

    def _flush_pending(self) -> None:
        """:meth:`_release_held`, then settle Delta (:meth:`_settle_delta`)."""
        self._release_held()
        self._settle_delta()

    def _release_held(self) -> None:
        """Learn what the state of an older version held back while ``delta='auto'``
        waited for its window, Delta fixed from it as that version did."""
        if self.state.window.pending:
            held, delta = self.state.window.release()
            self.state.window.close()
            self.state.fix_delta(delta)
            present(self, held)

    def _settle_delta(self, final: bool = True) -> None:
        """With ``delta='auto'``: the bank's Delta = R/10 over the window's examples so
        far, and every label's state rescaled to it exactly (see
        :mod:`streamlearn.learn.window`). ``final`` once the window is full or the stream
        ends (:meth:`flush`): the window closes; else (a replay) it stays open."""
        window = self.state.window
        if self.base.delta != "auto" or window.seen == 0:
            return
        if final:
            window.close()
        delta = window.delta()
        if delta != self.state.delta_value:
            self.state.fix_delta(delta)
            for learner in self.learners():  # bound: the norms read the buffer's slack
                learner.state.recompute_sqnorm()
                learner.state.converged = False

    def replay(
        self, max_passes: int | None = None, interrupt: Callable[[], bool] | None = None
    ) -> Self:
        """Replay every label's learner (label id order) until a full pass makes no
        update, at most ``max_passes`` full passes each (default: the base's).

        ``interrupt`` (see :meth:`LinearLearner.replay`) ends the replay within or after
        a learner; the next replay starts with the learner after it, so that every
        label gets its turn."""
        self._release_held()
        self._settle_delta(final=False)  # a replay runs under Delta from all that came
        self._update_tau_pos()
        self.state.rules = None
        learners = self.learners()
        for i in range(len(learners)):
            label = (self._replay_from + i) % len(learners)
            learners[label].replay(max_passes, interrupt)
            if interrupt is not None and interrupt():
                self._replay_from = (label + 1) % len(learners)
                break
        return self

    def epoch_pass(self) -> bool:
        """One plain pass over the buffer in arrival order for every learner; returns
        whether none of them updated."""
        self._release_held()
        self._settle_delta(final=False)
        self.state.rules = None
        return all([learner.epoch_pass() for learner in self.learners()])

    def fit(self, X: Any, Y: Any) -> Self:
        """Learn X, Y once and replay to convergence; a bank that has learned nothing
        keeps every example of X in its buffer (see :meth:`size_buffer_for`)."""
        if self.state.examples_seen == 0 and self.state.window.seen == 0 and self.n_labels == 0:
            indptr, _, _ = as_rows(X)
            self.size_buffer_for(indptr.shape[0] - 1, arena_cells(indptr))
        return self.learn(X, Y).flush().replay()

    def size_buffer_for(self, n_examples: int, cells: int) -> None:
        """Make a bank that has learned nothing and has no label yet hold ``n_examples``
        examples of ``cells`` arena cells without evicting any, as a learner's
        :meth:`~streamlearn.learn.base.LinearLearner.size_buffer_for`."""
        if self.state.examples_seen or self.state.window.seen or self.n_labels:
            raise StateError("only a bank that has learned nothing can size its buffer")
        base = self.base
        examples, nonzeros = max(n_examples, 1), max(cells, 1)
        refuse_small_buffer(n_examples, examples, nonzeros, base.buffer_size, base.buffer_nnz)
        self.state.new_buffer(
            SharedReplayBuffer(base.buffer_size or examples, base.buffer_nnz or nonzeros)
        )

    def declare_labels(self, values: Any) -> Self:
        """Start learners for these label values now (in this order), before any example
        brings them; each is presented the buffered examples as negatives (with
        ``tau_pos_kappa``, c is its fraction among them: 0)."""
        try:
            declared = np.asarray(values, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise InvalidInputError(f"label values must be numbers, got {values!r}") from None
        if not np.all(np.isfinite(declared)):
            raise InvalidInputError("label values must be finite numbers")
        for value in declared.tolist():
            if value not in self.state.label_ids:
                add_label(self.state, value, self.tau_pos_for(0, self.state.examples_seen))
        return self

    def learn_example(
        self,
        indices: npt.NDArray[np.int32],
        values: npt.NDArray[np.float64],
        labels: npt.NDArray[np.float64],
    ) -> None:
        """:meth:`learn_rows` of one example (canonical ``indices``: sorted, distinct;
        ``values`` without zeros; ``labels`` its label values, distinct), for callers that
        hold one example at a time: the same result, with less work per call."""
        label_ids = self.state.label_ids
        ids = [label_ids.get(value) for value in labels.tolist()]
        watching = self.state.window.room > 0 or self.state.window.pending
        if not watching and None not in ids:
            present_one(self.state, indices, values, ids)
            return
        self.learn_rows(
            LabelledRows(
                np.array([0, indices.shape[0]], dtype=np.int64),
                indices,
                values,
                np.array([0, labels.shape[0]], dtype=np.int64),
                labels,
            )
        )

    def tau_pos_for(self, positives: int, examples: int) -> float | None:
        """With ``tau_pos_kappa``: the margin of positives of a label carried by
        ``positives`` of ``examples`` examples (None without a kappa)."""
        if self.tau_pos_kappa is None:
            return None
        fraction = positives / examples if examples else 0.0
        tau_pos = float(getattr(self.base, "tau_pos"))  # noqa: B009 - checked at __init__
        return tau_pos * 2.0 / (1.0 + math.exp(-self.tau_pos_kappa * fraction))

    def _update_tau_pos(self) -> None:
        for label, learner in enumerate(self.state.learners):
            tau = self.tau_pos_for(int(self.state.positives[label]), self.state.examples_seen)
            if tau is not None:
                setattr(learner, "tau_pos", tau)  # noqa: B010 - a learner parameter

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

        >>> from streamlearn.learn import PDM
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

        >>> from streamlearn.learn import PDM
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
        """Bank-wide counts, and per label its learner's summary (certificate included)."""
        per_label = []
        for label, learner in enumerate(self.learners()):
            figures = learner.summary()
            figures.pop("algorithm")
            per_label.append(
                {
                    "label": self.state.label_values[label],
                    "positives": int(self.state.positives[label]),
                    **(
                        {"tau_pos": learner.get_params()["tau_pos"]}
                        if _has_tau_pos(learner)
                        else {}
                    ),
                    **figures,
                }
            )
        return {
            "algorithm": self.algorithm,
            "one_vs_rest": True,
            "labels": self.n_labels,
            "examples": self.state.examples_seen,
            "updates": float(sum(p["updates"] for p in per_label)),
            "update_events": sum(p["update_events"] for p in per_label),
            "passes": max((p["passes"] for p in per_label), default=0),
            "converged": self.converged,
            "worst_certified_gap": _worst([p["certified_gap"] for p in per_label]),
            "delta": self.state.delta_value,
            "n_features": self.state.n_features,
            "buffer_examples": len(self.state.buffer),
            "buffer_capacity": self.state.buffer.max_examples,
            "buffer_nnz": self.state.buffer.features.nnz,
            "buffer_evicted": self.state.buffer.features.evicted,
            "evictions_to_forget": max((p["evictions_to_forget"] for p in per_label), default=0),
            "forget": self.base.forget,
            "pending_examples": self.state.window.held_examples,
            "stream_judged": self.stream_judged,
            "stream_mistakes": self.stream_mistakes,
            "per_label": per_label,
        }

    def get_params(self) -> dict[str, Any]:
        """The parameters that define the bank: its learners' (the base's, as passed to
        their class), ``one_vs_rest=True`` and ``tau_pos_kappa`` when set."""
        params: dict[str, Any] = {**self.base.get_params(), "one_vs_rest": True}
        if self.tau_pos_kappa is not None:
            params["tau_pos_kappa"] = self.tau_pos_kappa
        return params

    def with_params(self, params: dict[str, Any]) -> Self:
        """A bank that continues from this one's state with learners of new parameters
        (those the state was built with cannot change; the bank's own,
        :data:`~streamlearn.learn.params.BANK_PARAMS`, stay as they are)."""
        params = without_bank_params(params)
        refuse_rebuilding(self.base.get_params(), params)
        state = self.state_dict()
        state["params"] = plain_params(type(self.base)(**params).get_params())
        return type(self).from_state(state, LearnerTable([self.base.entry]))

    # -- state dictionaries --------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: plain numbers, strings and arrays (new
        ones: the state stays as it is while the bank learns on;
        :mod:`streamlearn.learn.bank_codec`)."""
        return encode_bank(self, self.state.buffer.state_dict())

    def state_to_write(self) -> dict[str, Any]:
        """:meth:`state_dict` for a checkpoint written at once: the buffer's signs and
        slack (a value per label and buffered example, most of a large bank's memory) are
        lent as :class:`~streamlearn.replay.shared.RingColumns`, not copied, and the
        checkpoint codec writes them a few rows at a time, the same bytes as those of
        :meth:`state_dict`. Write it before the bank learns again (a write that finds
        them changed fails); ``np.asarray`` of them gives :meth:`state_dict`'s arrays.

        >>> from streamlearn.checkpoint.codec import encode
        >>> from streamlearn.learn import PDM
        >>> bank = ModelBank(PDM(eps=0.1, delta=1.0)).learn(np.eye(3), [[0], [1], [0, 2]])
        >>> encode(bank.state_to_write(), created=0) == encode(bank.state_dict(), created=0)
        True
        """
        return encode_bank(self, self.state.buffer.state_to_write())

    @classmethod
    def from_state(cls, state: dict[str, Any], learners: LearnerTable = LEARNERS) -> Self:
        """A bank that continues exactly where the one that made ``state`` stopped
        (``learners``: the table its algorithm is found in)."""
        return restore_bank(cls, state, learners)

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (:meth:`state_dict`'s) under this bank's parameters."""
        load_bank(self, state)


def state_to_write(model: Model) -> dict[str, Any]:
    """What a checkpoint written at once holds of ``model``: a bank's
    :meth:`ModelBank.state_to_write` (its largest arrays lent, not copied), any other
    model's ``state_dict()``."""
    if isinstance(model, ModelBank):
        return model.state_to_write()
    return model.state_dict()


def _labelled(rows: Examples | HasLabelSets) -> LabelledRows:
    """Rows as label-set rows (a batch's +1/-1 labels as sets of one)."""
    if isinstance(rows, LabelledRows):
        return rows
    if isinstance(rows, Batch):
        n = rows.n_examples
        ptr = np.arange(n + 1, dtype=np.int64)
        return LabelledRows(rows.indptr, rows.indices, rows.values, ptr, rows.labels.astype(float))
    return LabelledRows.from_arrays(rows)


def _has_tau_pos(learner: LinearLearner) -> bool:
    return "tau_pos" in learner.param_names()


def _worst(gaps: list[float]) -> float:
    """The largest certified gap (NaN when some label has none: not yet certified)."""
    if not gaps or any(math.isnan(g) for g in gaps):
        return math.nan
    return max(gaps)
