"""Learner parameters, each described once: its name, default, constraint and docs.

A :class:`Param` is what the learner classes, the command line, the scikit-learn
estimators and the river classifiers all read a parameter from. Its ``check`` turns a
given value into the value stored (or raises :class:`InvalidParameterError`).

>>> eps = Param("eps", 0.01, unit_interval, "Accuracy, in (0, 1].", float, keyword_only=False)
>>> eps.check("eps", 0.5), eps.signature_parameter()
(0.5, <Parameter "eps=0.01">)
>>> eps.check("eps", 2)
Traceback (most recent call last):
...
streamlearn.errors.InvalidParameterError: eps must be in (0, 1], got 2
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from streamlearn.errors import InvalidParameterError
from streamlearn.replay import ActiveSetSchedule

#: the default of a parameter that has none (it must be given)
REQUIRED: Any = inspect.Parameter.empty

Check = Callable[[str, Any], Any]


@dataclass(frozen=True)
class Param:
    """One parameter of a learner.

    ``check(name, value)`` returns the value to store or raises; ``kind`` is the type
    the command line reads (``str`` for ``delta``, which takes ``'auto'`` or a number);
    ``keyword_only`` parameters come after the ``*`` of the signature; ``cli=False``
    keeps a parameter off the command line (the active-set schedule, which has
    ``--shrink`` instead).
    """

    name: str
    default: Any
    check: Check
    doc: str
    kind: type = float
    keyword_only: bool = True
    cli: bool = True

    def signature_parameter(self) -> inspect.Parameter:
        """The parameter as ``inspect`` shows it in a generated ``__init__``."""
        kind = (
            inspect.Parameter.KEYWORD_ONLY
            if self.keyword_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        return inspect.Parameter(self.name, kind, default=self.default)


def init_function(
    qualname: str, signature: inspect.Signature, body: Callable[..., None]
) -> Callable[..., None]:
    """An ``__init__`` whose parameters are exactly ``signature``'s (after ``self``) and
    that calls ``body(self, name=value, ...)`` with every one of them.

    A real function rather than one that binds ``*args, **kwargs`` itself: Python checks
    the arguments, so a wrong call raises the ``TypeError`` a hand-written class would,
    naming the class (``PDM.__init__() got an unexpected keyword argument 'foo'``).

    >>> eps = Param("eps", 0.01, finite, "", keyword_only=False)
    >>> sig = inspect.Signature([eps.signature_parameter()])
    >>> init = init_function("Demo.__init__", sig, lambda self, **values: print(values))
    >>> init(None, 0.5)
    {'eps': 0.5}
    >>> init(None, tau=1.0)
    Traceback (most recent call last):
    ...
    TypeError: Demo.__init__() got an unexpected keyword argument 'tau'
    """
    parameters = list(signature.parameters.values())
    written = []
    for i, param in enumerate(parameters):
        if not param.name.isidentifier() or param.kind not in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            raise InvalidParameterError(f"cannot make an __init__ with parameter {param}")
        if param.kind is inspect.Parameter.KEYWORD_ONLY and (
            i == 0 or parameters[i - 1].kind is not inspect.Parameter.KEYWORD_ONLY
        ):
            written.append("*")
        default = "" if param.default is param.empty else f"=_defaults[{param.name!r}]"
        written.append(f"{param.name}{default}")
    passed = ", ".join(f"{param.name}={param.name}" for param in parameters)
    source = f"def __init__(self, {', '.join(written)}):\n    _body(self, {passed})\n"
    namespace: dict[str, Any] = {
        "_defaults": {param.name: param.default for param in parameters},
        "_body": body,
    }
    exec(source, namespace)  # the only way to a function with these parameters
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = qualname
    return init


def finite(name: str, value: Any) -> float:
    """A real number (not a bool, not NaN or infinite), as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidParameterError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidParameterError(f"{name} must be finite, got {value!r}")
    return number


