"""The bound on an example's squared norm (``rows.MAX_ROW_SQNORM``): every kernel that
checks a row refuses one above it, and every learner, binary or a one-vs-rest bank, keeps
a finite state on examples just inside it, learned, replayed and restored."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn._kernels.bank_one import TOO_LARGE as BANK_TOO_LARGE
from streamlearn._kernels.bank_one import canonical_decisions
from streamlearn._kernels.rows import MAX_ROW_SQNORM, row_sqnorms, sqnorms_of_rows
from streamlearn._kernels.single import TOO_LARGE, canonical, empty_blocks, raw_offset
from streamlearn._kernels.svmlight import LINE_NORM_OVERFLOW, parse_lines
from streamlearn.learn import LEARNERS, ModelBank, ModelLimits, model_from_state
from streamlearn.parse import SvmlightParser


def largest_single_value() -> float:
    """The largest value a row of one value may hold (its square rounds to at most the
    bound: sqrt(1e50) = 1e25 does not)."""
    value = math.sqrt(MAX_ROW_SQNORM)
    while value * value > MAX_ROW_SQNORM:
        value = math.nextafter(value, 0.0)
    return value


AT_BOUND = largest_single_value()
ABOVE = math.nextafter(AT_BOUND, math.inf)


def single_canonical(indices: list[float], values: list[float]) -> int:
    """The one-example kernel of the river adapters on one raw example."""
    work = 8
    F, Z = empty_blocks(4, work)
    start = raw_offset(4, work)
    n = len(indices)
    F[start : start + n] = indices
    F[start + n : start + 2 * n] = values
    return int(canonical(n, 100, F, Z))


def bank_canonical(indices: list[int], values: list[float]) -> int:
    """The one-example kernel of the river bank adapters on one raw example."""
    n = len(indices)
    return int(
        canonical_decisions(
            np.array(indices, dtype=np.int64),
            np.array(values),
            np.empty(n, dtype=np.int64),
            np.empty(n),
            np.zeros((2, 100)),
            np.ones((2, 4)),
            2,
            1.0,
            np.empty(2),
        )
    )


def svmlight_code(line: bytes) -> int:
    """The kernel's code for one line (0: a row)."""
    result = parse_lines(np.frombuffer(line + b"\n", dtype=np.uint8), 1, 1000, 1 << 20)
    rejects = result[8]
    return int(rejects[0, 1]) if rejects.shape[0] else 0


@pytest.mark.parametrize(
    ("indices", "values", "inside"),
    [
        ([1], [AT_BOUND], True),
        ([1], [-AT_BOUND], True),
        ([1], [ABOVE], False),
        ([1, 2], [0.8 * AT_BOUND, 0.59 * AT_BOUND], True),
        ([1, 2], [0.8 * AT_BOUND, 0.61 * AT_BOUND], False),
        ([3, 3], [0.6 * AT_BOUND, 0.6 * AT_BOUND], False),  # a repeated index's sum
        ([3, 3], [0.6 * AT_BOUND, -0.6 * AT_BOUND], True),  # adds up to 0
        ([1], [1e154], False),
        ([1], [1e200], False),
    ],
)
def test_one_example_kernels_refuse_a_row_above_the_bound(
    indices: list[int], values: list[float], inside: bool
) -> None:
    assert (single_canonical([float(i) for i in indices], values) != -TOO_LARGE) == inside
    assert (bank_canonical(indices, values) != BANK_TOO_LARGE) == inside


def test_the_svmlight_kernel_refuses_a_row_of_exact_numbers_above_the_bound() -> None:
    assert svmlight_code(b"1 1:9000000000000000e22") == LINE_NORM_OVERFLOW  # 9e37, exact
    seven = b"7000000000000000e9"  # 7e24, exact in the kernel (an exponent up to 22)
    assert svmlight_code(b"1 1:" + seven + b" 2:" + seven + b" 3:1") == 0  # 9.8e49 + 1
    assert svmlight_code(b"1 1:" + seven + b" 2:7200000000000000e9") == LINE_NORM_OVERFLOW
    # with a number the kernel leaves to Python (1e26), Python judges the row
    assert svmlight_code(b"1 1:" + seven + b" 2:1e26") == 0


def test_sqnorms_of_rows_add_in_order_as_row_sqnorms_does() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(size=40) * 10.0 ** rng.integers(-5, 20, size=40)
    indptr = np.array([0, 3, 3, 17, 40])
    rows = np.array([3, 0, 1])
    assert (
        sqnorms_of_rows(indptr, values, rows).tolist() == row_sqnorms(indptr, values)[rows].tolist()
    )


