"""Feature names to indices by hashing, the same in every process and every interface
(the river adapters with ``n_features``, and JSON examples given by name)."""

from __future__ import annotations

import zlib
from collections.abc import Hashable


def stable_hash(name: Hashable) -> int:
    r"""zlib.crc32 of the UTF-8 bytes of ``name`` (of ``repr(name)`` when not a str).

    A lone surrogate (JSON's ``"\ud800"`` reads as one) is encoded as UTF-8 would encode
    it were it allowed, so every str has a hash.

    >>> stable_hash("age"), stable_hash(3) == stable_hash("3")
    (2704281778, True)
    >>> stable_hash("\ud800") == zlib.crc32(b"\xed\xa0\x80")
    True
    """
    text = name if isinstance(name, str) else repr(name)
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))
