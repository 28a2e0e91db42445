"""river binary classifiers for every learner of the engine (river must be installed).

``PDMClassifier``, ``PAUMClassifier`` and the others (all importable from
:mod:`streamlearn.river`) are river ``base.Classifier`` objects: ``learn_one``,
``predict_one`` and ``predict_proba_one``. They have no mini-batch methods: river's
take pandas data frames, which streamlearn does not depend on, and one call per example
is what the adapters are built for. Their parameters are those of the engine class,
with the same names and defaults (but Delta's, below), plus options of their own:

``n_features``
    None (default): each feature name gets the next index the first time ``learn_one``
    sees it (zero values included), and the model keeps the name-to-index map.
    An int: names are hashed instead, to ``crc32(name) % n_features`` with ``zlib.crc32``
    of the UTF-8 bytes of the name (of ``repr(name)`` for names that are not str), the
    same in every process; colliding names add up. The weights (``n_features`` floats)
    are allocated at once.
``pos_label``
    The label learned as +1 (the positive class of PAUM's ``tau_pos``). None (default):
    True and 1 are +1; False, 0 and -1 are -1; any other label is -1 when it is the first
    label seen and +1 when it is the second (a label whose natural sign is taken gets
    the other one). A third distinct label is an error.
``average``
    True (default): ``predict_one`` and ``predict_proba_one`` use the weights averaged
    over the stream (over about the last window of it once the buffer is full, see
    :mod:`streamlearn.river.average`), in margin units; the learner itself, its
    updates, its certificate and ``weights`` stay those of the rule. One pass of an
    averaged PDM predicts as well as replays to convergence would, at the cost of a pure
    online pass. False: the last weights predict.
``replay_every``, ``replay_passes``
    When to replay the buffer, up to ``replay_passes`` passes each time (the engine's
    count-based schedule). None (default): no replay, a pure online pass (with the
    averaged weights it predicts as well as replays would). ``'auto'``: after 1000 calls
    of ``learn_one``, then each time the count has grown by half (half the buffer at
    most), so that one pass over a stream ends close to the model that replays converge
    to and its certificate, at a cost of a constant number of replay passes per example
    (with the active sets, many presentations each: on Adult with eps 0.01, a tenth of
    the speed of a pure online pass). An int: after every ``replay_every`` calls.
    :meth:`LearnerClassifier.replay` replays on demand.

Feature values must be real numbers: ints, floats, bools (0 and 1), numpy scalars or
anything else with ``__float__`` but strings; zero and missing are the same. The
adapters' default is the engine's ``delta='auto'``: learning starts with the first
example, under a provisional Delta = R/10 from it (R its ||[x, rho]||), and Delta
settles over the first min(1000, buffer_size) examples (R their largest norm), the state
rescaled exactly (:mod:`streamlearn.learn.window`). ``'first'`` keeps the first
example's Delta.

``predict_proba_one`` is calibrated: the decision value f(x) in margin units
(f(x) / u, with u = ||a||^2 / t, ||a||^2 for Kozinec; the averaged weights' decision
value is in these units already) through a Platt sigmoid fitted on the window, again
once as many examples as at its last fit have been learned (16 at least, 256 at most)
or after a replay (``LinearLearner.calibration`` for the last weights). Before the first
update every label gets 0.5 (``{False: 0.5, True: 0.5}`` before any label is seen,
river's binary convention).

>>> from river import datasets
>>> from streamlearn.river import PDMClassifier
>>> model = PDMClassifier(eps=0.05, delta=1.0)
>>> for x, y in datasets.Phishing().take(200):
...     model.learn_one(x, y)
>>> x, y = next(iter(datasets.Phishing()))
>>> model.predict_one(x), sorted(model.predict_proba_one(x))
(True, [False, True])

The models equal the engine's on the same examples, bit for bit (weights, buffer,
counters); :meth:`LearnerClassifier.state_dict` and ``from_state`` carry the engine's
state plus the feature map and the labels, in values that streamlearn's checkpoint
codec stores.

Speed: an example becomes indices and values packed with ``struct`` straight into the
learner's packed state (:class:`~streamlearn.learn.one_example.OneExamplePath`), and one
compiled call both learns the example that ``predict_one`` just saw (``learn_one`` only
notes its label) and predicts the next one: a progressive predict_one + learn_one costs
one compiled call (the averaged weights' decision value included), which takes the
learner's arrays and the averaged weights as one table of their addresses
(:mod:`streamlearn._kernels.addresses`).
"""

