"""The one interface of a model, whichever it is: a binary learner or a one-vs-rest bank.

The daemon, the jobs and the adapters hold a :class:`Model` and call it; they never ask
which kind it is. :class:`~streamlearn.learn.base.LinearLearner` (one binary learner) and
:class:`~streamlearn.learn.bank.ModelBank` (one learner per label) implement it. What
differs between the two (which labels a row may carry, how a prediction is written, which
figures evaluate it) is behind these methods.

>>> import numpy as np
>>> from streamlearn.learn import PDM, ModelBank
>>> models: list[Model] = [PDM(delta=0.0), ModelBank(PDM(delta=0.0))]
>>> [model.fit(np.eye(2), [1, -1]).decision_function(np.eye(2)).shape for model in models]
[(2,), (2, 2)]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Self

import numpy as np
import numpy.typing as npt

from streamlearn.learn.labelsets import LabelledRows
from streamlearn.parse import ParsedRows, Rejected
from streamlearn.replay import ReplaySchedule
from streamlearn.types import Batch

if TYPE_CHECKING:
    from streamlearn.learn.base import LinearLearner
    from streamlearn.learn.predictor import Predictor

#: examples as a model learns them: a binary learner's batches, a bank's label sets
Examples = Batch | LabelledRows

#: rows as CSR arrays: (indptr, indices, values)
Rows = tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float64]]


@dataclass(frozen=True)
class ModelLimits:
    """Bounds on what a stream may make a model hold (a bank's labels and weights; a
    binary learner's weights are bounded by the parser's feature bound)."""

    max_labels: int | None = None
    max_weights: int | None = None


class Model(Protocol):
    """What every model offers (see the module doc)."""

    @property
    def algorithm(self) -> str:
        """The learners' algorithm name (``pdm``, ``paum``, ...)."""
        ...

    @property
    def one_vs_rest(self) -> bool:
        """Whether the model is a bank of one learner per label."""
        ...

    @property
    def converged(self) -> bool:
        """Whether the last full replay pass made no update (every learner's)."""
        ...

    @property
    def buffer(self) -> Sized:
        """The replay buffer; its length is the number of examples it holds."""
        ...

    @property
    def stream_judged(self) -> int:
        """Stream examples judged before they were learned (progressive validation)."""
        ...

    @property
    def stream_mistakes(self) -> int:
        """Those of :attr:`stream_judged` the model got wrong."""
        ...

    @property
    def held_examples(self) -> int:
        """Examples held back, not yet in the model: ``delta='auto'`` learns the first
        min(1000, buffer size) once they have all come, from the Delta they give."""
        ...

    @property
    def n_features_in_(self) -> int:
        """One more than the largest feature index learned."""
        ...

    @property
    def outputs(self) -> tuple[str, ...]:
        """What :meth:`prediction_lines` can write, the default first."""
        ...

    @property
    def answer_type(self) -> str:
        """The content type of :meth:`answers`' messages (a binary learner's text lines,
        a bank's JSON objects)."""
        ...

    @property
    def label_output(self) -> str:
        """The output that writes labels rather than scores."""
        ...

    # -- learning ----------------------------------------------------------------------

    def learn(self, X: Any, y: Any) -> Self:
        """Present each example once, in order."""
        ...

    def admit(self, rows: ParsedRows, limits: ModelLimits) -> tuple[Examples, list[Rejected]]:
        """The parsed rows this model can learn, in its own form, and every rejection
        (the parser's, and the rows whose labels or size the model refuses)."""
        ...

    def learn_rows(self, rows: Examples) -> None:
        """:meth:`learn` for rows from :meth:`admit` (already checked)."""
        ...

    def learn_on_schedule(self, rows: Examples, schedule: ReplaySchedule, seen: int) -> int:
        """:meth:`learn_rows`, replaying where ``schedule`` says once ``seen`` stream
        examples came before; returns the new count."""
        ...

    def learn_and_answer(
        self,
        rows: Examples,
        questions: Rows,
        before: npt.NDArray[np.int64],
        schedule: ReplaySchedule,
        seen: int,
    ) -> tuple[int, list[bytes]]:
        """:meth:`learn_on_schedule`, answering question ``j`` (as :meth:`answers`
        does) just before row ``before[j]`` is learned (after them all when it is the
        number of rows; ``before`` does not decrease); returns the new count and the
        answers."""
        ...

    def replay(
        self, max_passes: int | None = None, interrupt: Callable[[], bool] | None = None
    ) -> Self:
        """Replay the buffer until it converges (a full pass makes no update, or the
        certified gap reaches the learner's target; at most ``max_passes``);
        ``interrupt``, asked between the rounds of a pass, ends it early."""
        ...

    def flush(self) -> Self:
        """Learn the examples ``delta='auto'`` holds back, fixing Delta from them."""
        ...

    def epoch_pass(self) -> bool:
        """One plain pass over the buffer in arrival order; whether it made no update."""
        ...

    def fit(self, X: Any, y: Any) -> Self:
        """Learn X, y once and replay to convergence."""
        ...

    def kept_every_example(self) -> bool:
        """Whether the buffer holds every example learned (none evicted or too large)."""
        ...

    def features_to_learn(self) -> int:
        """Features the model has weights for or will have: held examples' too."""
        ...

    # -- answers -----------------------------------------------------------------------

    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:
        """Decision values: one per row (binary), or one column per label (bank)."""
        ...

    def predict_proba(self, X: Any) -> npt.NDArray[np.float64]:
        """Calibrated probabilities: a binary learner's columns for -1 and +1; a bank's
        one column per label id, each that label's own (they need not add up to 1)."""
        ...

    def class_probabilities(self, X: Any) -> npt.NDArray[np.float64]:
        """Probabilities of the classes (adding up to 1 over each row), whose argmax is
        :meth:`decision_function`'s: a binary learner's :meth:`predict_proba`; a bank's
        softmax of the decision values with a fitted temperature."""
        ...

    def allocated_bytes(self) -> int:
        """Bytes the model holds in memory: its weights and its replay buffer as
        allocated (their room, not only what is filled), each array once."""
        ...

    def learners(self) -> list[LinearLearner]:
        """The binary learners (one, or one per label id)."""
        ...

    def answers(self, X: Any) -> list[bytes]:
        """Each row's prediction as the daemon sends it."""
        ...

    def predictor(self) -> Predictor:
        """A frozen copy that answers as the model does now, from any thread, while the
        model goes on learning (:mod:`streamlearn.learn.predictor`)."""
        ...

    def prediction_lines(self, rows: ParsedRows, output: str) -> Iterator[str]:
        """One line per parsed line, in line order, as ``output`` (one of
        :attr:`outputs`) writes it; a rejected line gets the output's missing value."""
        ...

    def evaluate(
        self, parts: Iterable[ParsedRows], on_rejected: Callable[[list[Rejected]], None]
    ) -> dict[str, Any]:
        """Figures of the model on labelled rows (rejected rows go to ``on_rejected``)."""
        ...

    def buffer_rows(self) -> LabelledRows:
        """The examples of the replay buffer, oldest first, with their labels (a binary
        model's +1/-1; a bank's label sets)."""
        ...

    def exported_weights(self) -> npt.NDArray[np.float64]:
        """``coef_`` (binary), or one row of weights per label id (bank)."""
        ...

    # -- reports and state ---------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """Counts and the margin certificate."""
        ...

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` shows of the model."""
        ...

    def get_params(self) -> dict[str, Any]:
        """The parameters that define the model, as passed: the learners' (those of their
        class), and for a bank ``one_vs_rest=True`` (and ``tau_pos_kappa`` when set);
        :func:`~streamlearn.learn.params.plain_params` gives them as a state writes them."""
        ...

    def with_params(self, params: dict[str, Any]) -> Self:
        """This model's state under new learner parameters (refused for those the state
        was built with; a bank's own parameters stay as they are)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: plain numbers, strings and arrays."""
        ...


def learn_on_schedule(model: Model, rows: Examples, schedule: ReplaySchedule, seen: int) -> int:
    """:meth:`Model.learn_on_schedule` for any model: learn ``rows`` in the pieces the
    count-based ``schedule`` cuts them into, replaying after each as it says."""
    start = 0
    for size in schedule.split(seen, rows.n_examples):
        model.learn_rows(rows.slice(start, start + size))
        passes = schedule.replays_after(seen, size)
        seen += size
        start += size
        if passes and (schedule.after_eviction or model.kept_every_example()):
            model.replay(max_passes=passes)
    return seen


def learn_and_answer(
    model: Model,
    rows: Examples,
    questions: Rows,
    before: npt.NDArray[np.int64],
    schedule: ReplaySchedule,
    seen: int,
) -> tuple[int, list[bytes]]:
    """:meth:`Model.learn_and_answer` for any model: the rows between two questions
    learned on schedule, then the questions answered, in turn."""
    indptr, indices, values = questions
    answered: list[bytes] = []
    learned = 0
    for first, last in question_groups(before):
        stop = int(before[first])
        if stop > learned:
            seen = model.learn_on_schedule(rows.slice(learned, stop), schedule, seen)
            learned = stop
        lo, hi = int(indptr[first]), int(indptr[last])
        group = (indptr[first : last + 1] - lo, indices[lo:hi], values[lo:hi])
        answered.extend(model.answers(group))
    if learned < rows.n_examples:
        seen = model.learn_on_schedule(rows.slice(learned, rows.n_examples), schedule, seen)
    return seen, answered


def question_groups(before: npt.NDArray[np.int64]) -> list[tuple[int, int]]:
    """The runs of equal values of ``before`` as ``(first, last)`` positions, ``last``
    excluded: the questions answered at the same point of a batch.

    >>> question_groups(np.array([0, 0, 3, 5, 5, 5]))
    [(0, 2), (2, 3), (3, 6)]
    """
    if before.shape[0] == 0:
        return []
    starts = np.flatnonzero(np.diff(before)) + 1
    bounds = [0, *starts.tolist(), int(before.shape[0])]
    return list(itertools.pairwise(bounds))


def in_line_order(rows: ParsedRows, texts: list[str], missing: str) -> Iterator[str]:
    """``texts`` (one per parsed row) with ``missing`` where the parser rejected a line,
    in line order."""
    rejected_lines = sorted(r.line for r in rows.rejected)
    r = 0
    for line, text in zip(rows.line_numbers.tolist(), texts, strict=True):
        while r < len(rejected_lines) and rejected_lines[r] < line:
            yield missing
            r += 1
        yield text
    yield from (missing for _ in rejected_lines[r:])
