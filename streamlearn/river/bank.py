"""river multi-class and multi-label classifiers: one-vs-rest model banks (river needed).

For every learner of the engine there are two classes over a
:class:`~streamlearn.learn.bank.ModelBank` (one binary learner per label, one shared
replay buffer): ``PDMOneVsRestClassifier`` (a river multi-class ``base.Classifier``)
and ``PDMMultiLabelClassifier`` (a river ``base.MultiLabelClassifier``), and likewise
``PAUM...``, ``Perceptron...``, ``PAM...``, ``PFM...``, ``PDMSucc...``,
``TMargitron...``, ``AMargitron...`` and ``Kozinec...``. They are importable from
:mod:`streamlearn.river` too; :data:`ONE_VS_REST_ADAPTERS` and
:data:`MULTILABEL_ADAPTERS` name them by the engine's ``algorithm``.

Their parameters are the engine class's (the same names and defaults), plus the
binary adapters' ``n_features`` (None: a map of feature names kept in the model; an
int: names hashed with :func:`streamlearn.river.stable_hash` modulo ``n_features``),
``replay_every`` and ``replay_passes`` (when to replay every label's learner, up to
``replay_passes`` passes each time: ``'auto'`` by default, the binary adapters' growing
schedule), and for PAUM the bank's
``tau_pos_kappa`` (per-label margin of positives). Feature values follow the binary
adapters' rules, Delta too (``'first'`` by default: the first example fixes it). With
``delta='auto'`` learning starts once the first min(1000, buffer_size) examples have
fixed Delta; until then every decision value is 0.

Labels are any hashable values and appear as the stream goes: a new label starts a
learner that is presented the buffered examples as negatives (see the bank). The
multi-class classifier learns label y against every other; the multi-label classifier
learns ``y = {label: bool}`` with each True label positive and every other label
(False, missing, or never mentioned) negative.

Predictions come from the decision values f_l(x) of the labels' learners (in the
engine's units: for PAUM before the learning rate). Probabilities are calibrated as the
binary adapters' are: each label's p_l is its learner's Platt sigmoid (fitted on the
window with that label's signs, ``LinearLearner.calibration``) of f_l(x) / u_l, with u_l
= ||a_l||^2 / t_l its margin unit (||a_l||^2 for Kozinec); 0.5 before its first update.

- Multi-class ``predict_one``: the label of the largest f_l (ties: the label seen
  first); None before any label. ``predict_proba_one``: the bank's class probabilities,
  the softmax of the f_l times one scale fitted on the window
  (``ModelBank.class_probabilities``, temperature scaling), whose most probable label is
  ``predict_one``'s. ``rank_one``: every label by decreasing f_l.
- Multi-label ``predict_one``: ``{label: f_l(x) > 0}`` for every label seen.
  ``predict_proba_one``: river's multi-label form ``{label: {False: 1 - p_l, True: p_l}}``.

>>> from river import datasets
>>> from streamlearn.river import PDMOneVsRestClassifier
>>> model = PDMOneVsRestClassifier(eps=0.1, delta=1.0)
>>> for x, y in datasets.ImageSegments().take(300):
...     model.learn_one(x, y)
>>> x, y = next(iter(datasets.ImageSegments()))
>>> model.predict_one(x) in model.labels, len(model.predict_proba_one(x))
(True, 7)

The per-label weights equal those of a ``ModelBank`` (and so of the standalone engine
learner) on the same examples; :meth:`BankClassifierBase.state_dict` and ``from_state``
carry the bank's state plus the feature map and the labels.
"""

from __future__ import annotations

import inspect
import struct
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt
from river import base

from streamlearn.errors import (
    InvalidInputError,
    InvalidParameterError,
    StateError,
)
from streamlearn.learn import LEARNERS, LearnerEntry, LinearLearner
from streamlearn.learn.bank import ModelBank
from streamlearn.learn.params import plain_params, without_bank_params
from streamlearn.river.features import HASH_CACHE_SIZE, check_value, stable_hash
from streamlearn.river.options import (
    COMMON_OPTIONS,
    TAU_POS_KAPPA,
    check_options,
    engine_parameters,
    replay_schedule,
)
from streamlearn.river.roundtrip import StateRoundTrips

