"""river binary classifiers for every learner of the engine (river must be installed).

``PDMClassifier``, ``PAUMClassifier`` and the others (all importable from
:mod:`streamlearn.river`) are river ``base.Classifier`` objects: ``learn_one``,
``predict_one`` and ``predict_proba_one``. They have no mini-batch methods: river's
take pandas data frames, which streamlearn does not depend on, and one call per example
is what the adapters are built for. Their parameters are those of the engine class,
with the same names and defaults, plus four options of their own:

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
``replay_every``, ``replay_passes``
    After every ``replay_every`` calls of ``learn_one``, up to ``replay_passes`` replay
    passes over the buffer (the engine's count-based schedule). None (default): no
    replay, a pure online pass; :meth:`LearnerClassifier.replay` replays on demand.

Feature values must be real numbers: ints, floats, bools (0 and 1), numpy scalars or
anything else with ``__float__`` but strings; zero and missing are the same. With
``delta='auto'`` (the engine's default), learning starts once the first
min(1000, buffer_size) examples have arrived and fixed Delta: until then predictions
are those of the zero model. Pass a number for Delta to learn from the first example.

``predict_proba_one`` maps the decision value f(x) = w . x + b (in the engine's units:
for PAUM before the learning rate) through a logistic scaled by the model's own margin
unit u = ||a||^2 / t (||a||^2 for Kozinec, whose a is a convex combination), an upper
bound on the smallest a . y_k of the learned examples:
P(+1 | x) = 1 / (1 + exp(-2 f(x) / u)). A point on the hyperplane gets 0.5, one as far
out as the hardest learned examples about 0.88. Before the first update every label
gets 0.5 (``{False: 0.5, True: 0.5}`` before any label is seen, river's binary
convention).

>>> from river import datasets
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
learner's state block, and one kernel of :mod:`streamlearn._kernels.single` both learns
the example that ``predict_one`` just saw (``learn_one`` only notes its label) and
predicts the next one: a progressive predict_one + learn_one costs one compiled call.
"""

from __future__ import annotations

import inspect
import math
import numbers
import reprlib
import struct
import zlib
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
from river import base

from streamlearn._kernels import single
from streamlearn.errors import (
    InvalidInputError,
    InvalidParameterError,
    StateError,
    check_state_header,
)
from streamlearn.learn import (
    PAM,
    PAUM,
    PDM,
    PFM,
    AMargitron,
    Kozinec,
    LinearLearner,
    PDMSucc,
    Perceptron,
    TMargitron,
)
from streamlearn.learn.base import AUTO_DELTA_WINDOW, STATE_BUILT_WITH
from streamlearn.types import Batch

STATE_FORMAT = "streamlearn.river"
STATE_VERSION = 1
#: names cached with their hashed index before the cache starts over
HASH_CACHE_SIZE = 1 << 20
#: parameters a learned state is built with, which ``clone(new_params,
#: include_attributes=True)`` cannot change: how names become indices, which label is
#: positive, and the learner's own (:data:`~streamlearn.learn.base.STATE_BUILT_WITH`)
FIXED_BY_STATE = ("n_features", "pos_label", *STATE_BUILT_WITH)
_ADAPTER_OPTIONS = ("n_features", "pos_label", "replay_every", "replay_passes")
_FIRST_WORKSPACE = 64

# the hot kernels; _compile_hot_kernels swaps in their machine code for the fixed types
_learn_kernel = single.learn_one
_decision_kernel = single.decision
_learn_last_then_decide = single.learn_last_then_decide
_hot_kernels_compiled = False
#: dtypes of (w, F, Z, slot_label, arena_idx, arena_val), the only ones the hot kernels get
_KERNEL_DTYPES = (np.float64, np.float64, np.int64, np.int8, np.int32, np.float64)
#: ``pack_into`` of n indices and n values as native doubles, by n
_PACKERS: dict[int, Callable[..., None]] = {
    n: struct.Struct(f"@{2 * n}d").pack_into for n in range(_FIRST_WORKSPACE + 1)
}
_PACK_ERRORS = (KeyError, TypeError, struct.error)
_DOUBLE = struct.Struct("@d")


def _packer(n: int) -> Callable[..., None]:
    packer = _PACKERS.get(n)
    if packer is None:
        packer = _PACKERS[n] = struct.Struct(f"@{2 * n}d").pack_into
    return packer


