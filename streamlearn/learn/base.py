"""What every learner of the perceptron family shares: learning, replay, certificate.

A learner is a thin class over one engine (:mod:`streamlearn._kernels.engine`),
generated from its entry in the table of learners (:mod:`streamlearn.learn.table`).
Its hyperparameters are exactly its ``__init__`` arguments, stored under the same
names; the entry maps them to the kernel's rule code and parameters. What it has
learned is one public object, :attr:`LinearLearner.state`
(:class:`~streamlearn.learn.state.LearnerState`): weights, scalars, counters and the
replay buffer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import (
    all_ones,
    check_rows,
    learn_stream,
    learn_stream_answering,
    present_unbuffered,
    row_sqnorms,
)
from streamlearn._kernels.engine import STAT_LEVEL1, Rule
from streamlearn.errors import (
    InvalidInputError,
    InvalidParameterError,
    StateError,
    check_state_header,
)
from streamlearn.learn import answers, replay_driver
from streamlearn.learn.calibration import Platt, fit_platt
from streamlearn.learn.certificate import certificate
from streamlearn.learn.inputs import as_batch, as_rows
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.model import Examples, ModelLimits, Rows
from streamlearn.learn.model import learn_and_answer as _learn_and_answer
from streamlearn.learn.model import learn_on_schedule as _learn_on_schedule
from streamlearn.learn.params import (
    AUTO_DELTAS,
    STATE_BUILT_WITH,
    STREAM_BUFFER_NNZ,
    STREAM_BUFFER_SIZE,
    count,
    params_from_plain,
    plain_params,
)
from streamlearn.learn.predictor import BinaryPredictor, calibrated, scaled_decisions
from streamlearn.learn.state import LearnerState, require_finite
from streamlearn.learn.window import AutoDeltaWindow
from streamlearn.parse import ParsedRows, Rejected, binary_batch
from streamlearn.replay import ActiveSetSchedule, ReplayBuffer, ReplaySchedule
from streamlearn.types import Batch, RowStatus

if TYPE_CHECKING:
    from streamlearn.learn.table import LearnerEntry

STATE_FORMAT = "streamlearn.learner"
STATE_VERSION = 1


#: examples learned between two fits of the calibration: as many as at the last one,
#: within these bounds
MIN_CALIBRATION_STEP = 16
#: a certified gap below 0 by less than this is rounding (-2.2e-16 was printed), shown as 0;
#: a larger negative one would say the bound is wrong, and stays visible
ROUNDING_GAP = 1e-12
#: the calibration is fitted on this many of the window's examples at most (an even
#: sample): one parameter needs no more, and a refit stays a matter of milliseconds
CALIBRATION_EXAMPLES = 8192
MAX_CALIBRATION_STEP = 256


def calibration_due(fitted_at: int, examples: int) -> bool:
    """Whether a calibration fitted after ``fitted_at`` examples is due again now, at
    ``examples``: once as many as then have been learned since (16 at least, 256 at most).

    >>> calibration_due(100, 199), calibration_due(100, 200), calibration_due(1000, 1256)
    (False, True, True)
    """
    step = max(MIN_CALIBRATION_STEP, min(MAX_CALIBRATION_STEP, fitted_at))
    return examples >= fitted_at + step


def calibration_stride(window: int) -> int:
    """Every how many window examples a calibration takes one: an even sample of at most
    :data:`CALIBRATION_EXAMPLES`.

    >>> calibration_stride(100), calibration_stride(8192), calibration_stride(100_000)
    (1, 1, 13)
    """
    return max(1, -(-window // CALIBRATION_EXAMPLES))


class LinearLearner:
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

    #: the table entry this class was made from
    entry: ClassVar[LearnerEntry]
    #: the algorithm's name (``pdm``, ``paum``, ...)
    algorithm: ClassVar[str] = ""
    #: the engine's rule code (:mod:`streamlearn._kernels.rules`)
    rule: ClassVar[int] = -1
    #: multiple updates at once (PDM, PFM) are available to this rule
    supports_multiple_updates: ClassVar[bool] = False
    rho: float
    delta: float | str
    buffer_size: int | None
    buffer_nnz: int | None
    seed: int
    active_sets: ActiveSetSchedule | None
    max_passes: int
    forget: str
    #: called as every replay starts (:meth:`before_replay`)
    _before_replay: Callable[[], None] | None = None

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
        #: the Platt scaling in use, and the examples and passes it was fitted at
        self._calibrated: tuple[Platt, int, int] | None = None
        #: a calibration set from outside (a learning group's), instead of the window's
        self._fixed_calibration: Platt | None = None

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
        return self.state.scale * self._output_factor()

    def _output_factor(self) -> float:
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
        self._release_held()  # what the state of an older version held back
        window = self.window
        if window.room and batch.n_examples:
            if window.seen == 0:  # the first example: a provisional Delta
                self._rescale_to(max(window.provisional(batch), self.delta_floor))
            taken = window.observe(batch)
            if window.room:
                self._present_stream(batch)
                return
            self._present_stream(batch.slice(0, taken))
            self._settle_delta()
            batch = batch.slice(taken, batch.n_examples)
        self._present_stream(batch)

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
        self._release_held()
        self._settle_delta(final=False)  # a replay runs under Delta from all that came
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
        self._flush_pending()
        return self

    def epoch_pass(self) -> bool:
        """One plain pass over the buffer in arrival order: no permutation, no active
        sets, no multiple updates (an epoch of the online algorithm). Returns whether it
        made no update."""
        if self._before_replay is not None:
            self._before_replay()
        self._release_held()
        self._settle_delta(final=False)  # a replay runs under Delta from all that came
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

    def _flush_pending(self) -> None:
        """:meth:`_release_held`, then settle Delta (:meth:`_settle_delta`)."""
        self._release_held()
        self._settle_delta()

    def _release_held(self) -> None:
        """Learn what the state of an older version held back while ``delta='auto'``
        waited for its window, Delta fixed from it as that version did."""
        if self.window.pending:
            batch, self.state.delta = self.window.release()
            self.window.close()
            self._present_stream(batch)

    def _settle_delta(self, final: bool = True) -> None:
        """With ``delta='auto'``: Delta = R/10 over the window's examples so far, and the
        state rescaled to it exactly (see :mod:`streamlearn.learn.window`). ``final``
        once the window is full or the stream ends (:meth:`flush`): the window closes;
        else (as a replay starts) it stays open and Delta may move again."""
        window = self.window
        if self.delta != "auto" or window.seen == 0:
            return
        if final:
            window.close()
        if self._rescale_to(max(window.delta(), self.delta_floor)):
            self.state.converged = False

    #: the smallest Delta ``'auto'`` and ``'first'`` settle on: a learning group's Delta,
    #: the largest its members settled (see :meth:`agree_delta`)
    delta_floor = 0.0

    def agree_delta(self, floor: float) -> bool:
        """With ``delta='auto'`` or ``'first'``: Delta at least ``floor`` from now on (a
        learning group's members each settle Delta from their own first examples and
        agree on the largest), the state rescaled to it exactly when that raises it (as
        when ``'auto'`` settles: see :mod:`streamlearn.learn.window`). Returns whether
        Delta changed.

        >>> from streamlearn import PDM
        >>> learner = PDM(delta="first").learn(np.array([[1.0, 0.0]]), np.array([1]))
        >>> learner.state.delta, learner.agree_delta(0.5), learner.state.delta
        (0.1414213562373095, True, 0.5)
        >>> learner.learn(np.array([[9.0, 0.0]]), np.array([-1])).state.delta
        0.5
        """
        if self.delta not in AUTO_DELTAS or not floor > self.delta_floor:
            return False
        self.delta_floor = float(floor)
        if self.state.delta is not None and self.state.delta >= floor:
            return False
        self._rescale_to(float(floor))
        self.state.converged = False
        return True

    def _rescale_to(self, delta: float) -> bool:
        """Delta = ``delta``, ||a||^2 computed again under it; whether it changed."""
        if delta == self.state.delta:
            return False
        self.state.delta = delta
        self.state.recompute_sqnorm()
        return True

    def keep_in_range(self) -> None:
        """Scale the state down when t has grown large, for the rules no common factor
        changes (see :meth:`LearnerState.scale_down`): on an endless stream t would
        otherwise overflow."""
        if self.entry.scale_free:
            self.state.scale_down()

    @property
    def _forgets(self) -> bool:
        return self.forget == "window"

    @property
    def evictions_to_forget(self) -> int:
        """Examples evicted from the buffer whose contributions the model still holds
        until the next replay takes them out: those the last replay saw
        (``forget='window'``; 0 with ``'never'``, whose model keeps them for good)."""
        return self.state.evictions_pending if self._forgets else 0

    def _begin_replay(self) -> bool:
        """With ``forget='window'``, :meth:`LearnerState.begin_replay`: whether evicted
        examples left the model."""
        if not self._forgets:
            return False
        return self.state.begin_replay(self.rho, convex=self.entry.convex_combination)

    def renormalize(self) -> None:
        """Before replay, with ``forget='window'``: make a the combination of the buffered
        examples (taking out the evicted ones still in it), or once the buffer has evicted
        recompute ||a||^2 from w, beta and the buffered slack counts, so that the rounding
        of the examples taken out as they went cannot drift."""
        if not self._begin_replay() and self._forgets and self.state.buffer.evicted:
            self.state.recompute_sqnorm()

    def _present_stream(self, batch: Batch) -> None:
        if batch.n_examples == 0:
            return
        state, sqnorms, rule = self._stream_ready(batch)
        buf = state.buffer
        forget = self._forgets
        before = (state.updates, state.sqnorm)
        first = 0
        while first < batch.n_examples:
            first = learn_stream(
                batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, buf.arrays(),
                buf.ring, buf.max_nnz, state.weights, state.scalars, rule, state.stats, first,
                forget, state.defer_until,
            )  # fmt: skip
            if first < batch.n_examples:  # more nonzeros than the buffer can ever hold
                self._present_unbuffered(batch, sqnorms, rule, first)
                first += 1
        self._stream_learned(batch, before)

    def _stream_ready(self, batch: Batch) -> tuple[LearnerState, npt.NDArray[np.float64], Rule]:
        """Room for ``batch`` (weights, buffer); its squared norms and the kernels' rule."""
        state = self.state
        state.grow_weights(batch.max_index + 1)
        state.buffer.reserve_slots(batch.n_examples)
        state.buffer.reserve_for(batch.nnz + batch.n_examples)
        sqnorms = row_sqnorms(batch.indptr, batch.values)
        return state, sqnorms, self.kernel_rule(False, bool(all_ones(batch.values)))

    def _present_unbuffered(
        self, batch: Batch, sqnorms: npt.NDArray[np.float64], rule: Rule, row: int
    ) -> None:
        state = self.state
        buf = state.buffer
        present_unbuffered(
            batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, row, buf.ring,
            buf.slot_alpha, state.weights, state.scalars, rule, state.stats, np.zeros(1),
            self._forgets,
        )  # fmt: skip

    def _stream_learned(self, batch: Batch, before: tuple[float, float]) -> None:
        state = self.state
        state.examples_seen += batch.n_examples
        if (state.updates, state.sqnorm) != before or self.evictions_to_forget:
            state.converged = False  # the window changed: its replay is due
        self.keep_in_range()

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
        batch = rows
        state, sqnorms, rule = self._stream_ready(batch)
        buf = state.buffer
        factor = self._output_factor()
        scores = np.empty(before.shape[0])
        cursor = np.zeros(2, dtype=np.int64)
        q_indptr, q_indices, q_values = questions
        before = np.ascontiguousarray(before, dtype=np.int64)
        updates_before = (state.updates, state.sqnorm)
        while not learn_stream_answering(
            batch.indptr, batch.indices, batch.values, batch.labels, sqnorms, buf.arrays(),
            buf.ring, buf.max_nnz, state.weights, state.scalars, rule, state.stats,
            self._forgets, state.defer_until, before, q_indptr, q_indices, q_values, factor,
            scores, cursor,
        ):  # fmt: skip
            self._present_unbuffered(batch, sqnorms, rule, int(cursor[0]))
            cursor[0] += 1
        self._stream_learned(batch, updates_before)
        return seen + batch.n_examples, answers.binary_answers(scores)

    # -- prediction ----------------------------------------------------------------------

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
        return 1.0 / (unit * self._output_factor()) if unit > 0.0 else math.nan

    def calibration(self) -> Platt:
        """The Platt scaling of :meth:`margin_scores` that :meth:`predict_proba` uses:
        the one :meth:`fix_calibration` set, else :meth:`window_calibration`."""
        if self._fixed_calibration is not None:
            return self._fixed_calibration
        return self.window_calibration()

    def fix_calibration(self, platt: Platt | None) -> None:
        """Use ``platt`` for the probabilities from now on (None: the window's again);
        a learning group sets the one its members agree on."""
        self._fixed_calibration = platt

    def window_calibration(self) -> Platt:
        """The Platt scaling of :meth:`margin_scores` fitted on the window (the buffered
        examples; an even sample of 8192 of them in a larger window) with the current
        model.

        It is fitted again when a replay has run since, or when the examples learned
        since have reached the count it was fitted at (16 at least, 256 at most): a
        function of counts, so the same calls give the same probabilities.
        """
        state = self.state
        fitted = self._calibrated
        if fitted is not None:
            platt, examples, passes = fitted
            if passes == state.passes and not calibration_due(examples, state.examples_seen):
                return platt
        buffer = self.state.buffer
        sample = buffer.examples(stride=calibration_stride(len(buffer)))
        z = self.margin_scores((sample.indptr, sample.indices, sample.values))
        platt = fit_platt(z, sample.labels)
        self._calibrated = (platt, state.examples_seen, state.passes)
        return platt

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
        """A frozen copy of another model held in this learner's units: the dual
        combination with w = ``weights``, beta, t = ``updates`` and sum alpha_k^2 =
        ``slack`` (a learning group's common model, the sum of its members' shares),
        answering with ``calibration``. Its margin unit is that model's ||a||^2 / t,
        under ``delta`` (default: this learner's Delta).

        >>> from streamlearn import PDM
        >>> learner = PDM(delta=1.0).learn(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, -1]))
        >>> state = learner.state
        >>> copy = learner.predictor_of(state.weights[:2], beta=state.beta,
        ...     updates=state.updates, slack=state.buffered_slack(),
        ...     calibration=learner.calibration())
        >>> rows = (np.array([0, 1, 2]), np.array([0, 1], dtype=np.int32), np.array([2.0, 1.0]))
        >>> copy.answer(rows) == learner.predictor().answer(rows)
        True
        """
        state = self.state
        delta_sq = state.delta_sq if delta is None else delta * delta
        sqnorm = (
            state.scale * state.scale * (float(weights @ weights) + beta * beta + delta_sq * slack)
        )
        unit = sqnorm / updates if updates > 0.0 and sqnorm > 0.0 else math.nan
        scale = self.output_scale
        return BinaryPredictor(
            weights=np.array(weights, dtype=np.float64),
            scale=scale,
            intercept=float(self.rho * beta * scale),
            margin_factor=1.0 / (unit * self._output_factor()) if unit > 0.0 else math.nan,
            calibration=calibration,
        )

    def allocated_bytes(self) -> int:
        """Bytes of the weights and the replay buffer as allocated."""
        return int(self.state.weights.nbytes) + self.state.buffer.allocated_bytes

    def learners(self) -> list[LinearLearner]:
        """This learner, alone (the model interface's list of binary learners)."""
        return [self]

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

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` shows: algorithm, parameters, Delta, intercept and the summary."""
        summary = self.summary()
        return {
            "algorithm": self.algorithm,
            "params": plain_params(self.get_params()),
            "delta": self.delta_,
            "intercept": self.intercept_,
            **{k: v for k, v in summary.items() if k not in ("algorithm", "delta")},
        }

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
        state = self.state
        weights = state.weights[: state.n_features]
        stats = state.stats
        found = certificate(state, self.rho)
        negative, positive = found.class_margins()
        with_counts = min(negative, positive) if len(state.buffer) else math.nan
        achieved = found.achieved if len(state.buffer) else math.nan
        bound = found.upper_bound
        gap = 1.0 - achieved / bound if math.isfinite(bound) and bound > 0 else math.nan
        if -ROUNDING_GAP < gap < 0.0:  # rounding, as when the margin meets its bound
            gap = 0.0
        return {
            "algorithm": self.algorithm,
            "examples": state.examples_seen,
            "updates": self.updates,
            "update_events": int(stats[0]),
            "presentations": int(stats[1]),
            "mini_epochs": int(stats[2]),
            "stream_mistakes": int(stats[3]),
            "active_set_examples": {
                level: int(stats[STAT_LEVEL1 + level - 1]) for level in (1, 2, 3)
            },
            "passes": state.passes,
            "converged": state.converged,
            "stopped_by": state.stopped_by if state.converged else None,
            "margin_achieved": achieved,
            "margin_with_slack_counts": with_counts,
            "margin_negative": negative,
            "margin_positive": positive,
            "margin_upper_bound": bound,
            "certified_gap": gap,
            # of coef_, without making it (a copy as large as the largest feature index)
            "weight_norm": math.sqrt(float(weights @ weights)) * abs(self.output_scale),
            "delta": state.delta,
            "n_features": state.n_features,
            "buffer_examples": len(state.buffer),
            "buffer_capacity": state.buffer.max_examples,
            "buffer_nnz": state.buffer.nnz,
            "buffer_evicted": state.buffer.evicted,
            "evictions_to_forget": self.evictions_to_forget,
            "forget": self.forget,
            "pending_examples": self.window.held_examples,
        }

    # -- state dictionaries --------------------------------------------------------------

    def extra_state(self) -> dict[str, Any]:
        """What a learner class keeps beyond :class:`LearnerState` (PDM-succ's run)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Take back :meth:`extra_state`."""
        del state

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: plain numbers, strings and numpy arrays."""
        learned = self.state.state_dict()
        pending = Batch.concatenate(self.window.pending)
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "algorithm": self.algorithm,
            "params": plain_params(self.get_params()),
            "delta_value": learned["delta_value"],
            "weights": learned["weights"],
            "scalars": learned["scalars"],
            "stats": learned["stats"],
            "passes": learned["passes"],
            "converged": learned["converged"],
            "stopped_by": learned["stopped_by"],
            "examples_seen": learned["examples_seen"],
            "evictions_forgotten": learned["evictions_forgotten"],
            "defer_until": learned["defer_until"],
            **self.window.state_dict(),
            "pending": {
                "indptr": pending.indptr,
                "indices": pending.indices,
                "values": pending.values,
                "labels": pending.labels,
            },
            "buffer": learned["buffer"],
            "extra": self.extra_state(),
            "calibration": self._calibration_state(),
        }

    def _calibration_state(self) -> list[float] | None:
        """:meth:`calibration`'s fit as ``[slope, examples, passes]``, or None."""
        if self._calibrated is None:
            return None
        platt, examples, passes = self._calibrated
        return [platt.slope, float(examples), float(passes)]

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """A learner that continues exactly where the one that made ``state`` stopped."""
        check_state_header(state, STATE_FORMAT, STATE_VERSION, "learner")
        if state.get("algorithm") != cls.algorithm:
            raise StateError(
                f"state is for algorithm {state.get('algorithm')!r}, not {cls.algorithm!r}"
            )
        try:
            learner = cls(**params_from_plain(state["params"]))
            learner.load_state(state)
        except StateError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise StateError(f"incomplete or malformed learner state: {exc}") from exc
        return learner

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (:meth:`state_dict`'s) under this learner's parameters."""
        pending = state["pending"]
        held = Batch.from_csr(
            pending["indptr"], pending["indices"], pending["values"], pending["labels"]
        )
        learned = LearnerState.from_state(state)
        if learned.buffer.max_examples != (self.buffer_size or learned.buffer.max_examples) or (
            learned.buffer.max_nnz != (self.buffer_nnz or learned.buffer.max_nnz)
        ):
            raise StateError("replay buffer capacity in the state differs from the parameters")
        check_state_rows(state["buffer"]["indices"], learned.n_features, held)
        self.state = learned
        self.window = AutoDeltaWindow.for_buffer(
            learned.buffer.max_examples, self.rho, Batch.concatenate, self.delta
        )
        self.window.load(state, held)
        self.load_extra_state(state["extra"])
        saved = state.get("calibration")  # absent from states of 0.1.0's betas
        self._calibrated = None
        if saved is not None:
            slope, examples, passes = (float(v) for v in saved)
            require_finite("calibration", np.array([slope]))
            self._calibrated = (Platt(slope), int(examples), int(passes))


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
    "check_state_rows",
    "refuse_rebuilding",
    "refuse_small_buffer",
]