def positive(name: str, value: Any) -> float:
    """A finite number > 0."""
    number = finite(name, value)
    if number <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {value!r}")
    return number


def non_negative(name: str, value: Any) -> float:
    """A finite number >= 0."""
    number = finite(name, value)
    if number < 0:
        raise InvalidParameterError(f"{name} must be >= 0, got {value!r}")
    return number


def unit_interval(name: str, value: Any) -> float:
    """A number in (0, 1] (PDM's eps)."""
    number = finite(name, value)
    if not 0.0 < number <= 1.0:
        raise InvalidParameterError(f"{name} must be in (0, 1], got {value!r}")
    return number


def above_one(name: str, value: Any) -> float:
    """A finite number > 1."""
    number = positive(name, value)
    if number <= 1.0:
        raise InvalidParameterError(f"{name} must be > 1, got {value!r}")
    return number


def below_two(name: str, value: Any) -> float:
    """A number in (0, 2) (the margitrons' zeta)."""
    number = finite(name, value)
    if not 0.0 < number < 2.0:
        raise InvalidParameterError(f"{name} must be in (0, 2), got {value!r}")
    return number


def count(name: str, value: Any) -> int:
    """An integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def optional_count(name: str, value: Any) -> int | None:
    """None, or an integer >= 1."""
    return None if value is None else count(name, value)


def flag(name: str, value: Any) -> bool:
    """True or False (numpy's too), not any value that has a truth.

    >>> flag("multiple_updates", "no")
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: multiple_updates must be True or False, got 'no'
    """
    if not isinstance(value, bool | np.bool_):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


#: the values of Delta that the first examples choose (see learn/window.py)
AUTO_DELTAS = ("auto", "first")


#: the largest rho and Delta: their squares join an example's squared norm, which
#: ``MAX_ROW_SQNORM`` bounds so that no learner's state can overflow
MAX_AUGMENTATION = 1e25


def delta_value(name: str, value: Any) -> float | str:
    """Delta: ``'auto'``, ``'first'`` or a number in [0, 1e25].

    >>> delta_value("delta", 1e30)
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: delta must be at most 1e+25, got 1e+30
    """
    if isinstance(value, str) and value in AUTO_DELTAS:
        return value
    return at_most_augmentation(name, non_negative(name, value))


def augmentation(name: str, value: Any) -> float:
    """rho: a number in (0, 1e25]."""
    return at_most_augmentation(name, positive(name, value))


def at_most_augmentation(name: str, number: float) -> float:
    """``number``, refused above :data:`MAX_AUGMENTATION`."""
    if number > MAX_AUGMENTATION:
        raise InvalidParameterError(f"{name} must be at most {MAX_AUGMENTATION:g}, got {number!r}")
    return number


def seed_value(name: str, value: Any) -> int:
    """An integer in [0, 2^64): checkpoints hold 64 bits."""
    if not isinstance(value, int | np.integer) or not 0 <= value < 2**64:
        raise InvalidParameterError(
            f"{name} must be an integer in [0, 2^64) (checkpoints hold 64 bits), got {value!r}"
        )
    return int(value)


#: what evicting an example from the replay buffer does to the model (see ``forget``)
FORGET_CHOICES = ("window", "never")


def forget_value(name: str, value: Any) -> str:
    """``'window'`` or ``'never'``."""
    if not isinstance(value, str) or value not in FORGET_CHOICES:
        raise InvalidParameterError(f"{name} must be 'window' or 'never', got {value!r}")
    return value


def schedule_value(name: str, value: Any) -> ActiveSetSchedule | None:
    """An :class:`ActiveSetSchedule`, or None for the default one."""
    if value is not None and not isinstance(value, ActiveSetSchedule):
        raise InvalidParameterError(f"{name} must be an ActiveSetSchedule")
    return value


#: the parameters every learner takes, after its rule's own (keyword-only)
COMMON_PARAMS: tuple[Param, ...] = (
    Param(
        "rho", 1.0, augmentation, "Augmentation: each x becomes [x, rho]; the bias is rho * beta."
    ),
    Param(
        "delta",
        "auto",
        delta_value,
        "2-norm soft margin Delta >= 0, or 'auto': the first min(1000, buffer_size) "
        "examples fix Delta = R/10 (R their largest ||[x, rho]||), and learning starts "
        "once they have arrived; 'first': the first example alone fixes it, and learning "
        "starts with it; 0 is the hard margin.",
        str,
    ),
    Param(
        "buffer_size",
        None,
        optional_count,
        "Replay buffer capacity in examples (None: 100 000 for a stream; fit() takes what "
        "its data needs).",
        int,
    ),
    Param(
        "buffer_nnz",
        None,
        optional_count,
        "Replay buffer capacity in nonzeros, 12 bytes each (None: 10 000 000 for a stream; "
        "fit() takes what its data needs).",
        int,
    ),
    Param("seed", 0, seed_value, "Seed of the replay passes' orders.", int),
    Param(
        "active_sets",
        None,
        schedule_value,
        "The nested active-set schedule of replay passes (None: the PDM paper's).",
        ActiveSetSchedule,
        cli=False,
    ),
    Param("max_passes", 1000, count, "Default bound on full replay passes per replay.", int),
    Param(
        "forget",
        "window",
        forget_value,
        "What evicting an example from the replay buffer does: 'window' takes its "
        "contribution out of the model, which is then a combination of the buffered "
        "examples and certified on them; 'never' leaves it in, so that evicted examples "
        "go on voting.",
        str,
    ),
)

#: parameters a learner's state is built with (Delta, the augmentation rho, the buffer's
#: capacities): a learned state cannot go on under other values of them, where it can
#: under new values of the rule's own (eps, tau, ...)
STATE_BUILT_WITH = ("delta", "rho", "buffer_size", "buffer_nnz", "forget")
#: what a state written before ``forget`` existed was learned with
FORGET_OF_OLD_STATES = "never"
#: the replay buffer's capacities on a stream when the parameters leave them to
#: streamlearn (``buffer_size=None``, ``buffer_nnz=None``)
STREAM_BUFFER_SIZE = 100_000
STREAM_BUFFER_NNZ = 10_000_000
#: what a one-vs-rest bank's parameters add to those of its learners
BANK_PARAMS = ("one_vs_rest", "tau_pos_kappa")


def plain_params(params: dict[str, Any]) -> dict[str, Any]:
    """Parameters as a state or a report writes them: the active-set schedule as a plain
    dict (or None), every other value as it is.

    >>> plain = plain_params({"eps": 0.1, "active_sets": ActiveSetSchedule(shrink=True)})
    >>> plain["eps"], plain["active_sets"]["shrink"]
    (0.1, True)
    """
    plain = dict(params)
    if isinstance(plain.get("active_sets"), ActiveSetSchedule):
        plain["active_sets"] = plain["active_sets"].to_dict()
    return plain


def params_from_plain(plain: dict[str, Any]) -> dict[str, Any]:
    """A learner's parameters from :func:`plain_params`' form (a state's): the active-set
    schedule rebuilt, and ``forget`` of a state written before it existed.

    >>> params_from_plain({"eps": 0.1, "active_sets": None})
    {'eps': 0.1, 'active_sets': None, 'forget': 'never'}
    """
    params = dict(plain)
    if params.get("active_sets") is not None:
        params["active_sets"] = ActiveSetSchedule.from_dict(params["active_sets"])
    params.setdefault("forget", FORGET_OF_OLD_STATES)
    return params


def without_bank_params(params: dict[str, Any]) -> dict[str, Any]:
    """A model's parameters without those a bank adds (:data:`BANK_PARAMS`): what its
    learners' class takes.

    >>> without_bank_params({"eps": 0.1, "one_vs_rest": True, "tau_pos_kappa": -3.0})
    {'eps': 0.1}
    """
    return {name: value for name, value in params.items() if name not in BANK_PARAMS}