def stable_hash(name: Hashable) -> int:
    """zlib.crc32 of the UTF-8 bytes of ``name`` (of ``repr(name)`` when not a str).

    >>> stable_hash("age"), stable_hash(3) == stable_hash("3")
    (2704281778, True)
    """
    text = name if isinstance(name, str) else repr(name)
    return zlib.crc32(text.encode("utf-8"))


def _natural_sign(label: Any) -> float | None:
    if isinstance(label, bool | np.bool_):
        return 1.0 if label else -1.0
    if isinstance(label, numbers.Real):
        if label == 1:
            return 1.0
        if label in (0, -1):
            return -1.0
    return None


class StateRoundTrips:
    """``from_state``, river's ``clone`` with attributes, and pickling, for an adapter
    whose state (:meth:`state_dict`) holds its model's own state under ``_model_key``.

    An adapter names its state (``_state_format``, ``_state_version``, ``_state_what``)
    and says how its model comes back from a state (:meth:`_model_from_state`), which
    parameters the model gives the adapter (:meth:`_model_params`) and what it does with
    a restored model (``_load``).
    """

    _state_format: ClassVar[str]
    _state_version: ClassVar[int]
    _state_what: ClassVar[str]
    _model_key: ClassVar[str]

    if TYPE_CHECKING:  # given by the adapter, and by river's Estimator

        def state_dict(self) -> dict[str, Any]: ...
        def _load(self, model: Any, state: dict[str, Any]) -> None: ...
        def _get_params(self) -> dict[str, Any]: ...

    @classmethod
    def _model_from_state(cls, model_state: dict[str, Any]) -> Any:
        raise NotImplementedError

    @staticmethod
    def _model_params(model: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _model_plain_params(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """An adapter that continues exactly where the one that made ``state`` stopped."""
        check_state_header(state, cls._state_format, cls._state_version, cls._state_what)
        if state.get("adapter") != cls.__name__:
            raise StateError(f"state is for {state.get('adapter')!r}, not {cls.__name__!r}")
        try:
            model = cls._model_from_state(state[cls._model_key])
            adapter = cls(**cls._model_params(model), **state["options"])
            adapter._load(model, state)
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"incomplete {cls._state_what} state: {exc}") from exc
        return adapter

    def clone(
        self, new_params: dict[str, Any] | None = None, include_attributes: bool = False
    ) -> Self:
        """river's clone: a fresh model with the same parameters (updated by
        ``new_params``); with ``include_attributes``, one that continues from this model's
        state (through :meth:`state_dict`: the arrays it shares with its model would not
        survive river's attribute-by-attribute copy). The learned state follows a new value
        of any parameter but those of :data:`FIXED_BY_STATE`, which it was built with:
        changing one of them with ``include_attributes`` is refused."""
        if include_attributes and new_params:
            fixed = sorted(
                name
                for name in FIXED_BY_STATE
                if name in new_params and new_params[name] != getattr(self, name, None)
            )
            if fixed:
                raise InvalidParameterError(
                    f"clone(include_attributes=True) cannot change {', '.join(fixed)}: the "
                    "learned state was built with the current value (clone without "
                    "include_attributes to start afresh)"
                )
        clone: Self = super().clone(new_params)  # type: ignore[misc]
        if include_attributes:
            state = self.state_dict()
            model_state = {**state[self._model_key], "params": clone._model_plain_params()}
            clone._load(self._model_from_state(model_state), state)
        return clone

    def __getstate__(self) -> dict[str, Any]:
        return {"params": self._get_params(), "state": self.state_dict()}

    def __setstate__(self, pickled: dict[str, Any]) -> None:
        type(self).__init__(self, **pickled["params"])
        state = pickled["state"]
        self._load(self._model_from_state(state[self._model_key]), state)


class LearnerClassifier(StateRoundTrips, base.Classifier):
    """A river binary classifier over one learner of the engine (see the module doc)."""

    #: the engine class this adapter runs
    learner_class: ClassVar[type[LinearLearner]] = LinearLearner
    _state_format = STATE_FORMAT
    _state_version = STATE_VERSION
    _state_what = "river"
    _model_key = "learner"
    #: values for parameters without a default, for river's checks
    _test_params: ClassVar[dict[str, Any]] = {}
    n_features: int | None
    pos_label: Any
    replay_every: int | None
    replay_passes: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        signature = inspect.signature(type(self))
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidParameterError(f"{type(self).__name__}: {exc}") from exc
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            setattr(self, name, value)
        self._check_options()
        self._new_learner()

    # -- parameters -------------------------------------------------------------------------

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict[str, Any]]:
        yield dict(cls._test_params)

    @property
    def _multiclass(self) -> bool:
        return False

    def _learner_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.learner_class._param_names()}

    def _check_options(self) -> None:
        n_features = self.n_features
        if n_features is not None and (
            isinstance(n_features, bool)
            or not isinstance(n_features, int | np.integer)
            or not 1 <= n_features <= 2**31 - 1
        ):
            raise InvalidParameterError(
                f"n_features must be None or an integer in [1, 2**31 - 1], got {n_features!r}"
            )
        every = self.replay_every
        if every is not None and (
            isinstance(every, bool) or not isinstance(every, int | np.integer) or every < 1
        ):
            raise InvalidParameterError(
                f"replay_every must be None or an integer >= 1, got {every!r}"
            )
        passes = self.replay_passes
        if isinstance(passes, bool) or not isinstance(passes, int | np.integer) or passes < 1:
            raise InvalidParameterError(f"replay_passes must be an integer >= 1, got {passes!r}")
        if self.pos_label is not None:
            try:
                hash(self.pos_label)
            except TypeError as exc:
                raise InvalidParameterError("pos_label must be hashable") from exc

    # -- state ----------------------------------------------------------------------------

    def _new_learner(self) -> None:
        self._learner = self.learner_class(**self._learner_params())
        self._index: dict[Hashable, float] = {}
        self._signs: dict[Hashable, float] = {}
        self._labels: list[Hashable] = []
        self._seen = 0
        self._start()

    def _start(self) -> None:
        """Transient fields, blocks and views, from the learner and the maps."""
        self._hashing = self.n_features is not None
        self._lookup: Callable[[Hashable], float] = self._index.__getitem__
        self._replay_every = int(self.replay_every or 0)
        self._last_x: dict[Hashable, Any] | None = None
        #: label of the last predicted example, learned at the next call (0: none)
        self._deferred = 0.0
        self._held: list[tuple[np.ndarray, np.ndarray, float]] | None = None
        self._F = np.zeros(0)
        self._Z = np.zeros(0, dtype=np.int64)
        self._work = _FIRST_WORKSPACE
        self._set_labels()
        self._bind()

    def _new_blocks(self) -> None:
        learner = self._learner
        buf = learner._buffer
        F, Z = single.empty_blocks(buf.max_examples, self._work)
        views = single.block_views(F, Z)
        for name, source in (
            ("scalars", learner._scalars),
            ("stats", learner._stats),
            ("ring", buf.ring),
            ("slot_start", buf.slot_start),
            ("slot_len", buf.slot_len),
            ("slot_alpha", buf.slot_alpha),
            ("slot_sqnorm", buf.slot_sqnorm),
        ):
            views[name][: source.shape[0]] = source
        learner._scalars = views["scalars"]
        learner._stats = views["stats"]
        buf.ring = views["ring"]
        buf.slot_start = views["slot_start"]
        buf.slot_len = views["slot_len"]
        buf.slot_alpha = views["slot_alpha"]
        buf.slot_sqnorm = views["slot_sqnorm"]
        self._F, self._Z = F, Z
        self._work_indices = views["work_indices"]
        self._work_values = views["work_values"]
        self._raw_at = 8 * single.raw_offset(buf.max_examples, self._work)
        self._last_x = None

    def _bind(self) -> None:
        """Point the fast path at the learner's arrays after the learner itself ran."""
        learner = self._learner
        buf = learner._buffer
        F, Z = self._F, self._Z
        if not all(
            array_.base is block
            for array_, block in (
                (learner._scalars, F),
                (learner._stats, Z),
                (buf.ring, Z),
                (buf.slot_start, Z),
                (buf.slot_len, Z),
                (buf.slot_alpha, F),
                (buf.slot_sqnorm, F),
            )
        ):
            self._new_blocks()
            F, Z = self._F, self._Z
        F[single.F_RULE : single.F_RULE + 2] = learner._rule_params()
        F[single.F_RHO] = learner.rho
        F[single.F_DELTA_SQ] = learner._delta_sq
        Z[single.Z_CODE] = learner.rule
        Z[single.Z_MAX_NNZ] = buf.max_nnz
        Z[single.Z_EXAMPLES] = learner._examples_seen
        Z[single.Z_N_FEATURES] = learner._n_features
        Z[single.Z_CHANGED] = 0
        needed = self.n_features if self._hashing else len(self._index)
        self._ensure_weights(int(needed or 0))
        if learner.delta_ is None:
            if self._held is None:
                self._held = []
            window = min(AUTO_DELTA_WINDOW, learner.buffer_size)
            self._hold_room = window - learner._window_seen
        else:
            self._held = None
        self._refresh_arrays()

    def _refresh_arrays(self) -> None:
        learner = self._learner
        buf = learner._buffer
        self._w = learner._w
        args: single.State = (
            learner._w, self._F, self._Z, buf.slot_label, buf.arena_idx, buf.arena_val
        )  # fmt: skip
        for array_, dtype in zip(args, _KERNEL_DTYPES, strict=True):
            flags = array_.flags
            if (
                array_.dtype != dtype
                or array_.ndim != 1
                or not (flags.c_contiguous and flags.writeable)
            ):
                raise StateError(f"a learner array is {array_.dtype}[{array_.shape}], not {dtype}")
        self._state = args
        _compile_hot_kernels(args)

    def _ensure_weights(self, n: int) -> None:
        learner = self._learner
        if n > learner._w.shape[0]:
            grown = np.zeros(max(2 * learner._w.shape[0], n), dtype=np.float64)
            grown[: learner._w.shape[0]] = learner._w
            learner._w = grown
            self._refresh_arrays()

    def _sync(self) -> None:
        """Hand the fast path's counts (and held examples) to the learner."""
        if self._deferred:
            self._learn_deferred()
        learner = self._learner
        Z = self._Z
        learner._examples_seen = int(Z[single.Z_EXAMPLES])
        learner._n_features = max(learner._n_features, int(Z[single.Z_N_FEATURES]))
        if Z[single.Z_CHANGED]:
            learner._converged = False
            Z[single.Z_CHANGED] = 0
        if self._held:
            held, self._held = self._held, []
            lengths = [len(idx) for idx, _, _ in held]
            learner.learn_batch(
                Batch.from_csr(
                    np.concatenate([[0], np.cumsum(lengths)]),
                    np.concatenate([idx for idx, _, _ in held]),
                    np.concatenate([val for _, val, _ in held]),
                    np.array([label for _, _, label in held]),
                )
            )
            self._bind()

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
            self._bind()
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

    def _sign_of_new_label(self, y: Any) -> tuple[Any, float]:
        """The label as it will be kept and its sign, for a label not seen yet; refuses
        a third one. Nothing is recorded: :meth:`_add_label` does, once its example has
        been accepted."""
        try:
            hash(y)
        except TypeError as exc:
            raise InvalidInputError(f"labels must be hashable, got {y!r}") from exc
        if isinstance(y, np.bool_):
            y = bool(y)
        if len(self._labels) == 2:
            raise InvalidInputError(
                f"{type(self).__name__} is a binary classifier: got a third label {y!r} "
                f"after {self._labels[0]!r} and {self._labels[1]!r}"
            )
        taken = set(self._signs.values())
        if self.pos_label is not None:
            sign = 1.0 if y == self.pos_label else -1.0
            if sign in taken:
                raise InvalidInputError(
                    f"labels {self._labels[0]!r} and {y!r} both differ from pos_label="
                    f"{self.pos_label!r}: a binary classifier needs pos_label among them"
                )
        else:
            natural = _natural_sign(y)
            if natural is not None and natural not in taken:
                sign = natural
            else:
                sign = -1.0 if -1.0 not in taken else 1.0
        return y, sign

    def _add_label(self, y: Any, sign: float) -> None:
        self._signs[y] = sign
        self._labels.append(y)
        self._set_labels()

    def _set_labels(self) -> None:
        """The labels predicted for a positive and a non-positive decision value."""
        by_sign: dict[float, Any] = {sign: label for label, sign in self._signs.items()}
        if not by_sign:
            self._pos, self._neg = True, False
            return
        if len(by_sign) == 1:
            ((sign, label),) = by_sign.items()
            other: Any = (not label) if isinstance(label, bool) else label
            by_sign[-sign] = other
        self._pos, self._neg = by_sign[1.0], by_sign[-1.0]

    # -- examples ----------------------------------------------------------------------

    def _pack_slow(self, x: Mapping[Hashable, Any], learning: bool) -> tuple[int, bool]:
        """Write ``x`` as the raw example: the slow path, which names bad values, adds new
        names when ``learning`` and skips them otherwise. Returns (entries, whether every
        name of ``x`` is in)."""
        keys = list(x)
        values = list(x.values())
        for key, value in zip(keys, values, strict=True):
            _check_value(key, value)
        indices: list[float] = []
        kept: list[Any] = []
        for key, value in zip(keys, values, strict=True):
            i = self._index_of(key, learning)
            if i is not None:
                indices.append(i)
                kept.append(value)
        n = len(indices)
        if n > self._work:
            self._grow_workspace(n)
        _packer(n)(self._F, self._raw_at, *indices, *kept)
        return n, n == len(keys)

    def _index_of(self, key: Hashable, learning: bool) -> float | None:
        try:
            i = self._index.get(key)
        except TypeError as exc:
            raise InvalidInputError(f"feature names must be hashable, got {key!r}") from exc
        if i is not None:
            return i
        if self._hashing:
            if len(self._index) >= HASH_CACHE_SIZE:
                self._index.clear()
            i = float(stable_hash(key) % int(self.n_features or 1))
        elif learning:
            i = float(len(self._index))
            self._ensure_weights(len(self._index) + 1)
        else:
            return None
        self._index[key] = i
        return i

    def _reject(self, x: Mapping[Hashable, Any], status: int) -> None:
        for key, value in x.items():
            _check_value(key, value)
        if status == single.BAD_INDEX:
            raise InvalidInputError("a feature index is out of range")  # not reachable from dicts
        if status == single.TOO_LARGE:
            raise InvalidInputError(
                f"the values of {reprlib.repr(dict(x))} are too large: the sum of their squares "
                "overflows float64"
            )
        raise InvalidInputError(f"cannot use example {dict(x)!r} (status {status})")

    def _grow_workspace(self, n: int) -> None:
        self._sync()
        work = self._work
        while work < n:
            work *= 2
        self._work = work
        self._new_blocks()
        self._bind()

    # -- learning --------------------------------------------------------------------

    def learn_one(self, x: dict[Hashable, Any], y: Any, **kwargs: Any) -> None:
        """Learn one example: stored in the replay buffer, presented once."""
        try:
            known = self._signs.get(y)
        except TypeError:
            known = None
        new_label = known is None
        if known is None:
            y, sign = self._sign_of_new_label(y)
        else:
            sign = known
        if x == self._last_x and self._held is None:
            # just predicted: its canonical form waits in the workspaces and the next
            # call learns it, so that predict_one + learn_one cost one kernel call (a
            # prediction leaves nothing deferred: _deferred is 0 whenever _last_x is set)
            self._deferred = sign
            self._last_x = None
        else:
            if self._deferred:
                self._learn_deferred()
            self._last_x = None
            n = len(x)
            try:
                _PACKERS[n](self._F, self._raw_at, *map(self._lookup, x), *x.values())
            except _PACK_ERRORS:
                n = self._pack_slow(x, learning=True)[0]
            if self._held is None:
                status = _learn_kernel(n, sign, self._state)
                if status:
                    if status not in (-single.NEED_ARENA, -single.UNBUFFERED):
                        self._reject(x, -status)
                    self._settle(sign, status)
            else:
                self._hold(n, sign, x)
        if new_label:  # only now: a refused example leaves no label behind
            self._add_label(y, sign)
        if self._replay_every:
            self._seen += 1
            if self._seen % self._replay_every == 0:
                self.replay(self.replay_passes)

    def _learn_deferred(self) -> None:
        sign, self._deferred = self._deferred, 0.0
        self._settle(sign, single.learn_last(sign, self._state))

    def _settle(self, sign: float, status: int) -> None:
        """Finish learning the example in the workspaces after a kernel said ``status``:
        grow the arena while it is short; present an example larger than the buffer
        can ever hold without storing it."""
        while status == -single.NEED_ARENA:
            self._grow_arena()
            status = single.learn_last(sign, self._state)
        if status == -single.UNBUFFERED:
            single.learn_last_unbuffered(sign, self._state)

    def _grow_arena(self) -> None:
        self._learner._buffer.reserve_for(int(self._Z[single.Z_WHERE]) + 1)
        self._refresh_arrays()

    def _hold(self, n: int, sign: float, x: Mapping[Hashable, Any]) -> None:
        """Keep an example while ``delta='auto'`` waits for its window."""
        held = self._held
        assert held is not None
        m = single.canonical(n, self._w.shape[0], self._F, self._Z)
        if m < 0:
            self._reject(x, -m)
        held.append((self._work_indices[:m].copy(), self._work_values[:m].copy(), sign))
        if len(held) >= self._hold_room:
            self._sync()

    # -- prediction ---------------------------------------------------------------------

    def _decision(self, x: dict[Hashable, Any]) -> float:
        """f(x) in the engine's units: scale (w . x + rho beta)."""
        n = len(x)
        try:
            _PACKERS[n](self._F, self._raw_at, *map(self._lookup, x), *x.values())
            complete = True
        except _PACK_ERRORS:
            n, complete = self._pack_slow(x, learning=False)
        deferred = self._deferred
        if deferred:
            self._deferred = 0.0
            f: float = _learn_last_then_decide(deferred, n, self._state)
        else:
            f = _decision_kernel(n, self._state)
        if f != f:
            f = self._decide_again(x, n, deferred)
        self._last_x = dict(x) if complete else None
        return f

    def _decide_again(self, x: Mapping[Hashable, Any], n: int, deferred: float) -> float:
        """After a kernel said NaN: finish learning the deferred example (see
        :meth:`_settle`) and decide again, or name what is wrong with ``x``."""
        self._last_x = None
        status = int(self._Z[single.Z_STATUS])
        if deferred and status in (single.NEED_ARENA, single.UNBUFFERED):
            self._settle(deferred, -status)  # the deferred example, then x
            f: float = _decision_kernel(n, self._state)
            if f == f:
                return f
        self._reject(x, int(self._Z[single.Z_STATUS]))
        return math.nan

    def predict_one(self, x: dict[Hashable, Any], **kwargs: Any) -> Any:
        """The positive label when w . x + b > 0, else the negative one."""
        # _decision's fast path, inlined: this and learn_one are the hot loop
        n = len(x)
        try:
            _PACKERS[n](self._F, self._raw_at, *map(self._lookup, x), *x.values())
        except _PACK_ERRORS:
            return self._pos if self._decision(x) > 0.0 else self._neg
        deferred = self._deferred
        if deferred:
            self._deferred = 0.0
            f: float = _learn_last_then_decide(deferred, n, self._state)
        else:
            f = _decision_kernel(n, self._state)
        if f != f:
            f = self._decide_again(x, n, deferred)
        self._last_x = dict(x)
        return self._pos if f > 0.0 else self._neg

    def predict_proba_one(self, x: dict[Hashable, Any], **kwargs: Any) -> dict[Any, float]:
        """Probabilities of both labels (see the module doc for the map)."""
        return self._proba(self._decision(x))

    def _proba(self, f: float) -> dict[Any, float]:
        sqnorm = float(self._F[1])
        updates = float(self._F[2])
        positive = 0.5
        if updates > 0.0 and sqnorm > 0.0:
            unit = sqnorm if self.learner_class is Kozinec else sqnorm / updates
            positive = 0.5 * (1.0 + math.tanh(f / unit))
        if self._pos == self._neg and len(self._labels) == 1:
            return {self._pos: 1.0}
        return {self._neg: 1.0 - positive, self._pos: positive}

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
            "names": [] if self._hashing else list(self._index),
            "labels": [[label, sign] for label, sign in self._signs.items()],
            "seen": self._seen,
        }

    def _load(self, learner: LinearLearner, state: dict[str, Any]) -> None:
        self._learner = learner
        names = [] if self._hashing else state["names"]
        self._index = {name: float(i) for i, name in enumerate(names)}
        self._signs = {}
        self._labels = []
        for label, sign in state["labels"]:
            self._signs[label] = float(sign)
            self._labels.append(label)
        self._seen = int(state["seen"])
        self._start()

    @classmethod
    def _model_from_state(cls, model_state: dict[str, Any]) -> LinearLearner:
        return cls.learner_class.from_state(model_state)

    @staticmethod
    def _model_params(model: Any) -> dict[str, Any]:
        return dict(model.get_params())

    def _model_plain_params(self) -> dict[str, Any]:
        return self._learner.plain_params()