# -- every learner, at the bound ---------------------------------------------------------

NAMES = list(LEARNERS)
#: squared norms to aim at: tiny, ordinary, and at the bound (the largest weigh most)
SQNORMS = [1e-300, 1e-20, 1.0, 1e6, 1e30, 0.5 * MAX_ROW_SQNORM, MAX_ROW_SQNORM]


@st.composite
def lines_at_the_bound(draw: st.DrawFn, one_vs_rest: bool) -> bytes:
    """svmlight lines of 1 to 4 values whose squared norms range from 1e-300 to the bound."""
    lines = []
    for _ in range(draw(st.integers(2, 8))):
        indices = sorted(draw(st.sets(st.integers(1, 6), min_size=1, max_size=4)))
        direction = np.array([draw(st.integers(-1000, 1000)) for _ in indices], dtype=float)
        direction[0] = direction[0] or 1.0
        target = draw(st.sampled_from(SQNORMS))
        values = direction * math.sqrt(target / float(direction @ direction))
        label = draw(st.sampled_from(["1", "2", "3", "1,3"] if one_vs_rest else ["1", "-1"]))
        features = " ".join(f"{i}:{v!r}" for i, v in zip(indices, values.tolist(), strict=True))
        lines.append(f"{label} {features}\n")
    return "".join(lines).encode()


def finite_state(model: Any) -> bool:
    """Whether every float array of the model's state (weights, scalars, slack counts,
    buffered values and norms) is finite."""

    def arrays(state: Any) -> list[np.ndarray]:
        if isinstance(state, dict):
            return [a for value in state.values() for a in arrays(value)]
        if isinstance(state, list | tuple):
            return [a for value in state for a in arrays(value)]
        if isinstance(state, np.ndarray) and state.dtype.kind == "f":
            return [state]
        return []

    return all(bool(np.all(np.isfinite(a))) for a in arrays(model.state_dict()))


def learn_and_replay(name: str, delta: Any, one_vs_rest: bool, text: bytes) -> None:
    rows = SvmlightParser().parse_all(text)
    assert all(r.reason == "values too large" for r in rows.rejected)
    assert np.all(row_sqnorms(rows.indptr, rows.values) <= MAX_ROW_SQNORM)
    params = dict(LEARNERS.entry(name).test_params)
    learner = LEARNERS[name](delta=delta, max_passes=4, **params)
    model: Any = ModelBank(learner) if one_vs_rest else learner
    examples, _ = model.admit(rows, ModelLimits())  # as the daemon learns rows
    model.learn_rows(examples)
    model.replay()
    assert finite_state(model)
    again = model_from_state(model.state_dict())  # a restart: restored, then replayed
    again.learn_rows(examples)
    again.replay()
    assert finite_state(again)
    scores = again.decision_function((rows.indptr, rows.indices, rows.values))
    assert np.all(np.isfinite(scores))
    assert not any(map(math.isinf, summary_figures(again.summary())))


#: figures of a summary that an overflow would make infinite (NaN means undefined, and
#: the margin of a class without examples is +inf by design)
FIGURES = ("margin_achieved", "margin_with_slack_counts", "certified_gap", "weight_norm")


def summary_figures(summary: Any) -> list[float]:
    """The certificate's figures of a summary, of each label's for a bank."""
    if isinstance(summary, list):
        return [x for part in summary for x in summary_figures(part)]
    if not isinstance(summary, dict):
        return []
    found = [float(summary[key]) for key in FIGURES if key in summary]
    if summary.get("updates", 0.0) > 0.0 and "margin_upper_bound" in summary:
        found.append(float(summary["margin_upper_bound"]))
    return found + summary_figures(summary.get("per_label"))


@pytest.mark.parametrize("one_vs_rest", [False, True])
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_learner_stays_finite_on_examples_at_the_bound(
    name: str, one_vs_rest: bool, data: st.DataObject
) -> None:
    # PFM's beta must lie below the data's margin, which a soft margin (Delta > 0) ensures
    deltas = [1.0, "auto"] if name == "pfm" else [0.0, 1.0, "auto"]
    delta = data.draw(st.sampled_from(deltas))
    learn_and_replay(name, delta, one_vs_rest, data.draw(lines_at_the_bound(one_vs_rest)))
