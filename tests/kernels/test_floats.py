"""Doubles written by the compiled kernels read as Python's ``repr`` writes them, byte for
byte, and a binary model's answers as ``json.dumps`` writes them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamlearn._kernels import BINARY_ANSWER_CHARS, binary_answers
from streamlearn._kernels.floats import FLOAT_CHARS, float_texts

EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 0.30000000000000004, 3.0, 100.0, 12.5, -68.0,
    0.35073265679823384, 1234.5678, 0.001, 1e-4, 9.999e-5, 1e-5, 5e-5, 2.5e-5, 1.5e-7,
    1e15, 9999999999999998.0, 1e16, 1.5e16, 123456789012345678.0, 1e21, 1e22, 1e23,
    1e100, 1e-100, 2.0**53, 2.0**53 + 2, 2.0**-1074, 5e-324, 2.2250738585072014e-308,
    2.225073858507201e-308, 1.7976931348623157e308, 4.35e-322, 9007199254740993.0,
]  # fmt: skip


def texts(values: np.ndarray) -> list[str]:
    """The kernel's text of each value."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.empty(values.shape[0] * FLOAT_CHARS, dtype=np.uint8)
    ends = np.empty(values.shape[0], dtype=np.int64)
    size = float_texts(values, out, ends)
    text = out[:size].tobytes().decode("ascii")
    starts = [0, *ends[:-1].tolist()]
    return [text[s:e] for s, e in zip(starts, ends.tolist(), strict=True)]


def test_the_edges_of_each_layout_read_as_repr() -> None:
    values = np.array(EDGES + [-v for v in EDGES])
    assert texts(values) == [repr(v) for v in values.tolist()]


@pytest.mark.parametrize("seed", [0, 1])
def test_doubles_of_every_exponent_read_as_repr(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 100_000
    bits = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    uniform = bits.view(np.float64)
    near_powers = 10.0 ** rng.integers(-307, 308, n)
    places = 10.0 ** rng.integers(0, 4, n)
    values = np.concatenate([
        uniform[np.isfinite(uniform)],
        rng.integers(-(10**6), 10**6, n) / 10.0 ** rng.integers(0, 12, n),  # short decimals
        rng.random(n),  # probabilities
        np.round(rng.normal(size=n) * 100 * places) / places,  # scores
        np.nextafter(near_powers, np.inf), np.nextafter(near_powers, -np.inf), near_powers,
        2.0 ** rng.integers(-1074, 1024, n).astype(np.float64),
        rng.integers(0, 2**52, n).astype(np.float64) * 2.0**-1074,  # subnormals
    ])  # fmt: skip
    assert texts(values) == [repr(v) for v in values.tolist()]


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_double_reads_as_repr(value: float) -> None:
    assert texts(np.array([value])) == [repr(value)]


def test_binary_answers_are_the_json_of_the_answers() -> None:
    rng = np.random.default_rng(2)
    scores = np.concatenate([rng.normal(size=50) * 100, [0.0, -0.0, math.nan, math.inf, -1e300]])
    probabilities = np.concatenate([rng.random(50), [0.5, 0.5, math.nan, 1.0, -math.inf]])
    out = np.empty(2 + scores.shape[0] * BINARY_ANSWER_CHARS, dtype=np.uint8)
    end = binary_answers(scores, probabilities, out, 0)
    answers = [
        {
            "score": s if math.isfinite(s) else None,
            "label": 1 if s > 0.0 else -1,
            "probability": p if math.isfinite(p) else None,
        }
        for s, p in zip(scores.tolist(), probabilities.tolist(), strict=True)
    ]
    assert out[:end].tobytes() == json.dumps(answers).encode()
    empty = np.empty(0)
    assert out[: binary_answers(empty, empty, out, 0)].tobytes() == b"[]"


def test_binary_answers_fill_their_room_at_most() -> None:
    """The longest numbers and the longer label: the room the caller gives is enough."""
    worst = np.full(20, -2.2250738585072014e-308)
    out = np.zeros(2 + 20 * BINARY_ANSWER_CHARS + 16, dtype=np.uint8)
    end = binary_answers(worst, worst, out, 0)
    assert end == 20 * BINARY_ANSWER_CHARS  # "[" and "]" take the room of the last ", "
    assert not out[end:].any()