STATE_FORMAT = "streamlearn.river.bank"
STATE_VERSION = 1
_OPTIONS = ("n_features", "replay_every", "replay_passes")
_STRUCTS: dict[int, struct.Struct] = {}
_EMPTY_LABELS = np.zeros(0, dtype=np.float64)
_NO_DECISIONS = np.zeros(0, dtype=np.float64)
#: an example in canonical form: (indices, values, decision values by label id)
_Encoded = tuple[npt.NDArray[np.int32], npt.NDArray[np.float64], npt.NDArray[np.float64]]


def _doubles(n: int) -> struct.Struct:
    packer = _STRUCTS.get(n)
    if packer is None:
        packer = _STRUCTS[n] = struct.Struct(f"@{n}d")
    return packer


class BankClassifierBase(StateRoundTrips, base.Estimator):
    """What the multi-class and multi-label adapters share (see the module doc)."""

    #: the engine class of every label's learner
    learner_class: ClassVar[type[LinearLearner]] = LinearLearner
    state_format = STATE_FORMAT
    state_version = STATE_VERSION
    state_what = "river bank"
    model_key = "bank"
    n_features: int | None
    replay_every: int | str | None
    replay_passes: int
    tau_pos_kappa: float | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            bound = inspect.signature(type(self)).bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidParameterError(f"{type(self).__name__}: {exc}") from exc
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            setattr(self, name, value)
        if not hasattr(self, "tau_pos_kappa"):
            self.tau_pos_kappa = None
        check_options({name: getattr(self, name) for name in _OPTIONS})
        self._start(self._new_bank(), names=[], labels=[], seen=0)

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict[str, Any]]:
        yield dict(cls.learner_class.entry.test_params)

    def _learner_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.learner_class.param_names()}

    def _options(self) -> dict[str, Any]:
        options = {name: getattr(self, name) for name in _OPTIONS}
        if _takes_kappa(self.learner_class.entry):
            options["tau_pos_kappa"] = self.tau_pos_kappa
        return options

    def _new_bank(self) -> ModelBank:
        learner = self.learner_class(**self._learner_params())
        return ModelBank(learner, tau_pos_kappa=self.tau_pos_kappa)

    def _start(
        self, bank: ModelBank, names: list[Hashable], labels: list[Hashable], seen: int
    ) -> None:
        self._bank = bank
        self._hashing = self.n_features is not None
        self._index: dict[Hashable, int] = (
            {} if self._hashing else {n: i for i, n in enumerate(names)}
        )
        self._labels: list[Hashable] = list(labels)
        self._label_ids: dict[Hashable, int] = {label: i for i, label in enumerate(labels)}
        self._seen = seen
        self._schedule = replay_schedule(
            self.replay_every, self.replay_passes, bank.buffer.max_examples
        )
        #: the count after which the next replay is due (0: none is)
        self._next_replay = self._schedule.next_after(seen)
        self._columns = np.zeros(0, dtype=np.intp)
        self._last: tuple[dict[Hashable, Any], np.ndarray, np.ndarray] | None = None

    # -- what the model holds ---------------------------------------------------------

    @property
    def bank(self) -> ModelBank:
        """The model bank (read it; learn only through this object). Its label values
        are the positions of :attr:`labels`."""
        return self._bank

    @property
    def labels(self) -> list[Hashable]:
        """Every label seen, in order of first appearance."""
        return list(self._labels)

    def summary(self) -> dict[str, Any]:
        """The bank's counts and per-label margin certificates (``ModelBank.summary``)."""
        return self._bank.summary()

    @property
    def weights(self) -> dict[Hashable, dict[Hashable, float]]:
        """Per label, the weight of every feature name (of every nonzero hashed index with
        ``n_features``); zero for a label whose learner has not started."""
        out: dict[Hashable, dict[Hashable, float]] = {}
        bank = self._bank
        for position, label in enumerate(self._labels):
            coef = (
                bank.learner(float(position)).coef_
                if float(position) in bank.labels_
                else np.zeros(0)
            )
            if self._hashing:
                out[label] = {int(i): float(coef[i]) for i in np.flatnonzero(coef)}
            else:
                out[label] = {
                    name: float(coef[i]) if i < coef.shape[0] else 0.0
                    for name, i in self._index.items()
                }
        return out

    def replay(self, max_passes: int | None = None) -> Self:
        """Replay every label's learner (``ModelBank.replay``), e.g. to convergence."""
        self._bank.replay(max_passes)
        return self

    # -- examples -----------------------------------------------------------------------

    def _encode(self, x: Mapping[Hashable, Any], learning: bool, decide: bool = False) -> _Encoded:
        """Canonical indices and values of ``x`` (zeros dropped, indices sorted, repeated
        hashed indices added up: the rows ``as_rows`` makes of the same example) and, when
        ``decide``, the decision values by the bank's label id. The last example whose
        every name was known is kept with its form, so that ``learn_one`` after
        ``predict_one`` of the same example encodes it once."""
        last = self._last
        if last is not None and x == last[0]:
            # the form is the same; the decisions of the model as it is now
            decisions = self._bank.decision_row(last[1], last[2]) if decide else _NO_DECISIONS
            return last[1], last[2], decisions
        complete = True
        try:
            indices = [self._index[key] for key in x]
        except (KeyError, TypeError):
            if learning:  # a refused example adds no name
                for key, value in x.items():
                    check_value(key, value)
            indices = self._slow_indices(x, learning)
            if len(indices) != len(x):
                complete = False
                x = {key: value for key, value in x.items() if self._index.get(key) is not None}
        try:
            raw = _doubles(len(x)).pack(*x.values())
        except (struct.error, TypeError):
            for key, value in x.items():
                check_value(key, value)
            raise
        found = self._bank.canonical_decisions(
            np.array(indices, dtype=np.int64), np.frombuffer(raw, dtype=np.float64), decide
        )
        if found is None:
            for key, value in x.items():
                check_value(key, value)
            raise InvalidInputError(f"cannot use example {dict(x)!r}")
        self._last = (dict(x), found[0], found[1]) if complete and decide else None
        return found

    def _slow_indices(self, x: Mapping[Hashable, Any], learning: bool) -> list[int]:
        """Indices of the names of ``x``, adding new ones when ``learning`` (map) or
        hashing them; unknown names are left out when predicting with a map."""
        indices = []
        for key in x:
            try:
                i = self._index.get(key)
            except TypeError as exc:
                raise InvalidInputError(f"feature names must be hashable, got {key!r}") from exc
            if i is None:
                if self._hashing:
                    if len(self._index) >= HASH_CACHE_SIZE:
                        self._index.clear()
                    i = stable_hash(key) % int(self.n_features or 1)
                    self._index[key] = i
                elif learning:
                    i = self._index[key] = len(self._index)
                else:
                    continue
            indices.append(i)
        return indices

    def _label_id(self, label: Hashable) -> int:
        try:
            label_id = self._label_ids.get(label)
        except TypeError as exc:
            raise InvalidInputError(f"labels must be hashable, got {label!r}") from exc
        if label_id is None:
            if isinstance(label, np.bool_):
                label = bool(label)
            label_id = self._label_ids[label] = len(self._labels)
            self._labels.append(label)
        return label_id

    def _learn(self, encoded: _Encoded, positives: list[int]) -> None:
        """Learn an example :meth:`_encode` accepted, positive for the label ids
        ``positives`` and negative for every other."""
        indices, values, _ = encoded
        labels = np.array(positives, dtype=np.float64) if positives else _EMPTY_LABELS
        self._bank.learn_example(indices, values, labels)
        self._seen += 1
        if self._seen == self._next_replay:
            self._bank.replay(self.replay_passes)
            self._next_replay = self._schedule.next_after(self._seen)

    # -- decision values ----------------------------------------------------------------

    def _decisions(self, x: Mapping[Hashable, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Decision values by label position, and by the bank's label id."""
        bank = self._bank
        f = np.zeros(len(self._labels), dtype=np.float64)
        if not bank.n_labels:
            return f, f[:0]
        if self._columns.shape[0] != bank.n_labels:
            self._columns = bank.labels_.astype(np.intp)
        _, _, by_id = self._encode(x, learning=False, decide=True)
        f[self._columns] = by_id
        return f, by_id

    def _probabilities(self, x: Mapping[Hashable, Any]) -> np.ndarray:
        """Each label's calibrated probability p_l by label position (module doc)."""
        f, by_id = self._decisions(x)
        p = np.full_like(f, 0.5)
        if by_id.shape[0]:
            units = self._bank.margin_units()
            learners = self._bank.learners()
            by_label = [
                learners[i].calibration().probability_one(v / u) if u > 0.0 else 0.5
                for i, (v, u) in enumerate(zip(by_id.tolist(), units.tolist(), strict=True))
            ]
            p[self._columns] = by_label
        return p

    def rank_one(self, x: dict[Hashable, Any]) -> list[Hashable]:
        """Every label seen, by decreasing decision value (ties: the label seen first)."""
        f, _ = self._decisions(x)
        return [self._labels[i] for i in np.argsort(-f, kind="stable").tolist()]

    # -- state dictionaries -----------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The bank's state, the feature names in index order and the labels in order:
        plain values that streamlearn's checkpoint codec stores (when the names and
        labels are str, numbers, bools, None, bytes or tuples of these)."""
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "adapter": type(self).__name__,
            "options": self._options(),
            "bank": self._bank.state_dict(),
            "names": [] if self._hashing else list(self._index),
            "labels": list(self._labels),
            "seen": self._seen,
        }

    def restore(self, model: Any, state: dict[str, Any]) -> None:
        """Continue with the bank ``model`` and the names, labels and count of ``state``."""
        if model.algorithm != self.learner_class.algorithm:
            raise StateError(f"the state's bank runs {model.algorithm!r}")
        self._start(model, list(state["names"]), list(state["labels"]), int(state["seen"]))

    @classmethod
    def model_from_state(cls, model_state: dict[str, Any]) -> ModelBank:
        """The bank of a state."""
        entry = cls.learner_class.entry
        known = LEARNERS if entry.name in LEARNERS else LEARNERS.with_entry(entry)
        return ModelBank.from_state(model_state, known)

    @staticmethod
    def params_of(model: Any) -> dict[str, Any]:
        """The parameters of the bank's learners."""
        return without_bank_params(model.get_params())

    def model_plain_params(self) -> dict[str, Any]:
        """The bank's learners' plain parameters."""
        return plain_params(self._bank.base.get_params())


class OneVsRestClassifierBase(BankClassifierBase, base.Classifier):
    """A river multi-class classifier over a one-vs-rest model bank (see the module doc)."""

    _multiclass: ClassVar[bool] = True

    def learn_one(self, x: dict[Hashable, Any], y: Any, **kwargs: Any) -> None:
        """Learn one example of class ``y``: positive for y's learner, negative for the
        others (a new class starts its learner first)."""
        encoded = self._encode(x, learning=True)  # a refused example makes no label
        self._learn(encoded, [self._label_id(y)])

    def predict_one(self, x: dict[Hashable, Any], **kwargs: Any) -> Any:
        """The label of the largest decision value (None before any label)."""
        if not self._labels:
            return None
        f, _ = self._decisions(x)
        return self._labels[int(np.argmax(f))]

    def predict_proba_one(self, x: dict[Hashable, Any], **kwargs: Any) -> dict[Any, float]:
        """The bank's class probabilities over every label seen (module doc): 0 for a
        label with no learner yet, uniform before any."""
        if not self._labels:
            return {}
        bank = self._bank
        p = np.zeros(len(self._labels))
        if not bank.n_labels:
            return dict.fromkeys(self._labels, 1.0 / len(self._labels))
        if self._columns.shape[0] != bank.n_labels:
            self._columns = bank.labels_.astype(np.intp)
        indices, values, _ = self._encode(x, learning=False, decide=False)
        row = (np.array([0, indices.shape[0]]), indices, values)
        p[self._columns] = bank.class_probabilities(row)[0]
        return dict(zip(self._labels, p.tolist(), strict=True))


class MultiLabelClassifierBase(BankClassifierBase, base.MultiLabelClassifier):
    """A river multi-label classifier over a one-vs-rest model bank (see the module doc)."""

    def learn_one(self, x: dict[Hashable, Any], y: dict[Hashable, bool], **kwargs: Any) -> None:
        """Learn one example: every True label of ``y`` positive, every other negative
        (labels new to the model start their learners first)."""
        if not isinstance(y, Mapping):
            raise InvalidInputError(f"y must be a dict of label: bool, got {y!r}")
        for label, value in y.items():
            if not _is_truth(value):
                raise InvalidInputError(
                    f"label {label!r} has the value {value!r}: a multi-label target says "
                    "True or False (or 1 or 0) for each label"
                )
        encoded = self._encode(x, learning=True)  # a refused example makes no label
        positives = []
        declared = []
        for label, value in y.items():
            known = len(self._labels)
            label_id = self._label_id(label)
            if value:
                positives.append(label_id)
            elif label_id == known:
                declared.append(float(label_id))
        if declared:
            self._bank.declare_labels(declared)
        self._learn(encoded, positives)

    def predict_one(self, x: dict[Hashable, Any], **kwargs: Any) -> dict[Hashable, bool]:
        """``{label: decision value > 0}`` for every label seen."""
        f, _ = self._decisions(x)
        return {label: bool(v > 0.0) for label, v in zip(self._labels, f.tolist(), strict=True)}

    def predict_proba_one(
        self, x: dict[Hashable, Any], **kwargs: Any
    ) -> dict[Hashable, dict[bool, float]]:
        """Per label ``{False: 1 - p, True: p}`` with p the label's calibrated
        probability (module doc)."""
        p = self._probabilities(x)
        return {
            label: {False: 1.0 - q, True: q}
            for label, q in zip(self._labels, p.tolist(), strict=True)
        }


def _is_truth(value: Any) -> bool:
    """A label's value in a multi-label target: a bool (Python's or numpy's) or the
    integers 0 and 1; not ``"no"`` or NaN, which Python would take as true.

    >>> [_is_truth(v) for v in (True, np.False_, 1, 0, 2, "no", float("nan"), 1.0)]
    [True, True, True, True, False, False, False, False]
    """
    if isinstance(value, bool | np.bool_):
        return True
    return isinstance(value, int | np.integer) and value in (0, 1)


def _takes_kappa(entry: LearnerEntry) -> bool:
    """Whether a bank of these learners takes ``tau_pos_kappa`` (a margin of positives)."""
    return any(param.name == "tau_pos" for param in entry.params)


def _bank_classifier(
    entry: LearnerEntry,
    base_class: type[BankClassifierBase],
    suffix: str,
    module: str,
    name: str | None,
) -> type[BankClassifierBase]:
    name = name or f"{entry.class_name}{suffix}"
    engine = engine_parameters(entry)
    options = [*COMMON_OPTIONS, *([TAU_POS_KAPPA] if _takes_kappa(entry) else [])]
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def init(self: BankClassifierBase, *args: Any, **kwargs: Any) -> None:
        BankClassifierBase.__init__(self, *args, **kwargs)

    init.__name__ = "__init__"
    init.__qualname__ = f"{name}.__init__"
    init.__signature__ = inspect.Signature([self_param, *engine, *options])  # type: ignore[attr-defined]
    kind = "multi-class" if base_class is OneVsRestClassifierBase else "multi-label"
    doc = (
        f"river {kind} classifier: a one-vs-rest bank of "
        f":class:`streamlearn.{entry.class_name}` learners: {entry.summary}\n\n"
        "    Options (see :mod:`streamlearn.river.bank`): ``n_features``, ``replay_every``,\n"
        "    ``replay_passes``" + (", ``tau_pos_kappa``.\n" if _takes_kappa(entry) else ".\n")
    )
    namespace = {
        "__init__": init,
        "__doc__": doc,
        "__module__": module,
        "__qualname__": name,
        "learner_class": entry.learner_class,
    }
    return type(name, (base_class,), namespace)


def one_vs_rest_classifier(
    entry: LearnerEntry, module: str = "streamlearn.river", name: str | None = None
) -> type[OneVsRestClassifierBase]:
    """The river multi-class classifier of a learner (``PDMOneVsRestClassifier``);
    ``module`` and ``name`` are where the class is reachable (pickle finds it there)."""
    made = _bank_classifier(entry, OneVsRestClassifierBase, "OneVsRestClassifier", module, name)
    assert issubclass(made, OneVsRestClassifierBase)
    return made


def multilabel_classifier(
    entry: LearnerEntry, module: str = "streamlearn.river", name: str | None = None
) -> type[MultiLabelClassifierBase]:
    """The river multi-label classifier of a learner (``PDMMultiLabelClassifier``);
    ``module`` and ``name`` are where the class is reachable (pickle finds it there)."""
    made = _bank_classifier(entry, MultiLabelClassifierBase, "MultiLabelClassifier", module, name)
    assert issubclass(made, MultiLabelClassifierBase)
    return made


#: the multi-class adapter of every learner, by the engine's ``algorithm`` name
ONE_VS_REST_ADAPTERS: dict[str, type[OneVsRestClassifierBase]] = {
    entry.name: one_vs_rest_classifier(entry) for entry in LEARNERS.entries()
}
#: the multi-label adapter of every learner, by the engine's ``algorithm`` name
MULTILABEL_ADAPTERS: dict[str, type[MultiLabelClassifierBase]] = {
    entry.name: multilabel_classifier(entry) for entry in LEARNERS.entries()
}

PerceptronOneVsRestClassifier = ONE_VS_REST_ADAPTERS["perceptron"]
PAMOneVsRestClassifier = ONE_VS_REST_ADAPTERS["pam"]
PAUMOneVsRestClassifier = ONE_VS_REST_ADAPTERS["paum"]
PFMOneVsRestClassifier = ONE_VS_REST_ADAPTERS["pfm"]
PDMOneVsRestClassifier = ONE_VS_REST_ADAPTERS["pdm"]
PDMSuccOneVsRestClassifier = ONE_VS_REST_ADAPTERS["pdm-succ"]
TMargitronOneVsRestClassifier = ONE_VS_REST_ADAPTERS["t-margitron"]
AMargitronOneVsRestClassifier = ONE_VS_REST_ADAPTERS["a-margitron"]
KozinecOneVsRestClassifier = ONE_VS_REST_ADAPTERS["kozinec"]
PerceptronMultiLabelClassifier = MULTILABEL_ADAPTERS["perceptron"]
PAMMultiLabelClassifier = MULTILABEL_ADAPTERS["pam"]
PAUMMultiLabelClassifier = MULTILABEL_ADAPTERS["paum"]
PFMMultiLabelClassifier = MULTILABEL_ADAPTERS["pfm"]
PDMMultiLabelClassifier = MULTILABEL_ADAPTERS["pdm"]
PDMSuccMultiLabelClassifier = MULTILABEL_ADAPTERS["pdm-succ"]
TMargitronMultiLabelClassifier = MULTILABEL_ADAPTERS["t-margitron"]
AMargitronMultiLabelClassifier = MULTILABEL_ADAPTERS["a-margitron"]
KozinecMultiLabelClassifier = MULTILABEL_ADAPTERS["kozinec"]

__all__ = [
    "MULTILABEL_ADAPTERS",
    "ONE_VS_REST_ADAPTERS",
    "AMargitronMultiLabelClassifier",
    "AMargitronOneVsRestClassifier",
    "BankClassifierBase",
    "KozinecMultiLabelClassifier",
    "KozinecOneVsRestClassifier",
    "MultiLabelClassifierBase",
    "OneVsRestClassifierBase",
    "PAMMultiLabelClassifier",
    "PAMOneVsRestClassifier",
    "PAUMMultiLabelClassifier",
    "PAUMOneVsRestClassifier",
    "PDMMultiLabelClassifier",
    "PDMOneVsRestClassifier",
    "PDMSuccMultiLabelClassifier",
    "PDMSuccOneVsRestClassifier",
    "PFMMultiLabelClassifier",
    "PFMOneVsRestClassifier",
    "PerceptronMultiLabelClassifier",
    "PerceptronOneVsRestClassifier",
    "TMargitronMultiLabelClassifier",
    "TMargitronOneVsRestClassifier",
    "multilabel_classifier",
    "one_vs_rest_classifier",
]
