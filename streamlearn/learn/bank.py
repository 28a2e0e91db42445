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

What the bank has learned is one public object,
:class:`~streamlearn.learn.bank_state.BankState`; the class decides what to present and
when to replay, and the work lives beside it: presenting examples in
:mod:`~streamlearn.learn.bank_stream`, the state as plain values in
:mod:`~streamlearn.learn.bank_codec`; what it answers and reports from its state is its
base, :class:`~streamlearn.learn.bank_view.BankModelView`.

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
from collections.abc import Callable
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from streamlearn.errors import (
    InvalidInputError,
    InvalidParameterError,
    StateError,
)
from streamlearn.learn.bank_codec import encode_bank, load_bank, restore_bank
from streamlearn.learn.bank_state import BankState
from streamlearn.learn.bank_stream import add_label, present, present_one
from streamlearn.learn.bank_view import BankModelView
from streamlearn.learn.base import (
    LinearLearner,
    arena_cells,
    refuse_rebuilding,
    refuse_small_buffer,
)
from streamlearn.learn.calibration import Softmax
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
    AUTO_DELTAS,
    STREAM_BUFFER_NNZ,
    STREAM_BUFFER_SIZE,
    finite,
    plain_params,
    without_bank_params,
)
from streamlearn.learn.table import LEARNERS, LearnerTable
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.replay import ReplaySchedule
from streamlearn.replay.shared import SharedReplayBuffer
from streamlearn.types import Batch


class ModelBank(BankModelView):
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
        #: the smallest Delta ``delta='auto'`` or ``'first'`` may settle on (a learning
        #: group's agreement, :meth:`agree_delta`; 0 otherwise)
        self.delta_floor = 0.0

    @property
    def one_vs_rest(self) -> bool:
        """True: one learner per label."""
        return True

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
                self.state.fix_delta(max(window.provisional(labelled), self.delta_floor))
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
        self._rescale_to(max(window.delta(), self.delta_floor))

    def _rescale_to(self, delta: float) -> bool:
        """The bank's Delta = ``delta``, every label's ||a||^2 computed again under it;
        whether it changed."""
        if delta == self.state.delta_value:
            return False
        self.state.fix_delta(delta)
        for learner in self.learners():  # bound: the norms read the buffer's slack
            learner.state.recompute_sqnorm()
            learner.state.converged = False
        return True

    def agree_delta(self, floor: float) -> bool:
        """With ``delta='auto'`` or ``'first'``: Delta at least ``floor`` from now on (a
        learning group's members each settle Delta from their own first examples and
        agree on the largest), every label's state rescaled to it exactly when that
        raises it. Returns whether Delta changed."""
        if self.base.delta not in AUTO_DELTAS or not floor > self.delta_floor:
            return False
        self.delta_floor = float(floor)
        current = self.state.delta_value
        if current is None or current >= floor:
            return False
        return self._rescale_to(float(floor))

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