def _compile_hot_kernels(args: single.State) -> None:
    """Call the per-example kernels without numba's type dispatch from now on: every
    caller passes a Python int, a Python float and the state tuple, whose arrays
    ``_refresh_arrays`` checks to be of ``_KERNEL_DTYPES``."""
    global _learn_kernel, _decision_kernel, _learn_last_then_decide, _hot_kernels_compiled
    if _hot_kernels_compiled:
        return
    _decision_kernel = single.compiled(single.decision, 0, args)
    _learn_kernel = single.compiled(single.learn_one, 0, 1.0, args)
    _learn_last_then_decide = single.compiled(single.learn_last_then_decide, 1.0, 0, args)
    _hot_kernels_compiled = True


def _check_value(key: Hashable, value: Any) -> None:
    """Refuse what the fast path refuses (struct's conversion to a double), by name."""
    try:
        (number,) = _DOUBLE.unpack(_DOUBLE.pack(value))
    except (struct.error, TypeError, ValueError, OverflowError):
        raise InvalidInputError(
            f"feature {key!r} has the value {value!r}: values must be real numbers"
        ) from None
    if not math.isfinite(number):
        raise InvalidInputError(f"feature {key!r} has the value {value!r}: not finite")


_OPTIONS_DOC = """
    Adapter options (see :mod:`streamlearn.river`): ``n_features`` (None: a map of feature
    names; an int: hashed names), ``pos_label``, ``replay_every`` (None: no replay) and
    ``replay_passes``.
"""


