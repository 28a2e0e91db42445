"""Feature names and values as the river adapters read them.

Names become indices through a map kept in the model or, with ``n_features``, by
hashing (:func:`~streamlearn.parse.features.stable_hash`); values must be real numbers
(:func:`check_value`).
"""

from __future__ import annotations

import math
import reprlib
import struct
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from streamlearn._kernels.rows import MAX_ROW_SQNORM
from streamlearn.errors import InvalidInputError
from streamlearn.parse.features import stable_hash as stable_hash
from streamlearn.types import RowStatus

#: names cached with their hashed index before the cache starts over
HASH_CACHE_SIZE = 1 << 20
_DOUBLE = struct.Struct("@d")


def check_value(key: Hashable, value: Any) -> None:
    """Refuse a feature value that is not a finite real number, naming the feature (the
    adapters' fast paths refuse the same values: they pack them as doubles).

    >>> check_value("age", "old")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidInputError: feature 'age' has the value 'old': values must be ...
    """
    try:
        (number,) = _DOUBLE.unpack(_DOUBLE.pack(value))
    except (struct.error, TypeError, ValueError, OverflowError):
        raise InvalidInputError(
            f"feature {key!r} has the value {value!r}: values must be real numbers"
        ) from None
    if not math.isfinite(number):
        raise InvalidInputError(f"feature {key!r} has the value {value!r}: not finite")


def all_finite(values: list[Any]) -> bool:
    """Whether :func:`check_value` accepts every one of ``values``, in one pass (False
    sends the caller to :func:`check_value` for each, which names the first bad one).

    >>> all_finite([1, 2.5, True]), all_finite([1.0, float("inf")]), all_finite([1.0, "a"])
    (True, False, False)
    """
    layout = f"@{len(values)}d"
    try:
        numbers = struct.unpack(layout, struct.pack(layout, *values))
    except (struct.error, TypeError, ValueError, OverflowError):
        return False
    return all(map(math.isfinite, numbers))


def refuse_example(x: Mapping[Hashable, Any], status: int) -> None:
    """Raise :class:`InvalidInputError` for an example a kernel refused with ``status``
    (a :class:`~streamlearn.types.RowStatus`), naming the bad value or what is wrong.

    >>> refuse_example({"a": 1e200}, RowStatus.TOO_LARGE)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidInputError: the values of {'a': 1e+200} are too large: ...
    """
    for key, value in x.items():
        check_value(key, value)
    if status == RowStatus.BAD_INDEX:
        raise InvalidInputError("a feature index is out of range")  # not reachable from dicts
    if status == RowStatus.TOO_LARGE:
        raise InvalidInputError(
            f"the values of {reprlib.repr(dict(x))} are too large: the sum of their squares "
            f"is above {MAX_ROW_SQNORM:g}"
        )
    raise InvalidInputError(f"cannot use example {dict(x)!r} (status {status})")


class FeatureNames:
    """The indices of feature names: a map that gives each new name the next index, or
    with ``n_features`` their hashes (cached, the cache starting over past
    :data:`HASH_CACHE_SIZE` names); ``names`` are those of indices 0, 1, ... of a map.

    >>> names = FeatureNames(None, ["age"])
    >>> names.index_of("height", learning=True, grow=lambda n: None), names.names()
    (1.0, ['age', 'height'])
    """

    def __init__(self, n_features: int | None, names: list[Hashable] | None = None) -> None:
        self.n_features = n_features
        #: index by name (the map, or the cache of hashed names)
        self.index: dict[Hashable, float] = {name: float(i) for i, name in enumerate(names or [])}

    @property
    def hashing(self) -> bool:
        """Whether names are hashed (``n_features`` given)."""
        return self.n_features is not None

    def index_of(self, key: Hashable, learning: bool, grow: Callable[[int], None]) -> float | None:
        """The index of name ``key``: a new name of a map gets the next one when
        ``learning`` (``grow`` is first told how many weights the names now need), and
        None otherwise."""
        index = self.index
        try:
            i = index.get(key)
        except TypeError as exc:
            raise InvalidInputError(f"feature names must be hashable, got {key!r}") from exc
        if i is not None:
            return i
        if self.n_features is not None:
            if len(index) >= HASH_CACHE_SIZE:
                index.clear()
            i = float(stable_hash(key) % int(self.n_features or 1))
        elif learning:
            i = float(len(index))
            grow(len(index) + 1)
        else:
            return None
        index[key] = i
        return i

    def room(self) -> int:
        """Weights the names need before any example has them."""
        return int((self.n_features if self.hashing else len(self.index)) or 0)

    def names(self) -> list[Hashable]:
        """The names of a map in index order (none when hashing)."""
        return [] if self.hashing else list(self.index)