from __future__ import annotations

import inspect
import math
import struct
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, ClassVar, Self

import numpy as np
from river import base

from streamlearn._kernels.single import set_table_bias, state_table
from streamlearn.errors import InvalidParameterError
from streamlearn.learn import LEARNERS, LearnerEntry, LinearLearner
from streamlearn.learn.calibration import Platt
from streamlearn.learn.one_example import OneExamplePath
from streamlearn.learn.params import plain_params
from streamlearn.river.average import WeightAverage
from streamlearn.river.features import FeatureNames, all_finite, check_value, refuse_example
from streamlearn.river.labels import BinaryLabels
from streamlearn.river.options import (
    AVERAGE,
    COMMON_OPTIONS,
    POS_LABEL,
    check_options,
    engine_parameters,
    replay_schedule,
)
from streamlearn.river.roundtrip import StateRoundTrips
from streamlearn.types import RowStatus

STATE_FORMAT = "streamlearn.river"
STATE_VERSION = 1
_ADAPTER_OPTIONS = ("n_features", "pos_label", "replay_every", "replay_passes", "average")
#: the engine's scalars at the head of the packed block ``F``
_BETA, _SQNORM, _UPDATES, _SCALE = 0, 1, 2, 3
#: ``pack_into`` of n indices and n values as native doubles, by n
_PACKERS: dict[int, Callable[..., None]] = {
    n: struct.Struct(f"@{2 * n}d").pack_into for n in range(65)
}
_PACK_ERRORS = (KeyError, TypeError, struct.error)
_NEED_ARENA, _UNBUFFERED = -int(RowStatus.NEED_ARENA), -int(RowStatus.UNBUFFERED)


def _packer(n: int) -> Callable[..., None]:
    packer = _PACKERS.get(n)
    if packer is None:
        packer = _PACKERS[n] = struct.Struct(f"@{2 * n}d").pack_into
    return packer