def _adapter(
    name: str, learner_class: type[LinearLearner], test_params: dict[str, Any] | None = None
) -> type[LearnerClassifier]:
    """The adapter class of one learner: its parameters, then the adapter options."""
    engine = list(inspect.signature(learner_class.__init__).parameters.values())[1:]
    options = [
        inspect.Parameter("n_features", inspect.Parameter.KEYWORD_ONLY, default=None),
        inspect.Parameter("pos_label", inspect.Parameter.KEYWORD_ONLY, default=None),
        inspect.Parameter("replay_every", inspect.Parameter.KEYWORD_ONLY, default=None),
        inspect.Parameter("replay_passes", inspect.Parameter.KEYWORD_ONLY, default=1),
    ]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def init(self: LearnerClassifier, *args: Any, **kwargs: Any) -> None:
        LearnerClassifier.__init__(self, *args, **kwargs)

    init.__name__ = init.__qualname__ = "__init__"
    init.__signature__ = inspect.Signature([self_param, *engine, *options])  # type: ignore[attr-defined]
    summary = (learner_class.__doc__ or "").strip().splitlines()[0]
    doc = (
        f"river classifier over :class:`streamlearn.{learner_class.__name__}`: {summary}\n"
        f"{_OPTIONS_DOC}"
    )
    namespace = {
        "__init__": init,
        "__doc__": doc,
        "__module__": "streamlearn.river",
        "__qualname__": name,
        "learner_class": learner_class,
        "_test_params": test_params or {},
    }
    return type(name, (LearnerClassifier,), namespace)


