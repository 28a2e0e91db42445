"""Update conditions of the perceptron family, coded as ints for the kernels.

Every rule compares ``p = a . y_k`` (the example's margin in the augmented, extended
space) with a threshold; ``threshold`` returns it. ``rule_params`` is a float64 array
whose meaning depends on the rule (see each constant). ``multiplicity`` gives how many
times to add an example at once (PDM and PFM, section 4 of the PDM paper). They are
plain kernels, not inlined by numba: each compiles once for all its callers, and LLVM
inlines it where it is linked (as fast in a replay as numba's inlining, and seconds
less to compile on a first run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from streamlearn._kernels._jit import kernel

#: a . y <= 0. No parameters.
RULE_PERCEPTRON = 0
#: a . y <= tau. ``rule_params[0] = tau``.
RULE_PAM = 1
#: a . y <= tau_l / eta. ``rule_params[0] = tau_neg / eta``, ``rule_params[1] = tau_pos / eta``.
RULE_PAUM = 2
#: a . y <= beta ||a||. ``rule_params[0] = beta``.
RULE_PFM = 3
#: a . y <= (1 - eps) ||a||^2 / t. ``rule_params[0] = 1 - eps``.
RULE_PDM = 4
#: a . y <= b t^(1 - zeta). ``rule_params[0] = b``, ``rule_params[1] = 1 - zeta``.
RULE_TMARGITRON = 5
#: a . y <= b ||a||^(1 - zeta). ``rule_params[0] = b``, ``rule_params[1] = 1 - zeta``.
RULE_AMARGITRON = 6
#: ||a|| - a . y / ||a|| >= eps, convex-combination update. ``rule_params[0] = eps``.
RULE_KOZINEC = 7


@dataclass(frozen=True)
class RuleFacts:
    """What the Python side knows of a rule beside its kernels' branches.

    scale_free
        Its threshold is homogeneous of degree one in a (0, beta ||a||, (1 - eps)
        ||a||^2 / t): multiplying a, the slack counts and t by one positive factor
        changes none of its comparisons, only how much the next unit update weighs (a
        state may be scaled down on an endless stream, a group's shares scaled).
    convex_combination
        a is a convex combination of the examples (Kozinec): the margin unit of
        probabilities and decision scales is ||a||^2, not ||a||^2 / t.
    """

    name: str
    scale_free: bool = False
    convex_combination: bool = False


#: every rule the kernels know, by code: a rule is added here, in :func:`threshold` (and
#: :func:`multiplicity` for multiple updates) and in the plain-Python twin of the tests
RULES: dict[int, RuleFacts] = {
    RULE_PERCEPTRON: RuleFacts("perceptron", scale_free=True),
    RULE_PAM: RuleFacts("perceptron with margin"),
    RULE_PAUM: RuleFacts("perceptron with uneven margins"),
    RULE_PFM: RuleFacts("perceptron with fixed margin", scale_free=True),
    RULE_PDM: RuleFacts("perceptron with dynamic margin", scale_free=True),
    RULE_TMARGITRON: RuleFacts("t-margitron"),
    RULE_AMARGITRON: RuleFacts("a-margitron"),
    RULE_KOZINEC: RuleFacts("Kozinec", convex_combination=True),
}


def rule_facts(code: int) -> RuleFacts:
    """The facts of rule ``code``; an unknown code is an error (the kernels would answer
    it with a threshold of NaN, an update condition never met).

    >>> rule_facts(RULE_PDM).scale_free, rule_facts(RULE_KOZINEC).convex_combination
    (True, True)
    >>> rule_facts(99)
    Traceback (most recent call last):
    ...
    ValueError: unknown rule code 99: the kernels know 0, 1, 2, 3, 4, 5, 6, 7
    """
    try:
        return RULES[code]
    except KeyError:
        known = ", ".join(str(c) for c in sorted(RULES))
        raise ValueError(f"unknown rule code {code}: the kernels know {known}") from None


@kernel()
def threshold(rule: int, rule_params: np.ndarray, label: float, sqnorm: float, t: float) -> float:
    """Largest ``a . y`` at which the rule still updates, given ||a||^2 and t."""
    if rule == RULE_PERCEPTRON:
        return 0.0
    if rule == RULE_PAM:
        return rule_params[0]
    if rule == RULE_PAUM:
        return rule_params[1] if label > 0 else rule_params[0]
    if rule == RULE_PFM:
        return rule_params[0] * math.sqrt(sqnorm)
    if rule == RULE_PDM:
        return rule_params[0] * sqnorm / t if t > 0 else 0.0
    if rule == RULE_TMARGITRON:
        return rule_params[0] * t ** rule_params[1] if t > 0 else 0.0
    if rule == RULE_AMARGITRON:
        return rule_params[0] * math.sqrt(sqnorm) ** rule_params[1] if t > 0 else 0.0
    if rule == RULE_KOZINEC:  # in the units of a itself: ||a||^2 - eps ||a||
        return sqnorm - rule_params[0] * math.sqrt(sqnorm)
    return math.nan  # an unknown code (refused by rule_facts where learners are made)


@kernel()
def _quadratic(a: float, b: float, c: float, mu: float) -> float:
    """(a mu + b) mu + c: the one way the multiplicity tests evaluate the quadratic."""
    return (a * mu + b) * mu + c


@kernel()
def multiplicity(
    rule: int, rule_params: np.ndarray, p: float, q: float, sqnorm: float, t: float
) -> float:
    """Smallest number of repeated additions after which the example no longer updates.

    PDM: the least integer lambda >= 1 with f(lambda) > 0, where
    f(mu) = eps q mu^2 + (t q + (2 eps - 1) p) mu + (t p - (1 - eps) A) is the condition
    after mu additions (f <= 0 while it updates), that is floor(mu+) + 1 with mu+ its
    non-negative root. Most counts are 1 or 2 (on Adult 85% of them), so f(1) and f(2)
    are tried first, which spares the root's square root and division; a count from the
    root is checked against f one step either way, so rounding in the root cannot
    contradict those tests.
    PFM: the analogous root of (p + mu q)^2 = beta^2 (A + 2 mu p + mu^2 q), p + mu q > 0.
    Every other rule adds an example once.
    """
    if rule == RULE_PDM and t > 0:
        eps = 1.0 - rule_params[0]
        a = eps * q
        b = t * q + (2.0 * eps - 1.0) * p
        c = t * p - rule_params[0] * sqnorm
        if c >= 0.0 or _quadratic(a, b, c, 1.0) > 0.0:
            return 1.0
        if _quadratic(a, b, c, 2.0) > 0.0:
            return 2.0
        disc = math.sqrt(b * b - 4.0 * a * c)
        # the root written to avoid cancellation when b > 0
        mu = (-2.0 * c) / (b + disc) if b > 0 else (-b + disc) / (2.0 * a)
        lam = max(math.floor(mu) + 1.0, 3.0)
        if lam > 3.0 and _quadratic(a, b, c, lam - 1.0) > 0.0:
            return lam - 1.0
        if _quadratic(a, b, c, lam) <= 0.0:
            return lam + 1.0
        return lam
    if rule == RULE_PFM:
        beta_sq = rule_params[0] * rule_params[0]
        if q <= beta_sq:
            return 1.0
        a2 = q * (q - beta_sq)
        a1 = 2.0 * p * (q - beta_sq)
        a0 = p * p - beta_sq * sqnorm
        disc = a1 * a1 - 4.0 * a2 * a0
        mu = -p / q
        if disc >= 0.0:
            mu = max(mu, (-a1 + math.sqrt(disc)) / (2.0 * a2))
        return max(math.floor(mu) + 1.0, 1.0)
    return 1.0