class LearnerClassifier(StateRoundTrips, base.Classifier):
    """A river binary classifier over one learner of the engine (see the module doc)."""

    #: the engine class this adapter runs
    learner_class: ClassVar[type[LinearLearner]] = LinearLearner
    state_format = STATE_FORMAT
    state_version = STATE_VERSION
    state_what = "river"
    model_key = "learner"
    n_features: int | None
    pos_label: Any
    replay_every: int | str | None
    replay_passes: int
    average: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        signature = inspect.signature(type(self))
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidParameterError(f"{type(self).__name__}: {exc}") from exc
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            setattr(self, name, value)
        check_options({name: getattr(self, name) for name in _ADAPTER_OPTIONS})
        self._new_learner()

    # -- parameters -------------------------------------------------------------------------

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict[str, Any]]:
        yield dict(cls.learner_class.entry.test_params)

    @property
    def _multiclass(self) -> bool:
        return False

    def _learner_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.learner_class.param_names()}

    # -- state ----------------------------------------------------------------------------

    def _new_learner(self) -> None:
        self._use_names(FeatureNames(self.n_features))
        self._new_labels()
        self._seen = 0
        self._start(self.learner_class(**self._learner_params()))

    def _start(self, learner: LinearLearner, average: WeightAverage | None = None) -> None:
        """Transient fields and the packed path, from the learner, the maps and the
        averaged weights (None: none yet)."""
        self._learner = learner
        self._average = average or WeightAverage(learner.state.buffer.max_examples)
        self._hashing = self.n_features is not None
        self._schedule = replay_schedule(
            self.replay_every, self.replay_passes, learner.state.buffer.max_examples
        )
        #: the count after which the next replay is due (0: none is)
        self._next_replay = self._schedule.next_after(self._seen)
        self._convex = learner.entry.convex_combination
        self._rho = float(learner.rho)
        self._averaging = bool(self.average)
        self._set_next_event()
        #: (Platt, examples, passes) of the last calibration of the averaged scores
        self._average_platt: tuple[Platt, int, int] | None = None
        self._last_x: dict[Hashable, Any] | None = None
        #: label of the last predicted example, learned at the next call (0: none)
        self._deferred = 0.0
        self._pos, self._neg = self._labelling.predicted()
        self._path = OneExamplePath(learner, self._take_path)
        self._path.bind(self._names_room())

    def _names_room(self) -> int:
        """Weights the feature names need before any example has them."""
        return self._names.room()

    def _use_names(self, names: FeatureNames) -> None:
        """Feature names from ``names``; the hot loop looks them up in its map (the same
        dict) through ``_lookup``."""
        self._names = names
        self._index = names.index
        self._lookup: Callable[[Hashable], float] = names.index.__getitem__

    def _take_path(self, new_blocks: bool) -> None:
        """Keep what the hot loop reads of the path (it changed). The loop calls the
        kernels through a local name: ``self._answer(...)`` would be a method call, which
        CPython does not specialize for an attribute that holds a compiled function (about
        a tenth of an example's time), where it does a plain attribute load."""
        path = self._path
        self._F = path.F
        self._raw_at = path.raw_offset
        self._state = path.state
        self._learn = path.kernels.learn_one_at
        self._holding = path.watching
        # the averaged kernels read the example in the live blocks and dot it with the
        # averaged weights (as long as the live ones)
        self._average.resize(path.state[0].shape[0])
        self._set_answer()
        if new_blocks:
            self._last_x = None

    def _set_answer(self) -> None:
        """The kernel that answers (the averaged or the live weights' decision value, after
        learning the deferred example if any) and the address table it and ``_learn``
        take (the state's arrays and the weights that answer as one array, the mode in
        it: :func:`~streamlearn._kernels.single.state_table`), made anew whenever one of
        the arrays changes (a sample of the average writes its bias in place). The hot
        loop calls it with no branch on the mode, nor on whether an example waits."""
        self._answer: Callable[[float, int, Any], float] = self._path.kernels.answer_at
        average = self._average
        #: keeps the arrays whose addresses ``_table`` holds
        self._addresses = (
            state_table(self._path.state, average.weights, average.bias)
            if self._averaging
            else state_table(self._path.state)
        )
        self._table = self._addresses.table

    def _sync(self) -> None:
        """Hand the fast path's counts (and a deferred example) to the learner."""
        if self._deferred:
            self._learn_deferred()
        self._path.sync()

    @property
    def learner(self) -> LinearLearner:
        """The engine learner, up to date (read it; change it only through this object)."""
        self._sync()
        return self._learner

    def replay(self, max_passes: int | None = None) -> Self:
        """Replay the buffer (see ``LinearLearner.replay``), e.g. to convergence."""
        self._sync()
        try:
            self._learner.replay(max_passes)
        finally:
            self._path.bind()
        return self

    def summary(self) -> dict[str, Any]:
        """The learner's counts and margin certificate (``LinearLearner.summary``)."""
        return self.learner.summary()

    @property
    def weights(self) -> dict[Hashable, float]:
        """Weight of every feature name (of every nonzero hashed index with ``n_features``)."""
        coef = self.learner.coef_
        if self._hashing:
            return {int(i): float(coef[i]) for i in np.flatnonzero(coef)}
        return {
            name: float(coef[int(i)]) if i < coef.shape[0] else 0.0
            for name, i in self._index.items()
        }

    @property
    def intercept(self) -> float:
        """The bias b of the decision value w . x + b."""
        return self.learner.intercept_

    # -- labels --------------------------------------------------------------------------

    def _new_labels(self) -> None:
        """No label yet: the hot loop reads their signs through ``_signs`` (the same dict)."""
        self._labelling = BinaryLabels(type(self).__name__)
        self._signs = self._labelling.signs

    def _add_label(self, y: Any, sign: float) -> None:
        self._labelling.add(y, sign)
        self._pos, self._neg = self._labelling.predicted()

    # -- examples ----------------------------------------------------------------------

    def _pack_slow(self, x: Mapping[Hashable, Any], learning: bool) -> tuple[int, bool]:
        """Write ``x`` as the raw example: the slow path, which names bad values, adds new
        names when ``learning`` and skips them otherwise. Returns (entries, whether every
        name of ``x`` is in)."""
        keys = list(x)
        values = list(x.values())
        if not all_finite(values):
            for key, value in zip(keys, values, strict=True):
                check_value(key, value)
        known = self._index.get
        index_of, grow = self._names.index_of, self._path.ensure_weights
        indices: list[float] = []
        kept: list[Any] = []
        for key, value in zip(keys, values, strict=True):
            try:
                i = known(key)
            except TypeError:  # not hashable: index_of says so
                i = None
            if i is None:
                i = index_of(key, learning, grow)
            if i is not None:
                indices.append(i)
                kept.append(value)
        n = len(indices)
        if n > self._path.work:
            self._sync()
            self._path.grow_workspace(n)
        _packer(n)(self._F, self._raw_at, *indices, *kept)
        return n, n == len(keys)

    # -- learning --------------------------------------------------------------------

    def learn_one(self, x: dict[Hashable, Any], y: Any, **kwargs: Any) -> None:
        """Learn one example: stored in the replay buffer, presented once."""
        try:
            sign = self._signs[y]
        except (KeyError, TypeError):  # a label not seen yet (or one that cannot be)
            self._learn_new_label(x, y)
            return
        # _learn_signed, inlined: this and predict_one are the hot loop
        if x == self._last_x:
            # just predicted: its canonical form waits in the workspaces and the next
            # call learns it, so that predict_one + learn_one cost one kernel call (a
            # prediction leaves nothing deferred: _deferred is 0 whenever _last_x is set)
            self._last_x = None
            if self._holding:
                self._watch_predicted(sign)
            else:
                self._deferred = sign
        else:
            self._learn_other(x, sign)
        seen = self._seen = self._seen + 1
        if seen >= self._next_event:
            self._count_events()

    def _learn_new_label(self, x: dict[Hashable, Any], y: Any) -> None:
        """:meth:`learn_one` for a label not seen yet: recorded with its sign only once
        its example has been accepted (a refused example leaves no label behind)."""
        y, sign = self._labelling.sign_of_new(y, self.pos_label)
        self._learn_signed(x, sign)
        self._add_label(y, sign)
        seen = self._seen = self._seen + 1
        if seen >= self._next_event:
            self._count_events()

    def _learn_signed(self, x: dict[Hashable, Any], sign: float) -> None:
        """Learn ``x`` as ``sign`` (what :meth:`learn_one` does inline after the label)."""
        if x == self._last_x:
            self._last_x = None
            if self._holding:
                self._watch_predicted(sign)
            else:
                self._deferred = sign
        else:
            self._learn_other(x, sign)

    def _watch_predicted(self, sign: float) -> None:
        """Learn the example just predicted while the learner's window watches its first
        examples: counted in the window, then deferred as in the hot loop, or, when it
        fills the window, learned now and Delta settled."""
        if self._path.watch_last():
            self._deferred = sign
        else:
            self._path.learn_last(sign)
            self._path.settle_delta()

    def _learn_other(self, x: dict[Hashable, Any], sign: float) -> None:
        """Learn ``x`` as ``sign``, an example other than the one just predicted: the
        deferred one first, then ``x`` packed and learned in one kernel call (held in
        the window while it watches)."""
        if self._deferred:
            self._learn_deferred()
        self._last_x = None
        n = len(x)
        try:
            _PACKERS[n](self._F, self._raw_at, *map(self._lookup, x), *x.values())
        except _PACK_ERRORS:
            n = self._pack_slow(x, learning=True)[0]
        if self._holding:
            status = self._path.hold(n, sign)
            if status:
                refuse_example(x, -status)
        else:
            learn = self._learn  # a local: see _take_path
            status = learn(n, sign, self._table)
            if status:
                if status not in (_NEED_ARENA, _UNBUFFERED):
                    refuse_example(x, -status)
                self._path.settle(sign, status)

    def _count_events(self) -> None:
        """What is due at this count: a sample of the average, a replay."""
        if self._averaging and self._seen >= self._average.next_at:
            self._sample_average()
        if self._seen == self._next_replay:
            self.replay(self.replay_passes)
            self._next_replay = self._schedule.next_after(self._seen)
        self._set_next_event()

    def _set_next_event(self) -> None:
        """The count at which :meth:`_count_events` is due next."""
        due = [self._next_replay] if self._next_replay else []
        if self._averaging:
            due.append(self._average.next_at)
        self._next_event = min(due, default=2**63)

    def _learn_deferred(self) -> None:
        sign, self._deferred = self._deferred, 0.0
        self._path.learn_last(sign)

    def _sample_average(self) -> None:
        """Add the current weights to the average (the example just learned included)."""
        if self._deferred:
            self._learn_deferred()
        F = self._F
        sqnorm, updates = float(F[_SQNORM]), float(F[_UPDATES])
        factor = 0.0
        if updates > 0.0 and sqnorm > 0.0:
            factor = float(F[_SCALE]) / (sqnorm if self._convex else sqnorm / updates)
        average = self._average
        weights = self._state[0]
        if weights.shape[0] > average.weights.shape[0]:  # not reachable: _take_path sizes it
            self._path.refresh()
        average.add(self._seen, weights, self._rho * float(F[_BETA]), factor, self._names_room())
        set_table_bias(self._table, average.bias)  # the same arrays, in place

    # -- prediction ---------------------------------------------------------------------

    def _decision(self, x: dict[Hashable, Any]) -> float:
        """f(x) in the engine's units: scale (w . x + rho beta)."""
        n = len(x)
        try:
            _PACKERS[n](self._F, self._raw_at, *map(self._lookup, x), *x.values())
            complete = True
        except _PACK_ERRORS:
            n, complete = self._pack_slow(x, learning=False)
        f = self._decide_deferring(x, n)
        self._last_x = dict(x) if complete else None
        return f

    def _decide_deferring(self, x: dict[Hashable, Any], n: int) -> float:
        """The decision value of the example of ``n`` entries packed in the blocks (the
        averaged one, in margin units, when averaging), learning first the example
        whose learning was deferred: one kernel call."""
        deferred = self._deferred
        self._deferred = 0.0
        answer = self._answer  # a local: see _take_path
        f: float = answer(deferred, n, self._table)
        if f != f:
            f = self._decide_again(x, n, deferred)
        return f

    def _decide_again(self, x: Mapping[Hashable, Any], n: int, deferred: float) -> float:
        """After a kernel said NaN: finish learning the deferred example (see
        :meth:`OneExamplePath.settle`) and decide again, or name what is wrong with ``x``."""
        self._last_x = None
        status = self._path.status
        if deferred and status in (RowStatus.NEED_ARENA, RowStatus.UNBUFFERED):
            self._path.settle(deferred, -status)  # the deferred example, then x
            answer = self._answer
            f: float = answer(0.0, n, self._table)
            if f == f:
                return f
        refuse_example(x, int(self._path.status))
        return math.nan

    def predict_one(self, x: dict[Hashable, Any], **kwargs: Any) -> Any:
        """The positive label when w . x + b > 0, else the negative one."""
        # _decision's fast path, inlined: this and learn_one are the hot loop
        n = len(x)
        try:
            _PACKERS[n](self._F, self._raw_at, *map(self._lookup, x), *x.values())
        except _PACK_ERRORS:
            return self._pos if self._decision(x) > 0.0 else self._neg
        deferred = self._deferred  # _decide_deferring, inlined
        self._deferred = 0.0
        answer = self._answer
        f: float = answer(deferred, n, self._table)
        if f != f:
            f = self._decide_again(x, n, deferred)
        self._last_x = dict(x)
        return self._pos if f > 0.0 else self._neg

    def predict_proba_one(self, x: dict[Hashable, Any], **kwargs: Any) -> dict[Any, float]:
        """Probabilities of both labels (see the module doc for the map)."""
        return self._proba(self._decision(x))

    def _proba(self, f: float) -> dict[Any, float]:
        sqnorm = float(self._F[_SQNORM])
        updates = float(self._F[_UPDATES])
        positive = 0.5
        if self._averaging:
            if f != 0.0:
                positive = self._average_calibration().probability_one(f)
        elif updates > 0.0 and sqnorm > 0.0:
            unit = sqnorm if self._convex else sqnorm / updates
            positive = self.learner.calibration().probability_one(f / unit)
        if self._pos == self._neg and len(self._labelling.labels) == 1:
            return {self._pos: 1.0}
        return {self._neg: 1.0 - positive, self._pos: positive}

    def _average_calibration(self) -> Platt:
        """Platt scaling of the averaged decision values (:meth:`WeightAverage.calibration`)."""
        self._average_platt = self._average.calibration(self.learner.state, self._average_platt)
        return self._average_platt[0]

    # -- state dictionaries -------------------------------------------------------------

    def _options(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _ADAPTER_OPTIONS}

    def state_dict(self) -> dict[str, Any]:
        """The learner's state, the feature names in index order and the labels with
        their signs: plain values that streamlearn's checkpoint codec stores (when the
        names and labels are str, numbers, bools, None, bytes or tuples of these)."""
        learner = self.learner
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "adapter": type(self).__name__,
            "options": self._options(),
            "learner": learner.state_dict(),
            "names": self._names.names(),
            "labels": self._labelling.state(),
            "seen": self._seen,
            "average": self._average.state_dict() if self._averaging else None,
        }

    def restore(self, model: Any, state: dict[str, Any]) -> None:
        """Continue with the learner ``model`` and the names, labels and count of
        ``state``."""
        names = [] if self.n_features is not None else state["names"]
        self._use_names(FeatureNames(self.n_features, names))
        self._new_labels()
        self._labelling.load(state["labels"])
        self._seen = int(state["seen"])
        average = None
        saved = state.get("average")
        if saved is not None:
            average = WeightAverage(model.state.buffer.max_examples)
            average.load(saved)
            model.state.reserve_weights(average.weights.shape[0])
        self._start(model, average)
        if self._averaging and saved is None and self._seen:
            # a state saved without the average (an older one, or average=False):
            # start from the weights it has
            average = self._average
            average.next_at = self._seen
            average.last_at = self._seen - min(self._seen, average.window)  # a full share
            self._sample_average()
            self._set_next_event()

    @classmethod
    def model_from_state(cls, model_state: dict[str, Any]) -> LinearLearner:
        """The engine learner of a state."""
        return cls.learner_class.from_state(model_state)

    @staticmethod
    def params_of(model: Any) -> dict[str, Any]:
        """The learner's parameters."""
        return dict(model.get_params())

    def model_plain_params(self) -> dict[str, Any]:
        """The learner's plain parameters."""
        return plain_params(self._learner.get_params())


