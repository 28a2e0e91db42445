"""Feature names to indices by hashing, the same in every process and every interface
(the river adapters with ``n_features``, and JSON examples given by name)."""

from __future__ import annotations

import zlib
from collections.abc import Hashable


def stable_hash(name: Hashable) -> int:
    """zlib.crc32 of the UTF-8 bytes of ``name`` (of ``repr(name)`` when not a str).

    >>> stable_hash("age"), stable_hash(3) == stable_hash("3")
    (2704281778, True)
    """
    text = name if isinstance(name, str) else repr(name)
    return zlib.crc32(text.encode("utf-8"))
