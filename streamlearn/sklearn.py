"""scikit-learn estimators for every learner: fit, partial_fit, predict, decision_function.

Each estimator wraps one engine learner (:mod:`streamlearn.learn`) with the same
parameters under the same names and defaults. ``fit`` learns the examples once and
replays the buffer to convergence, exactly as the learner's ``fit``; ``partial_fit``
learns the examples once, in order (the learner's ``learn``), keeping them in the replay
buffer, then replays the buffer with work in proportion: ``partial_fit_replay`` (the one
parameter that is the estimator's, default 10) examples revisited per example learned, in
whole passes, what is left carried to the next call; 0 learns each example once and no
more. The learner is ``learner_`` after fitting: its ``summary()`` gives the margin
certificate and ``learner_.replay()`` continues towards convergence after ``partial_fit``
(``coef_`` and ``intercept_`` always show the learner's current weights).

Labels are any values; ``classes_`` is sorted. With two classes the estimator is one
binary learner: ``classes_[1]`` is the positive class (a positive decision value),
``decision_function`` has shape (n,), ``coef_`` (1, n_features) and ``intercept_`` (1,).
With more, ``learner_`` is a one-vs-rest :class:`~streamlearn.learn.bank.ModelBank`:
one learner per class (label value i for ``classes_[i]``, every class declared before
the first example, so that each learner is the binary learner of "class i against the
rest" on the same examples); ``decision_function`` has shape (n, n_classes), ``predict``
is its argmax (ties: the first class), ``coef_`` (n_classes, n_features) and
``intercept_`` (n_classes,). Multi-label targets, as scikit-learn writes them (an
indicator matrix: one column per label, 1 where a row has it; dense, sparse, or a list
of lists), make the estimator a bank too, with one learner per column whether or not a
row holds it: ``multilabel_`` is True, ``classes_`` is ``arange(n_labels)``,
``decision_function`` has shape (n, n_labels) and ``predict`` returns the indicator
matrix of the positive decision values, in the targets' dtype. Input is a dense array or
any scipy sparse matrix; the number of features is fixed by the first fit.

This module needs scikit-learn; ``import streamlearn`` does not.

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0]])
>>> clf = PDMClassifier(eps=0.1, delta=0.0).fit(X, ["spam", "ham", "spam", "ham"])
>>> clf.predict(X).tolist(), clf.classes_.tolist()
(['spam', 'ham', 'spam', 'ham'], ['ham', 'spam'])
>>> clf.coef_.shape, clf.intercept_.shape
((1, 2), (1,))
>>> three = PDMClassifier(eps=0.1, delta=0.0).fit(X, ["a", "b", "c", "b"])
>>> three.predict(X).tolist(), three.decision_function(X).shape, three.coef_.shape
(['a', 'b', 'c', 'b'], (4, 3), (3, 2))
>>> tags = PDMClassifier(eps=0.1, delta=0.0).fit(X, [[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 1, 0]])
>>> tags.multilabel_, tags.predict(X).tolist()
(True, [[1, 0, 0], [0, 1, 0], [1, 0, 1], [0, 1, 0]])
"""

from __future__ import annotations

import inspect
import math
import warnings
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from streamlearn.errors import missing_extra

try:
    import sklearn  # noqa: F401  (only to say which install is missing)
except ModuleNotFoundError as error:
    missing_extra(
        error, needed_by="streamlearn.sklearn", module="sklearn", package="scikit-learn",
        extra="sklearn",
    )  # fmt: skip
    raise

from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from streamlearn.errors import InvalidParameterError, StateError, check_state_header
from streamlearn.learn import (
    LEARNERS,
    LearnerEntry,
    LinearLearner,
    Model,
    ModelBank,
    model_from_state,
)
from streamlearn.learn.params import STATE_BUILT_WITH, init_function, without_bank_params

STATE_FORMAT = "streamlearn.sklearn"
STATE_VERSION = 1

#: the estimator's parameter beyond the learner's: ``partial_fit``'s replay work, in
#: examples revisited per example learned
PARTIAL_FIT_REPLAY = "partial_fit_replay"
DEFAULT_PARTIAL_FIT_REPLAY = 10.0