PerceptronClassifier = _adapter("PerceptronClassifier", Perceptron)
PAMClassifier = _adapter("PAMClassifier", PAM)
PAUMClassifier = _adapter("PAUMClassifier", PAUM)
PFMClassifier = _adapter("PFMClassifier", PFM, {"beta": 0.01})
PDMClassifier = _adapter("PDMClassifier", PDM)
PDMSuccClassifier = _adapter("PDMSuccClassifier", PDMSucc)
TMargitronClassifier = _adapter("TMargitronClassifier", TMargitron)
AMargitronClassifier = _adapter("AMargitronClassifier", AMargitron)
KozinecClassifier = _adapter("KozinecClassifier", Kozinec)

#: every adapter class by the engine's ``algorithm`` name
ADAPTERS: dict[str, type[LearnerClassifier]] = {
    cls.learner_class.algorithm: cls
    for cls in (
        PerceptronClassifier, PAMClassifier, PAUMClassifier, PFMClassifier, PDMClassifier,
        PDMSuccClassifier, TMargitronClassifier, AMargitronClassifier, KozinecClassifier,
    )
}  # fmt: skip

__all__ = [
    "ADAPTERS",
    "AMargitronClassifier",
    "KozinecClassifier",
    "LearnerClassifier",
    "PAMClassifier",
    "PAUMClassifier",
    "PDMClassifier",
    "PDMSuccClassifier",
    "PFMClassifier",
    "PerceptronClassifier",
    "TMargitronClassifier",
    "stable_hash",
]
