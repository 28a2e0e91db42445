"""What a one-vs-rest bank has learned: one public object, as a learner's
:class:`~streamlearn.learn.state.LearnerState` is.

A :class:`BankState` holds the shared replay buffer, the labels (values by id, ids by
value), a learner per label and the arrays those learners' states are rows of (weights,
scalars, statistics, positives), the bank's Delta and its counts. A label's learner is
a full binary learner whose state :meth:`BankState.bind` points at its rows and at its
view of the shared buffer. :class:`~streamlearn.learn.bank.ModelBank` decides what to
do with them; :mod:`~streamlearn.learn.bank_stream` presents examples to them and
:mod:`~streamlearn.learn.bank_codec` writes and reads them.

>>> import numpy as np
>>> from streamlearn.learn import PDM, ModelBank
>>> state = ModelBank(PDM(delta=1.0)).learn(np.eye(2), [[3], [4]]).state
>>> state.label_values, state.n_labels, state.weights[: state.n_labels, :2].tolist()
([3.0, 4.0], 2, [[1.0, -1.0], [-1.0, 1.0]])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.engine import N_STATS
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.params import AUTO_DELTAS
from streamlearn.learn.state import grown_weights
from streamlearn.learn.window import AutoDeltaWindow
from streamlearn.replay.shared import SharedReplayBuffer

if TYPE_CHECKING:
    from streamlearn.learn.base import LinearLearner


class BankState:
    """The labels, learners, arrays, buffer and counts of a bank (see the module doc).

    ``base`` is the learner whose class and parameters every label's learner takes;
    ``buffer`` the shared replay buffer to start with.
    """

    def __init__(self, base: LinearLearner, buffer: SharedReplayBuffer) -> None:
        self.base = base
        #: the parameters of every label's learner (but ``tau_pos`` with a kappa)
        self.params = base.get_params()
        self.buffer = buffer
        #: label values by label id (the order in which they first appeared)
        self.label_values: list[float] = []
        #: label ids by value
        self.label_ids: dict[float, int] = {}
        #: the learners by label id (bound to these arrays by :meth:`bind`)
        self.learners: list[LinearLearner] = []
        #: per label id, how many presented examples carried the label
        self.positives = np.zeros(1, dtype=np.int64)
        #: one row per label id (room for more): weights, scalars, statistics
        self.weights = np.zeros((1, 16), dtype=np.float64)
        self.scalars = np.zeros((1, 4), dtype=np.float64)
        self.stats = np.zeros((1, N_STATS), dtype=np.int64)
        self.n_features = 0
        #: examples presented to the bank
        self.examples_seen = 0
        self.delta_value: float | None = None if base.delta in AUTO_DELTAS else float(base.delta)
        #: the examples that fix Delta while ``delta='auto'`` waits for them
        self.window: AutoDeltaWindow[LabelledRows] = AutoDeltaWindow.for_buffer(
            buffer.max_examples, base.rho, LabelledRows.concatenate, base.delta
        )
        #: progressive validation: examples judged, mistakes
        self.progressive = np.zeros(2, dtype=np.int64)
        #: every learner's rule parameters, kept until they change (see :meth:`rule_params`)
        self.rules: npt.NDArray[np.float64] | None = None

    @property
    def n_labels(self) -> int:
        """Number of labels (learners)."""
        return len(self.label_values)

    @property
    def delta_sq(self) -> float:
        """The bank's Delta squared (0 while ``delta='auto'`` waits)."""
        delta = self.delta_value or 0.0
        return delta * delta

    def new_buffer(self, buffer: SharedReplayBuffer) -> None:
        """Start over with ``buffer`` (of a bank that has learned nothing): a window for it."""
        self.buffer = buffer
        base = self.base
        self.window = AutoDeltaWindow.for_buffer(
            buffer.max_examples, base.rho, LabelledRows.concatenate, base.delta
        )

    def bind(self, label: int) -> None:
        """Point learner ``label``'s state at its rows of the arrays and its view of the
        shared buffer."""
        state = self.learners[label].state
        state.borrow(
            weights=self.weights[label],
            scalars=self.scalars[label],
            stats=self.stats[label],
            buffer=self.buffer.view(label),
        )
        state.n_features = self.n_features
        state.delta = self.delta_value

    def new_learner(self, tau_pos: float | None) -> LinearLearner:
        """A learner of the base's class and parameters (``tau_pos`` when given), under
        the bank's Delta."""
        params = dict(self.params)
        if tau_pos is not None:
            params["tau_pos"] = tau_pos
        learner = type(self.base)(**params)
        learner.state.delta = self.delta_value
        return learner

    def add_row(self) -> int:
        """A new label id with rows of zeros (room doubled when full)."""
        label = self.buffer.add_label()
        self.rules = None
        capacity = self.weights.shape[0]
        if label >= capacity:
            self.weights = _grown_rows(self.weights, 2 * capacity)
            self.scalars = _grown_rows(self.scalars, 2 * capacity)
            self.stats = _grown_rows(self.stats, 2 * capacity)
            self.positives = np.concatenate([self.positives, np.zeros(capacity, np.int64)])
        self.weights[label] = 0.0
        self.scalars[label] = [0.0, 0.0, 0.0, 1.0]
        self.stats[label] = 0
        self.positives[label] = 0
        return label

    def grow_features(self, n_features: int) -> None:
        """Room for weights of ``n_features`` features."""
        self.weights = grown_weights(self.weights, n_features)
        self.n_features = max(self.n_features, n_features)

    def reserve(self, n_examples: int, nnz: int) -> None:
        """Room in the shared buffer for ``n_examples`` more examples of ``nnz`` cells
        (the learners' views are taken anew wherever they are used next)."""
        self.buffer.reserve_slots(n_examples)
        self.buffer.features.reserve_for(nnz)

    def fix_delta(self, delta: float) -> None:
        """The bank's Delta, and every learner's."""
        self.delta_value = delta
        for learner in self.learners:
            learner.state.delta = delta

    def rule_params(self) -> npt.NDArray[np.float64]:
        """Every learner's rule parameters (kept until a label is added, a replay or an
        epoch pass, which are what change them: ``tau_pos``, PDM-succ's run)."""
        rules = self.rules
        if rules is not None and rules.shape[0] == self.weights.shape[0]:
            return rules
        params = np.zeros((self.weights.shape[0], 2), dtype=np.float64)
        for label in range(self.n_labels):
            self.bind(label)
            params[label] = self.learners[label].rule_values()
        self.rules = params
        return params

    def evicted_since_replay(self, learner: LinearLearner) -> bool:
        """Whether ``learner`` (bound or not) still holds examples the buffer evicted: its
        window changed, and its next replay takes them out (``forget='window'``)."""
        state = learner.state
        pending = min(self.buffer.evicted, state.defer_until) > state.evictions_forgotten
        return pending and self.base.forget == "window"


def _grown_rows(array: npt.NDArray[Any], rows: int) -> npt.NDArray[Any]:
    out = np.zeros((rows, *array.shape[1:]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out
