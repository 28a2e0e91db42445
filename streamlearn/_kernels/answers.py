"""A binary model's answers to many examples as JSON text, written in one call."""

from __future__ import annotations

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.floats import FLOAT_CHARS, write_float

_SCORE = np.frombuffer(b'{"score": ', dtype=np.uint8)
_LABEL_UP = np.frombuffer(b', "label": 1, "probability": ', dtype=np.uint8)
_LABEL_DOWN = np.frombuffer(b', "label": -1, "probability": ', dtype=np.uint8)
_NEXT = np.frombuffer(b"}, ", dtype=np.uint8)
_NULL = np.frombuffer(b"null", dtype=np.uint8)
#: bytes an answer takes at most (the ``, `` after it included)
BINARY_ANSWER_CHARS = _SCORE.shape[0] + _LABEL_DOWN.shape[0] + _NEXT.shape[0] + 2 * FLOAT_CHARS
_NOT_FINITE = np.uint64(0x7FF << 52)


@kernel(inline=True)
def _put(out: np.ndarray, pos: int, text: np.ndarray) -> int:
    for i in range(text.shape[0]):
        out[pos + i] = text[i]
    return pos + text.shape[0]


@kernel(inline=True)
def _put_number(out: np.ndarray, pos: int, bits: np.uint64) -> int:
    """``repr`` of a finite double, ``null`` for NaN and the infinities (as JSON has them)."""
    if bits & _NOT_FINITE == _NOT_FINITE:
        return _put(out, pos, _NULL)
    return write_float(out, pos, bits)


@kernel(releases_gil=True)
def binary_answers(scores: np.ndarray, probabilities: np.ndarray, out: np.ndarray, pos: int) -> int:
    """Write ``[{"score": s, "label": 1 or -1, "probability": p}, ...]`` for the decision
    values ``scores`` and the ``probabilities`` into ``out`` (uint8) from ``pos``, with
    room for 2 + :data:`BINARY_ANSWER_CHARS` bytes an answer; returns the position after
    the ``]``.

    The text is what ``json.dumps`` writes for the same list of dicts: numbers as
    ``repr`` writes them, ``null`` for a non-finite one, the label 1 where the score is
    above 0.
    """
    score_bits, probability_bits = scores.view(np.uint64), probabilities.view(np.uint64)
    out[pos] = 91  # [
    pos += 1
    for i in range(scores.shape[0]):
        if i > 0:
            pos = _put(out, pos, _NEXT)
        pos = _put(out, pos, _SCORE)
        pos = _put_number(out, pos, score_bits[i])
        pos = _put(out, pos, _LABEL_UP if scores[i] > 0.0 else _LABEL_DOWN)
        pos = _put_number(out, pos, probability_bits[i])
    if scores.shape[0] > 0:
        out[pos] = 125  # }
        pos += 1
    out[pos] = 93  # ]
    return pos + 1