_OPTIONS_DOC = """
    Adapter options (see :mod:`streamlearn.river.binary`): ``n_features`` (None: a map of
    feature names; an int: hashed names), ``pos_label``, ``replay_every`` (None: no
    replay; ``'auto'``: a growing schedule; an int: a fixed one), ``replay_passes``,
    and ``average`` (predict with the averaged weights).
"""


def binary_classifier(
    entry: LearnerEntry, module: str = "streamlearn.river", name: str | None = None
) -> type[LearnerClassifier]:
    """The river binary classifier of a learner (``PDMClassifier`` for PDM): the learner's
    parameters, then the adapter options. ``module`` and ``name`` (default: the learner's
    class name and ``Classifier``) are where the class is reachable (pickle finds it
    there)."""
    name = name or f"{entry.class_name}Classifier"
    engine = engine_parameters(entry)
    n_features, replay_every, replay_passes = COMMON_OPTIONS
    replay_every = replay_every.replace(default=None)
    options = [n_features, POS_LABEL, replay_every, replay_passes, AVERAGE]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def init(self: LearnerClassifier, *args: Any, **kwargs: Any) -> None:
        LearnerClassifier.__init__(self, *args, **kwargs)

    init.__name__ = "__init__"
    init.__qualname__ = f"{name}.__init__"
    init.__signature__ = inspect.Signature([self_param, *engine, *options])  # type: ignore[attr-defined]
    doc = f"river classifier over :class:`streamlearn.{entry.class_name}`: {entry.summary}\n"
    namespace = {
        "__init__": init,
        "__doc__": doc + _OPTIONS_DOC,
        "__module__": module,
        "__qualname__": name,
        "learner_class": entry.learner_class,
    }
    return type(name, (LearnerClassifier,), namespace)


#: every binary adapter class by the engine's ``algorithm`` name
ADAPTERS: dict[str, type[LearnerClassifier]] = {
    entry.name: binary_classifier(entry) for entry in LEARNERS.entries()
}

PerceptronClassifier = ADAPTERS["perceptron"]
PAMClassifier = ADAPTERS["pam"]
PAUMClassifier = ADAPTERS["paum"]
PFMClassifier = ADAPTERS["pfm"]
PDMClassifier = ADAPTERS["pdm"]
PDMSuccClassifier = ADAPTERS["pdm-succ"]
TMargitronClassifier = ADAPTERS["t-margitron"]
AMargitronClassifier = ADAPTERS["a-margitron"]
KozinecClassifier = ADAPTERS["kozinec"]
