"""Keyed streams for the keyed models' tests: tenants that disagree, and a helper that
says whether two models' states are the same, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np

from streamlearn.checkpoint.codec import encode
from streamlearn.keyed import KeyedBatch
from streamlearn.parse.svmlight import SvmlightParser

FEATURES = 8


def keyed_lines(
    n: int, keys: int, seed: int, *, flip_odd: bool = True
) -> list[tuple[bytes, bytes]]:
    """``n`` (key, svmlight line) pairs over ``keys`` keys: the label is the side of one
    hyperplane for every key, the other side for odd keys (``flip_odd``): one model of
    all keys could not answer both."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=FEATURES)
    out = []
    for _ in range(n):
        key = int(rng.integers(keys))
        x = rng.normal(size=FEATURES)
        sign = 1 if x @ direction > 0 else -1
        if flip_odd and key % 2:
            sign = -sign
        features = " ".join(f"{i + 1}:{v:.5f}" for i, v in enumerate(x))
        out.append((b"key-%d" % key, f"{sign:+d} {features}".encode()))
    return out


def batches(
    pairs: list[tuple[bytes, bytes]], per_batch: int, partition: int = 0, offset: int = 0
) -> list[KeyedBatch]:
    """The pairs as batches of one line per message, at offsets ``offset``,
    ``offset + 1``, ... of ``partition``."""
    out = []
    for first in range(0, len(pairs), per_batch):
        part = pairs[first : first + per_batch]
        rows = SvmlightParser().feed(b"".join(line + b"\n" for _, line in part))
        out.append(KeyedBatch.of([key for key, _ in part], rows, partition, offset + first))
    return out


def same_state(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two ``state_dict()`` are the same, bit for bit (their msgpack bytes are)."""
    return encode(a, created=0.0) == encode(b, created=0.0)
