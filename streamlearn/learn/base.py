"""What every learner of the perceptron family shares: its parameters, learning, replay.

A learner is a thin class over one engine (:mod:`streamlearn._kernels.engine`),
generated from its entry in the table of learners (:mod:`streamlearn.learn.table`).
Its hyperparameters are exactly its ``__init__`` arguments, stored under the same
names; the entry maps them to the kernel's rule code and parameters. What it has
learned is one public object, :attr:`LinearLearner.state`
(:class:`~streamlearn.learn.state.LearnerState`): weights, scalars, counters and the
replay buffer.

The class decides what to present and when to replay; the work lives beside it:
presenting new examples in :mod:`~streamlearn.learn.stream_presentation`, replay passes
in :mod:`~streamlearn.learn.replay_driver`, Delta's settling in
:mod:`~streamlearn.learn.learner_delta`, the state as plain values in
:mod:`~streamlearn.learn.learner_codec`; what it answers and reports from its state
(decision values, probabilities, the certificate) is its base,
:class:`~streamlearn.learn.binary_view.BinaryModelView`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.engine import Rule
from streamlearn.errors import InvalidInputError, InvalidParameterError
from streamlearn.learn import learner_delta, replay_driver
from streamlearn.learn.binary_view import BinaryModelView
from streamlearn.learn.inputs import as_batch
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.learner_codec import encode_learner, load_learner, restore_learner
from streamlearn.learn.learner_summary import describe_learner
from streamlearn.learn.model import Examples, ModelLimits, Rows
from streamlearn.learn.model import learn_and_answer as _learn_and_answer
from streamlearn.learn.model import learn_on_schedule as _learn_on_schedule
from streamlearn.learn.params import (
    AUTO_DELTAS,
    STATE_BUILT_WITH,
    STREAM_BUFFER_NNZ,
    STREAM_BUFFER_SIZE,
    count,
    plain_params,
)
from streamlearn.learn.state import LearnerState
from streamlearn.learn.stream_presentation import learn_and_answer_in_one_pass, present_stream
from streamlearn.learn.window import AutoDeltaWindow
from streamlearn.learn.window_calibration import LearnerCalibration
from streamlearn.parse import ParsedRows, Rejected, binary_batch
from streamlearn.replay import ActiveSetSchedule, ReplaySchedule
from streamlearn.types import Batch


class LinearLearner(BinaryModelView):
    """Base class: a linear classifier learned by a perceptron-family update rule.

    Each learner class comes from an entry of the table of learners
    (:mod:`streamlearn.learn.table`): its rule's parameters, then these, keyword-only in
    every class:

    rho
        Augmentation: each x becomes [x, rho]; the bias is rho * beta. Default 1.
    delta
        2-norm soft-margin extension Delta >= 0, or ``'auto'`` (default): the first
        min(1000, buffer_size) examples fix Delta = R/10 with R their largest
        ||[x, rho]||; learning starts once they have arrived (or at :meth:`replay`).
        ``delta=0`` is the hard margin.
    buffer_size, buffer_nnz
        Replay buffer capacity in examples and in stored nonzeros (12 bytes each). None
        (default): 100 000 examples and 10 000 000 nonzeros for a stream, while
        :meth:`fit` takes what its data needs, so that it never evicts.
    seed
        Fixes the order of every replay pass.
    active_sets
        The nested active-set schedule of replay passes.
    max_passes
        Default bound on full replay passes per :meth:`replay` call.
    forget
        ``'window'`` (default): evicting an example from the buffer takes its
        contribution out of the model (a -= alpha_k y_k), so that the model is a
        combination of the buffered examples and its certificate is about them (the
        buffer is the model's window). ``'never'``: evicted examples stay in the weights
        and go on voting; the certificate is still about the buffered examples.
    """

    #: the engine's rule code (:mod:`streamlearn._kernels.rules`)
    rule: ClassVar[int] = -1
    #: multiple updates at once (PDM, PFM) are available to this rule
    supports_multiple_updates: ClassVar[bool] = False
    delta: float | str
    buffer_size: int | None
    buffer_nnz: int | None
    seed: int
    active_sets: ActiveSetSchedule | None
    max_passes: int
    #: called as every replay starts (:meth:`before_replay`)
    _before_replay: Callable[[], None] | None = None
    #: the smallest Delta ``'auto'`` and ``'first'`` settle on: a learning group's Delta,
    #: the largest its members settled (see :meth:`agree_delta`)
    delta_floor = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not hasattr(type(self), "entry"):
            raise TypeError("LinearLearner is abstract: use a learner class (PDM, PAUM, ...)")
        entry = self.entry
        bound = entry.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        for param in entry.all_params:
            setattr(self, param.name, param.check(param.name, bound.arguments[param.name]))
        entry.check_together(self.get_params())
        self._reset_state()

    # -- hyperparameters ---------------------------------------------------------------

    @classmethod
    def param_names(cls) -> list[str]:
        """The names of the parameters, in the order of ``__init__``."""
        return [param.name for param in cls.entry.all_params]

    def get_params(self) -> dict[str, Any]:
        """The hyperparameters, as passed to ``__init__`` (:func:`plain_params` gives them
        as a state writes them)."""
        return {name: getattr(self, name) for name in self.param_names()}

    def with_params(self, params: dict[str, Any]) -> Self:
        """A learner that continues from this one's state under new parameters (those
        of :data:`~streamlearn.learn.params.STATE_BUILT_WITH` cannot change)."""
        refuse_rebuilding(self.get_params(), params)
        state = self.state_dict()
        state["params"] = plain_params(type(self)(**params).get_params())
        return type(self).from_state(state)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def rule_values(self) -> npt.NDArray[np.float64]:
        """The kernel's two float64 rule parameters for the current state."""
        return np.array(self.entry.rule_values(self), dtype=np.float64)

    def kernel_rule(self, multi: bool, unit: bool) -> Rule:
        """The engine's ``(code, rule_params, rho, delta_sq, multi, unit)``; ``unit``: every
        value of the examples to present is 1.0."""
        return (self.rule, self.rule_values(), self.rho, self.state.delta_sq, multi, unit)

    def uses_multiple_updates(self) -> bool:
        """Whether replay passes make multiple updates (PDM's option)."""
        return bool(self.supports_multiple_updates and getattr(self, "multiple_updates", False))

    def pass_schedule(self) -> ActiveSetSchedule:
        """The active sets of a replay pass (the default schedule unless given)."""
        return self.active_sets if self.active_sets is not None else ActiveSetSchedule()

    def divergence_hint(self) -> str:
        """What to change when the weights overflow, said by the rule."""
        return str(self.entry.divergence_hint.format(**self.get_params()))

    # -- state ---------------------------------------------------------------------------

    def _reset_state(self) -> None:
        self._empty_state(
            self.buffer_size or STREAM_BUFFER_SIZE, self.buffer_nnz or STREAM_BUFFER_NNZ
        )

    def _empty_state(self, buffer_size: int, buffer_nnz: int) -> None:
        delta = None if self.delta in AUTO_DELTAS else float(self.delta)
        #: what the learner has learned (see :class:`~streamlearn.learn.state.LearnerState`)
        self.state = LearnerState.empty(buffer_size, buffer_nnz, delta)
        #: the examples that fix Delta while ``delta='auto'`` waits for them
        self.window: AutoDeltaWindow[Batch] = AutoDeltaWindow.for_buffer(
            buffer_size, self.rho, Batch.concatenate, self.delta
        )
        #: the Platt scaling of the probabilities (the window's fit, or one fixed)
        self.calibrator = LearnerCalibration()

    def _fresh(self) -> bool:
        """Whether the learner has learned nothing, nor holds anything back."""
        return self.state.examples_seen == 0 and self.window.seen == 0

    def size_buffer_for(self, n_examples: int, cells: int) -> None:
        """Make a learner that has learned nothing hold ``n_examples`` examples of
        ``cells`` arena cells in all without evicting any: capacities left to streamlearn
        (None) take exactly that; an explicit capacity below it is refused, naming the
        memory the data would need."""
        examples = max(n_examples, 1)
        nonzeros = max(cells, 1)
        refuse_small_buffer(n_examples, examples, nonzeros, self.buffer_size, self.buffer_nnz)
        self._empty_state(self.buffer_size or examples, self.buffer_nnz or nonzeros)

    @property
    def one_vs_rest(self) -> bool:
        """False: one binary learner."""
        return False

    # -- learning ------------------------------------------------------------------------

    def learn(self, X: Any, y: Any) -> Self:
        """Present each example once, in order, storing it in the replay buffer.

        X is a scipy sparse matrix, a ``(indptr, indices, values)`` triple or a dense
        2-D array; y holds +1/-1 (or 0/1, or booleans).
        """
        self.learn_batch(as_batch(X, y))
        return self

    def admit(self, rows: ParsedRows, limits: ModelLimits) -> tuple[Examples, list[Rejected]]:
        """Rows with exactly one label in {+1, -1, 0} (0 read as -1), as a batch; every
        other row is rejected as ``bad label``, beside the parser's rejections."""
        del limits  # the parser's feature bound is the only one a binary learner needs
        return binary_batch(rows)

    def learn_rows(self, rows: Examples) -> None:
        """:meth:`learn_batch`; rows with label sets must hold one label of +1 or -1 (or 0)
        each."""
        self.learn_batch(rows if isinstance(rows, Batch) else _binary_rows(rows))

    def learn_batch(self, batch: Batch) -> None:
        """:meth:`learn` for a batch that is already checked (from the parser)."""
        learner_delta.release_held(self)  # what the state of an older version held back
        window = self.window
        if window.room and batch.n_examples:
            if window.seen == 0:  # the first example: a provisional Delta
                learner_delta.rescale_to(self, max(window.provisional(batch), self.delta_floor))
            taken = window.observe(batch)
            if window.room:
                present_stream(self, batch)
                return
            present_stream(self, batch.slice(0, taken))
            learner_delta.settle_delta(self)
            batch = batch.slice(taken, batch.n_examples)
        present_stream(self, batch)

    def learn_on_schedule(self, rows: Examples, schedule: ReplaySchedule, seen: int) -> int:
        """:meth:`learn_rows`, replaying wherever ``schedule`` says once ``seen`` stream
        examples came before; returns the new count."""
        return _learn_on_schedule(self, rows, schedule, seen)

    def replay(
        self, max_passes: int | None = None, interrupt: Callable[[], bool] | None = None
    ) -> Self:
        """Cycle the buffer with the active sets until it converges: a full pass makes no
        update, or, for a learner with a target gap (PDM and PDM-succ: their eps), the
        certified gap is at most that target, checked during a pass and after it.

        At most ``max_passes`` full passes (default: the ``max_passes`` parameter);
        :attr:`converged` says whether replay stopped converged, and ``stopped_by``
        which rule stopped it (``'no update'`` or ``'certified gap'``). ``interrupt``,
        asked between the level-1 rounds of a pass, ends the replay there when it
        answers True (a daemon bounds the time a replay keeps the stream waiting); the
        full epoch each pass starts with always runs whole.

        With ``forget='window'`` the examples the last replay saw that have been evicted
        since leave the model first (:meth:`LearnerState.begin_replay`). That unbalances
        the others, and a pass or two do not rebalance them: such a replay goes on until
        it converges, up to the ``max_passes`` parameter, whatever ``max_passes`` it is
        given (``interrupt`` still ends it).
        """
        if self._before_replay is not None:
            self._before_replay()
        learner_delta.release_held(self)
        learner_delta.settle_delta(self, final=False)  # under Delta from all that came
        budget = self.max_passes if max_passes is None else count("max_passes", max_passes)
        if self._begin_replay():
            budget = max(budget, self.max_passes)
        self._run_passes(budget, interrupt)
        return self

    def before_replay(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback`` as every replay starts (:meth:`replay`, :meth:`epoch_pass`),
        the count-based ones inside :meth:`learn_on_schedule` included (None: no more
        calls). A member of a learning group folds the records published meanwhile
        there, so that the replay corrects the window under the latest common model."""
        self._before_replay = callback

    def flush(self) -> Self:
        """Settle Delta (``delta='auto'``) from the examples that came, if its window is
        not full yet: the end of a stream (a replay leaves the window open)."""
        learner_delta.release_held(self)
        learner_delta.settle_delta(self)
        return self

    def epoch_pass(self) -> bool:
        """One plain pass over the buffer in arrival order: no permutation, no active
        sets, no multiple updates (an epoch of the online algorithm). Returns whether it
        made no update."""
        if self._before_replay is not None:
            self._before_replay()
        learner_delta.release_held(self)
        learner_delta.settle_delta(self, final=False)  # under Delta from all that came
        return replay_driver.epoch_pass(self)

    def fit(self, X: Any, y: Any) -> Self:
        """Learn X, y once and replay to convergence: batch use, as in the papers. A
        learner that has learned nothing keeps every example of X in its buffer, so that
        the model and its certificate are about all of X (see :meth:`size_buffer_for`)."""
        batch = as_batch(X, y)
        if self._fresh():
            self.size_buffer_for(batch.n_examples, arena_cells(batch.indptr))
        self.learn_batch(batch)
        return self.flush().replay()

    def _run_passes(self, budget: int, interrupt: Callable[[], bool] | None = None) -> int:
        """Up to ``budget`` full replay passes (:func:`replay_driver.run_passes`); a
        learner class may run them its own way (PDM-succ's successive runs)."""
        return replay_driver.run_passes(self, budget, interrupt)

    def target_gap(self) -> float | None:
        """The certified gap at which replay stops, converged, even while passes still
        make updates (PDM's eps); None for rules without one."""
        target = self.entry.target_gap
        return None if target is None else float(target(self))

    def agree_delta(self, floor: float) -> bool:
        """With ``delta='auto'`` or ``'first'``: Delta at least ``floor`` from now on, the
        state rescaled to it exactly when that raises it (a learning group's members agree
        on the largest Delta they settled: :func:`~streamlearn.learn.learner_delta.agree_delta`).
        Returns whether Delta changed."""
        return learner_delta.agree_delta(self, floor)

    def keep_in_range(self) -> None:
        """Scale the state down when t has grown large, for the rules no common factor
        changes (see :meth:`LearnerState.scale_down`): on an endless stream t would
        otherwise overflow."""
        if self.entry.scale_free:
            self.state.scale_down()

    def _begin_replay(self) -> bool:
        """With ``forget='window'``, :meth:`LearnerState.begin_replay`: whether evicted
        examples left the model."""
        if not self.forgets:
            return False
        return self.state.begin_replay(self.rho, convex=self.entry.convex_combination)

    def renormalize(self) -> None:
        """Before replay, with ``forget='window'``: make a the combination of the buffered
        examples (taking out the evicted ones still in it), or once the buffer has evicted
        recompute ||a||^2 from w, beta and the buffered slack counts, so that the rounding
        of the examples taken out as they went cannot drift."""
        if not self._begin_replay() and self.forgets and self.state.buffer.evicted:
            self.state.recompute_sqnorm()

    def learn_and_answer(
        self,
        rows: Examples,
        questions: Rows,
        before: npt.NDArray[np.int64],
        schedule: ReplaySchedule,
        seen: int,
    ) -> tuple[int, list[bytes]]:
        """:meth:`learn_on_schedule`, answering question ``j`` (as :meth:`answers` does)
        just before row ``before[j]`` is learned; returns the new count and the answers.

        Without a count-based schedule and with Delta settled, one pass of the engine over
        the rows answers the questions on its way, so a question costs no more than its
        answer; otherwise the rows between two questions are learned in turn.
        """
        watching = self.window.room > 0 or self.window.pending
        if schedule.enabled or watching or not isinstance(rows, Batch):
            return _learn_and_answer(self, rows, questions, before, schedule, seen)
        return seen + rows.n_examples, learn_and_answer_in_one_pass(self, rows, questions, before)

    def learners(self) -> list[LinearLearner]:
        """This learner, alone (the model interface's list of binary learners)."""
        return [self]

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` shows: algorithm, parameters, Delta, intercept and the summary."""
        return describe_learner(self)

    # -- state dictionaries --------------------------------------------------------------

    def extra_state(self) -> dict[str, Any]:
        """What a learner class keeps beyond :class:`LearnerState` (PDM-succ's run)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Take back :meth:`extra_state`."""
        del state

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: plain numbers, strings and numpy arrays
        (:mod:`streamlearn.learn.learner_codec`)."""
        return encode_learner(self)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """A learner that continues exactly where the one that made ``state`` stopped."""
        return restore_learner(cls, state)

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (:meth:`state_dict`'s) under this learner's parameters."""
        load_learner(self, state)


def refuse_rebuilding(held: dict[str, Any], params: dict[str, Any]) -> None:
    """Refuse new values of the parameters a learned state was built with.

    >>> refuse_rebuilding({"delta": 1.0}, {"delta": 2.0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: cannot change delta of a learned state: ...
    """
    for name in STATE_BUILT_WITH:
        if name in params and params[name] != held.get(name):
            raise InvalidParameterError(
                f"cannot change {name} of a learned state: it was built with "
                f"{name}={held.get(name)!r}"
            )


#: bytes a buffer slot takes (start, length, label, slack count, squared norm) and a cell
#: of its arena (an int32 index and a float64 value)
SLOT_BYTES, CELL_BYTES = 33, 12


def refuse_small_buffer(
    n_examples: int, examples: int, nonzeros: int, buffer_size: int | None, buffer_nnz: int | None
) -> None:
    """Refuse explicit buffer capacities below what ``fit()``'s data needs, naming the
    memory it would take.

    >>> refuse_small_buffer(10**6, 10**6, 10**8, 100_000, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: fit() keeps all 1000000 ... (about 1233 MB)...
    """
    short = [
        f"{name}={given} (they need {needed})"
        for name, given, needed in (
            ("buffer_size", buffer_size, examples),
            ("buffer_nnz", buffer_nnz, nonzeros),
        )
        if given is not None and given < needed
    ]
    if short:
        size = examples * SLOT_BYTES + nonzeros * CELL_BYTES
        shown = f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
        raise InvalidParameterError(
            f"fit() keeps all {n_examples} examples in the replay buffer (about {shown}), "
            f"which holds fewer: {', '.join(short)}; raise the capacity, leave it to fit() "
            "(None), or learn() the data as a stream"
        )


def arena_cells(indptr: npt.NDArray[np.int64]) -> int:
    """The arena cells examples with these CSR offsets take in a replay buffer: each one
    max(nonzeros, 1).

    >>> arena_cells(np.array([0, 3, 3, 5]))
    6
    """
    return int(np.maximum(np.diff(indptr), 1).sum())


def _binary_rows(rows: LabelledRows) -> Batch:
    """Rows with label sets as a batch: each must hold one label of +1, -1 or 0."""
    counts = np.diff(rows.label_ptr)
    if not np.all(counts == 1) or not np.all(np.isin(rows.labels, (-1.0, 0.0, 1.0))):
        raise InvalidInputError("a binary learner takes rows with one label of +1 or -1 (or 0)")
    labels = np.where(rows.labels == 1.0, 1, -1).astype(np.int8)
    return Batch.from_csr(rows.indptr, rows.indices, rows.values, labels)


__all__ = [
    "LinearLearner",
    "arena_cells",
    "refuse_rebuilding",
    "refuse_small_buffer",
]