class LinearClassifier(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """What every estimator shares; each estimator class (:func:`estimator_class`) sets
    ``learner_class`` and an ``__init__`` of the learner's parameters."""

    #: the engine class the estimator runs
    learner_class: ClassVar[type[LinearLearner]]

    # fitted attributes, set by fit, partial_fit and from_state
    learner_: Model
    classes_: npt.NDArray[Any]
    n_features_in_: int
    multilabel_: bool
    #: multi-label: the dtype of the targets, which ``predict`` returns
    _target_dtype: np.dtype[Any]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        tags.classifier_tags.multi_label = True
        return tags

    # -- learning ------------------------------------------------------------------------

    def fit(self, X: Any, y: Any) -> Self:
        """Learn every example once, then replay the buffer until a full pass makes no
        update (at most ``max_passes`` passes; a ``ConvergenceWarning`` says when the
        bound stopped it). Starts from scratch on every call."""
        multilabel = _is_multilabel(y)
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, multi_output=multilabel
        )
        if multilabel:
            _check_indicator(y)
            classes = np.arange(y.shape[1])
        else:
            classes = _classes(y, type(self).__name__)
        learner = self._new_learner(classes, multilabel, X)
        learner.learn(X, y if multilabel else _targets(y, classes)).flush().replay()
        self.replay_credit_ = 0.0
        if not learner.converged:
            warnings.warn(
                f"{type(self).__name__} stopped after max_passes={self.max_passes} "
                "replay passes without converging; raise max_passes or loosen the "
                "parameters",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.learner_ = learner
        self._set_classes(classes, multilabel, y)
        return self

    def _set_classes(self, classes: npt.NDArray[Any], multilabel: bool, y: Any) -> None:
        self.classes_ = classes
        self.multilabel_ = multilabel
        self._target_dtype = y.dtype

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> Self:
        """Learn the examples once, in order, keeping them in the replay buffer, then
        replay the buffer: ``partial_fit_replay`` examples revisited per example learned
        (whole passes; the rest of the budget carried to the next call, none once a
        replay converges). On 100 rows that is what ``fit`` does.

        ``classes`` (every label, two or more) is required on the first call, as
        scikit-learn's ``partial_fit`` convention wants. With ``partial_fit_replay=0``,
        calls in chunks equal one call on the whole: learner ``learn(A)`` then
        ``learn(B)`` is ``learn(A + B)``. With more than two classes, ``classes`` fixes
        the bank's learners.
        """
        first_call = not hasattr(self, "classes_")
        multilabel = _is_multilabel(y)
        if not first_call and multilabel != self.multilabel_:
            kind = "multi-label" if self.multilabel_ else "binary or multi-class"
            raise ValueError(f"earlier calls to partial_fit learned {kind} targets")
        known = self._known_classes(first_call, classes, np.shape(y) if multilabel else None)
        X, y = validate_data(
            self, X, y, accept_sparse="csr", dtype=np.float64, reset=first_call,
            multi_output=multilabel,
        )  # fmt: skip
        if multilabel:
            _check_indicator(y)
        else:
            check_classification_targets(y)
            unknown = np.setdiff1d(y, known)
            if unknown.size:
                raise ValueError(
                    f"y holds labels {unknown.tolist()[:5]} that are not in classes "
                    f"{known.tolist()}"
                )
        targets = y if multilabel else _targets(y, known)
        if first_call:  # fitted only once the first examples are learned
            learner = self._new_learner(known, multilabel)
            learner.learn(X, targets)
            self.learner_ = learner
            self.replay_credit_ = 0.0
            self._set_classes(known, multilabel, y)
        else:
            self._follow_params()
            self.learner_.learn(X, targets)
        self._replay_in_proportion(X.shape[0])
        return self

    def _known_classes(
        self, first_call: bool, classes: Any, indicator_shape: tuple[int, ...] | None
    ) -> npt.NDArray[Any]:
        """The classes ``partial_fit`` learns: ``classes`` on the first call (for
        multi-label targets, the columns ``arange(n_labels)``, which ``classes`` may
        repeat), ``classes_`` later, which ``classes`` must then equal."""
        if first_call and indicator_shape is not None:
            known = np.arange(indicator_shape[1])
            if classes is not None and not np.array_equal(np.unique(classes), known):
                raise ValueError(
                    f"classes {np.unique(classes).tolist()} are not the label columns "
                    f"{known.tolist()} of the multi-label targets (or leave classes out)"
                )
        elif first_call:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            return _classes(np.asarray(classes), type(self).__name__)
        else:
            known = self.classes_
        if indicator_shape is not None and indicator_shape[1] != known.shape[0]:
            raise ValueError(
                f"y has {indicator_shape[1]} label columns, but the earlier calls to "
                f"partial_fit learned {known.shape[0]}"
            )
        if classes is not None and not np.array_equal(np.unique(classes), known):
            raise ValueError(
                f"classes {np.unique(classes).tolist()} differ from classes_ "
                f"{known.tolist()} of the earlier calls to partial_fit"
            )
        return known

    def _learner_params(self) -> dict[str, Any]:
        """The parameters that are the learner's (all but ``partial_fit_replay``)."""
        params: dict[str, Any] = dict(self.get_params(deep=False))
        params.pop(PARTIAL_FIT_REPLAY, None)
        return params

    def _replay_in_proportion(self, learned: int) -> None:
        """After ``partial_fit`` learned ``learned`` examples: replay the buffer in whole
        passes, ``partial_fit_replay`` examples revisited per example learned, the rest
        of the budget carried to the next call (none once a replay converges)."""
        ratio = float(getattr(self, PARTIAL_FIT_REPLAY))
        if not (math.isfinite(ratio) and ratio >= 0.0):
            raise InvalidParameterError(f"partial_fit_replay must be >= 0, got {ratio}")
        credit = getattr(self, "replay_credit_", 0.0) + ratio * learned
        buffered = int(self.learner_.summary()["buffer_examples"])
        passes = int(credit // buffered) if buffered else 0
        if passes:
            self.learner_.replay(max_passes=passes)
            credit = 0.0 if self.learner_.converged else credit - passes * buffered
        self.replay_credit_ = credit

    def _follow_params(self) -> None:
        """Carry ``set_params`` since the last call into the learner, which keeps what it
        learned (as ``SGDClassifier`` follows new parameters between ``partial_fit``
        calls); a parameter the learned state was built with cannot change."""
        learner = self.learner_
        params = self._learner_params()
        held = learner.get_params()
        changed = sorted(name for name, value in params.items() if held.get(name) != value)
        if not changed:
            return
        fixed = [name for name in changed if name in STATE_BUILT_WITH]
        if fixed:
            raise InvalidParameterError(
                f"partial_fit cannot follow set_params of {', '.join(fixed)}: the learned "
                "state was built with the earlier value (fit starts afresh)"
            )
        self.learner_ = learner.with_params(params)

    def _new_learner(self, classes: npt.NDArray[Any], multilabel: bool, X: Any = None) -> Model:
        """The binary learner for two classes, else (or for multi-label targets) a bank
        with every class declared; for ``fit``'s ``X``, with a buffer that keeps all of
        it (see ``LinearLearner.size_buffer_for``)."""
        learner = self.learner_class(**self._learner_params())
        sized = (X.shape[0], _arena_cells(X)) if X is not None else None
        if classes.shape[0] == 2 and not multilabel:
            if sized is not None:
                learner.size_buffer_for(*sized)
            return learner
        bank = ModelBank(learner)
        if sized is not None:
            bank.size_buffer_for(*sized)
        return bank.declare_labels(np.arange(classes.shape[0]))

    def _learners(self) -> list[LinearLearner]:
        """The binary learner, or the bank's learners in the order of ``classes_`` (the
        bank's label values, declared in that order)."""
        return self.learner_.learners()

    @property
    def coef_(self) -> npt.NDArray[np.float64]:
        """The learner's weights as a (1, n_features_in_) array, or with more than two
        classes each class's learner's as a row of (n_classes, n_features_in_) (zeros
        for features a learner never saw nonzero)."""
        learners = self._learners()
        coef = np.zeros((len(learners), self.n_features_in_), dtype=np.float64)
        for row, learner in enumerate(learners):
            weights = learner.coef_
            coef[row, : weights.shape[0]] = weights[: self.n_features_in_]
        return coef

    @property
    def intercept_(self) -> npt.NDArray[np.float64]:
        """The learner's bias as a (1,) array (per class, (n_classes,))."""
        return np.array([learner.intercept_ for learner in self._learners()])

    @property
    def n_iter_(self) -> int:
        """The replay passes the learner has made: those of ``fit`` or ``partial_fit``,
        plus any of ``learner_.replay()``."""
        return int(self.learner_.summary()["passes"])

    # -- prediction ----------------------------------------------------------------------

    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:
        """w . x + b for every row of X; positive means ``classes_[1]``. With more than
        two classes, one column per class (of ``classes_``)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return self.learner_.decision_function(X)

    def predict_proba(self, X: Any) -> npt.NDArray[np.float64]:
        """Calibrated probabilities, one column per class of ``classes_``: each learner's
        decision value in margin units through a Platt sigmoid fitted on its window
        (``LinearLearner.predict_proba``). Two classes: those of ``classes_[0]`` and
        ``classes_[1]``. More: the softmax of the decision values with a temperature
        fitted on the window (``ModelBank.class_probabilities``), whose argmax is
        ``predict``'s. Multi-label targets: each label's own probability (the columns do
        not add up to 1)."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        if self.multilabel_:
            return self.learner_.predict_proba(X)
        return self.learner_.class_probabilities(X)

    def predict(self, X: Any) -> npt.NDArray[Any]:
        """``classes_[1]`` where the decision value is positive, ``classes_[0]`` elsewhere;
        with more than two classes, the class of the largest decision value; for
        multi-label targets, the indicator matrix of the positive decision values."""
        decision = self.decision_function(X)
        if self.multilabel_:
            indicator: npt.NDArray[Any] = (decision > 0.0).astype(self._target_dtype)
            return indicator
        if decision.ndim == 2:
            best: npt.NDArray[Any] = self.classes_[np.argmax(decision, axis=1)]
            return best
        result: npt.NDArray[Any] = self.classes_[(decision > 0.0).astype(np.intp)]
        return result

    # -- state ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The fitted estimator as plain values and numpy arrays, for
        :func:`streamlearn.checkpoint.encode` (labels must be numbers, str or bool)."""
        check_is_fitted(self)
        names = getattr(self, "feature_names_in_", None)
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "estimator": type(self).__name__,
            "classes": self.classes_.tolist(),
            "classes_dtype": self.classes_.dtype.str,
            "multilabel": self.multilabel_,
            "target_dtype": self._target_dtype.str,
            "n_features_in": self.n_features_in_,
            "feature_names_in": None if names is None else [str(name) for name in names],
            "learner": self.learner_.state_dict(),
            PARTIAL_FIT_REPLAY: float(getattr(self, PARTIAL_FIT_REPLAY)),
            "replay_credit": float(getattr(self, "replay_credit_", 0.0)),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """The estimator that made ``state`` (see :meth:`state_dict`), ready to predict
        and to continue with ``partial_fit``."""
        check_state_header(state, STATE_FORMAT, STATE_VERSION, "scikit-learn")
        if state.get("estimator") != cls.__name__:
            raise StateError(f"state is for {state.get('estimator')!r}, not {cls.__name__}")
        entry = cls.learner_class.entry
        known = LEARNERS if entry.name in LEARNERS else LEARNERS.with_entry(entry)
        try:
            learner = model_from_state(state["learner"], known)
            if learner.algorithm != entry.name:
                raise StateError(
                    f"state is for algorithm {learner.algorithm!r}, not {entry.name!r}"
                )
            replay = state.get(PARTIAL_FIT_REPLAY, DEFAULT_PARTIAL_FIT_REPLAY)
            estimator = cls(**without_bank_params(learner.get_params()), partial_fit_replay=replay)
            estimator.replay_credit_ = float(state.get("replay_credit", 0.0))
            estimator.learner_ = learner
            estimator.classes_ = np.asarray(
                state["classes"], dtype=np.dtype(state["classes_dtype"])
            )
            estimator.multilabel_ = bool(state.get("multilabel", False))
            estimator._target_dtype = np.dtype(state.get("target_dtype", state["classes_dtype"]))
            estimator.n_features_in_ = int(state["n_features_in"])
            if state["feature_names_in"] is not None:
                estimator.feature_names_in_ = np.asarray(state["feature_names_in"], dtype=object)
        except (KeyError, TypeError) as exc:
            raise StateError(f"incomplete scikit-learn state: {exc}") from exc
        return estimator


def _arena_cells(X: Any) -> int:
    """The replay buffer's arena cells the rows of X take: max(nonzeros, 1) each."""
    counts = np.diff(X.indptr) if hasattr(X, "indptr") else np.count_nonzero(X, axis=1)
    return int(np.maximum(counts, 1).sum())


def _is_multilabel(y: Any) -> bool:
    """Whether y holds multi-label targets: an indicator matrix (scikit-learn's
    ``multilabel-indicator``); targets it cannot read are left to the usual checks."""
    try:
        if not hasattr(y, "tocsr") and np.ndim(y) != 2:  # 1-D: classes, never labels
            return False
        with np.errstate(invalid="ignore"):  # NaN or inf in y: validate_data says so
            return bool(type_of_target(y, input_name="y") == "multilabel-indicator")
    except (ValueError, TypeError):
        return False


def _check_indicator(y: Any) -> None:
    """Refuse multi-label targets other than 0 and 1 (an indicator matrix)."""
    values = y.data if hasattr(y, "tocsr") else y
    if not np.all((values == 0) | (values == 1)):
        found = np.unique(values).tolist()[:5]
        raise ValueError(
            f"multi-label targets must be an indicator matrix of 0 and 1, one column per "
            f"label; y holds {found}"
        )


def _classes(y: npt.NDArray[Any], name: str) -> npt.NDArray[Any]:
    """The sorted labels of y, two or more; clear errors for one class or for targets
    that are not binary or multi-class."""
    check_classification_targets(y)
    kind = type_of_target(y, input_name="y", raise_unknown=True)
    if kind not in ("binary", "multiclass"):
        raise ValueError(
            f"Only binary and multi-class classification are supported. The type of the "
            f"target is {kind}."
        )
    classes = np.unique(y)
    if classes.shape[0] < 2:
        raise ValueError(
            f"{name} needs examples of two classes, but y holds only one class: {classes.tolist()}"
        )
    return classes


def _targets(y: npt.NDArray[Any], classes: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Two classes: +1 for ``classes[1]``, -1 for ``classes[0]``. More: the position of
    each label in ``classes`` (the bank's label values)."""
    if classes.shape[0] == 2:
        return np.where(y == classes[1], 1, -1).astype(np.int8)
    return np.searchsorted(classes, y).astype(np.float64)


def estimator_class(
    entry: LearnerEntry, module: str = "streamlearn.sklearn", name: str | None = None
) -> type[LinearClassifier]:
    """The scikit-learn estimator of a learner (``PDMClassifier`` for PDM): its
    ``__init__`` takes the learner's parameters, under the same names and defaults, and
    stores them as given (scikit-learn's convention; the learner checks them at ``fit``).
    ``module`` and ``name`` (default: the learner's class name and ``Classifier``) are
    where the class is reachable (pickle finds it there)."""
    name = name or f"{entry.class_name}Classifier"

    def store(self: LinearClassifier, **values: Any) -> None:
        for param, value in values.items():
            setattr(self, param, value)

    replay = inspect.Parameter(
        PARTIAL_FIT_REPLAY, inspect.Parameter.KEYWORD_ONLY, default=DEFAULT_PARTIAL_FIT_REPLAY
    )
    signature = entry.signature.replace(parameters=[*entry.signature.parameters.values(), replay])
    init = init_function(f"{name}.__init__", signature, store)
    doc = f"{entry.summary} (:class:`streamlearn.{entry.class_name}`)."
    namespace = {
        "__init__": init,
        "__doc__": doc,
        "__module__": module,
        "__qualname__": name,
        "learner_class": entry.learner_class,
    }
    return type(name, (LinearClassifier,), namespace)


#: the estimator of every learner, by the learner's ``algorithm`` name
ESTIMATORS: dict[str, type[LinearClassifier]] = {
    entry.name: estimator_class(entry) for entry in LEARNERS.entries()
}
PerceptronClassifier = ESTIMATORS["perceptron"]
PAMClassifier = ESTIMATORS["pam"]
PAUMClassifier = ESTIMATORS["paum"]
PFMClassifier = ESTIMATORS["pfm"]
PDMClassifier = ESTIMATORS["pdm"]
PDMSuccClassifier = ESTIMATORS["pdm-succ"]
TMargitronClassifier = ESTIMATORS["t-margitron"]
AMargitronClassifier = ESTIMATORS["a-margitron"]
KozinecClassifier = ESTIMATORS["kozinec"]

__all__ = [
    "ESTIMATORS",
    "AMargitronClassifier",
    "KozinecClassifier",
    "LinearClassifier",
    "PAMClassifier",
    "PAUMClassifier",
    "PDMClassifier",
    "PDMSuccClassifier",
    "PFMClassifier",
    "PerceptronClassifier",
    "TMargitronClassifier",
    "estimator_class",
]
