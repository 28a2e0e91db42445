"""PDM's multiple-update count against exact rational arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from streamlearn._kernels.rules import RULE_PDM, multiplicity


def exact_count(eps: float, p: float, q: float, sqnorm: float, t: float) -> int:
    """The least lambda >= 1 after which a . y > (1 - eps) ||a||^2 / t no longer holds,
    by adding the example lambda times in exact arithmetic, one at a time."""
    r = 1 - Fraction(eps)
    p_, q_, a_, t_ = Fraction(p), Fraction(q), Fraction(sqnorm), Fraction(t)
    lam = 0
    while t_ * p_ <= r * a_:  # still meets the condition: add once more
        a_ += 2 * p_ + q_
        p_ += q_
        t_ += 1
        lam += 1
    return lam


def random_states(
    rng: np.random.Generator, eps: float, n: int
) -> list[tuple[float, float, float, float]]:
    """(p, q, ||a||^2, t) of examples that meet the PDM condition, by a margin that needs
    from one to a few hundred additions."""
    states = []
    for _ in range(n):
        t = float(rng.integers(1, 10**7))
        q = float(rng.uniform(1.0, 50.0))
        sqnorm = t * t * float(rng.uniform(1e-5, 1.0))
        shortfall = q * float(rng.choice([0.3, 1.5, 3.0, 50.0])) * float(rng.uniform(0.0, 1.0))
        p = (1.0 - eps) * sqnorm / t - shortfall
        states.append((p, q, sqnorm, t))
    return states


@pytest.mark.parametrize("eps", [0.5, 0.1, 0.01])
def test_pdm_count_is_the_least_that_ends_the_condition(eps: float) -> None:
    rng = np.random.default_rng(7)
    params = np.array([1.0 - eps, 0.0])
    counts = []
    for p, q, sqnorm, t in random_states(rng, eps, 400):
        expected = exact_count(eps, p, q, sqnorm, t)
        if expected == 0:
            continue
        got = multiplicity(RULE_PDM, params, p, q, sqnorm, t)
        assert got == expected, (p, q, sqnorm, t)
        counts.append(expected)
    # every route of the kernel ran: the tests of 1 and 2, and the root
    assert {1, 2} <= set(counts)
    assert max(counts) > 2
