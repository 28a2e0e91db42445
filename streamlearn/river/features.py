"""Feature names and values as the river adapters read them.

Names become indices through a map kept in the model or, with ``n_features``, by
hashing (:func:`~streamlearn.parse.features.stable_hash`); values must be real numbers
(:func:`check_value`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Hashable
from typing import Any

from streamlearn.errors import InvalidInputError
from streamlearn.parse.features import stable_hash as stable_hash

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
