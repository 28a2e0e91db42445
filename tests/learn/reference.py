"""A plain-Python twin of the learning engine, written from ALGORITHMS.md and the docstrings.

It reproduces what ``learner.learn(X, y)`` followed by ``learner.replay(max_passes=k)``
computes for every update rule, without the compiled kernels: the stream pass (each new
example stored, then presented once with single updates), then replay passes, each a full
pass over the buffer in the order ``pass_permutation(seed, pass_index, n)`` followed by the
three nested active-set rounds of the PDM paper.

The buffer is a plain list that never evicts: use it only with data that fits.

Representation: the extended vector ``a = (w, beta, Delta * s_1, ..., Delta * s_m)`` with
``s_k`` the slack coordinate of example k (the number of times it was added, times the
learning rate for PAUM; a convex weight for Kozinec), so that
``a . y_k = l_k (w . x_k + rho beta) + Delta^2 s_k`` and ``||y_k||^2 = ||x_k||^2 + rho^2
+ Delta^2``. ``A`` is ||a||^2, kept incrementally as the engine does.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.replay import ActiveSetSchedule, pass_permutation

FloatArray = npt.NDArray[np.float64]

#: rules handled by the twin, by the learners' ``algorithm`` names
ALGORITHMS = (
    "perceptron",
    "pam",
    "paum",
    "pfm",
    "pdm",
    "t-margitron",
    "a-margitron",
    "kozinec",
)


@dataclass
class Counts:
    """What the engine counts: update events, presentations, mini-epochs (cycles)."""

    update_events: int = 0
    presentations: int = 0
    mini_epochs: int = 0


@dataclass
class ReferenceLearner:
    """The twin of a :class:`streamlearn.LinearLearner` with a numeric Delta.

    ``params`` holds the rule's own hyperparameters under the learners' names (``tau``,
    ``tau_neg``/``tau_pos``/``lr``, ``beta``, ``eps``, ``b``/``zeta``,
    ``multiple_updates``).
    """

    algorithm: str
    params: dict[str, Any]
    rho: float = 1.0
    delta: float = 0.0
    seed: int = 0
    active_sets: ActiveSetSchedule = field(default_factory=ActiveSetSchedule)
    # state
    w: FloatArray = field(default_factory=lambda: np.zeros(0))
    beta: float = 0.0
    sqnorm: float = 0.0
    t: float = 0.0
    slack: list[float] = field(default_factory=list)
    rows: list[tuple[npt.NDArray[np.int64], FloatArray]] = field(default_factory=list)
    labels: list[float] = field(default_factory=list)
    x_sqnorms: list[float] = field(default_factory=list)
    passes: int = 0
    converged: bool = False
    counts: Counts = field(default_factory=Counts)

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"no twin for {self.algorithm!r}")

    # -- what the tests compare ---------------------------------------------------------

    @property
    def learning_rate(self) -> float:
        return float(self.params.get("lr", 1.0)) if self.algorithm == "paum" else 1.0

    @property
    def coef_(self) -> FloatArray:
        return self.w.copy()

    @property
    def intercept_(self) -> float:
        return self.rho * self.beta

    def alpha(self) -> FloatArray:
        """Per-example slack counts alpha_k in the engine's units (PAUM: updates made)."""
        return np.array(self.slack, dtype=np.float64) / self.learning_rate

    # -- the two entry points -----------------------------------------------------------

    def learn(
        self,
        indptr: npt.ArrayLike,
        indices: npt.ArrayLike,
        values: npt.ArrayLike,
        labels: npt.ArrayLike,
    ) -> ReferenceLearner:
        """Store each example, then present it once (single updates, nothing collected)."""
        ptr = np.asarray(indptr, dtype=np.int64)
        idx = np.asarray(indices, dtype=np.int64)
        val = np.asarray(values, dtype=np.float64)
        lab = np.asarray(labels, dtype=np.float64)
        if idx.shape[0]:
            self._grow(int(idx.max()) + 1)
        for i in range(ptr.shape[0] - 1):
            row_idx = idx[ptr[i] : ptr[i + 1]].copy()
            row_val = val[ptr[i] : ptr[i + 1]].copy()
            sq = 0.0
            for v in row_val:
                sq += float(v) * float(v)
            self.rows.append((row_idx, row_val))
            self.labels.append(float(lab[i]))
            self.x_sqnorms.append(sq)
            self.slack.append(0.0)
            lam, _ = self._present(len(self.rows) - 1, 1.0, multi=False)
            self.counts.presentations += 1
            if lam > 0:
                self.counts.update_events += 1
                self.converged = False
        return self

    def replay(self, max_passes: int) -> ReferenceLearner:
        """Up to ``max_passes`` full passes, each with its active-set rounds; stop when a
        full pass makes no update."""
        n = len(self.rows)
        if n == 0:
            self.converged = True
            return self
        multi = bool(self.params.get("multiple_updates", False)) and self.algorithm in (
            "pdm",
            "pfm",
        )
        for _ in range(max_passes):
            order = [int(k) for k in pass_permutation(self.seed, self.passes, n)]
            first = self.passes == 0
            events, certified = self._replay_pass(order, first, multi)
            self.passes += 1
            self.converged = events == 0
            if self.converged:
                break
            if certified or self._certified():
                self.converged = True  # PDM also stops once its certificate reaches eps
                break
        return self

    def _certified(self) -> bool:
        return self.algorithm == "pdm" and self.certified_gap() <= self.params["eps"]

    # -- the certificate ----------------------------------------------------------------

    def certified_gap(self) -> float:
        """1 - margin / (||a|| / t), the margin being that of (w, beta) with the best slack
        coordinates: the largest 1 / sqrt(g(c)), g(c) = c^2 ||u||^2 + sum_k max(0, 1 -
        c s_k)^2 / Delta^2, found here by trying the root of g' on every stretch between
        two breakpoints 1 / s_k (nothing is evicted: the bound is ||a|| / t)."""
        scores = np.array(
            [lab * (float(self.w[idx] @ val) + self.rho * self.beta)
             for (idx, val), lab in zip(self.rows, self.labels, strict=True)]
        )  # fmt: skip
        u_sq = float(self.w @ self.w) + self.beta * self.beta
        margin = best_slack_margin(scores, u_sq, self.delta * self.delta)
        d_sq = self.delta * self.delta
        alpha = np.array(self.slack)
        own = float(np.min(scores + d_sq * alpha)) / math.sqrt(self.sqnorm)
        return 1.0 - max(margin, own) / (math.sqrt(self.sqnorm) / self.t)

    # -- one replay pass ----------------------------------------------------------------

    def _replay_pass(self, order: list[int], first_pass: bool, multi: bool) -> tuple[int, bool]:
        """The full epoch's update events, and whether PDM's certificate reached eps
        after one of the level-1 rounds (which ends the pass there)."""
        sched = self.active_sets
        c1 = sched.c1_first_pass if first_pass else sched.c1
        full_events, level1 = self._cycle(order, c1, multi)
        if full_events == 0 or not sched.enabled:
            return full_events, False
        for round_number in range(sched.nep1):
            if round_number > 0 and self._certified():
                return full_events, True
            events, level2 = self._cycle(level1, sched.c2, multi)
            if events == 0:
                break
            for _ in range(sched.nep2):
                events, level3 = self._cycle(level2, 1.0, multi)
                if events == 0:
                    break
                for _ in range(sched.nep3):
                    events, updated = self._cycle(level3, 1.0, multi)
                    if events == 0:
                        break
                    if sched.shrink:  # level 3 keeps the examples it just updated
                        level3 = updated
        return full_events, False

    def _cycle(self, examples: list[int], factor: float, multi: bool) -> tuple[int, list[int]]:
        """Present each example once; return the update events and the collected ones."""
        events = 0
        collected: list[int] = []
        for k in examples:
            lam, keep = self._present(k, factor, multi)
            if lam > 0:
                events += 1
            if keep:
                collected.append(k)
        self.counts.update_events += events
        self.counts.presentations += len(examples)
        self.counts.mini_epochs += 1
        return events, collected

    # -- one presentation ---------------------------------------------------------------

    def _present(self, k: int, factor: float, multi: bool) -> tuple[float, bool]:
        idx, val = self.rows[k]
        label = self.labels[k]
        dot = _sparse_dot(self.w, idx, val)
        delta_sq = self.delta * self.delta
        # the engine's order: the augmented and slack terms as one offset, added last
        p = label * dot + (label * (self.rho * self.beta) + delta_sq * self.slack[k])
        thr = self._threshold(label)
        keep = p <= thr + (factor - 1.0) * abs(thr)
        if p > thr:
            return 0.0, keep
        q = self.x_sqnorms[k] + self.rho * self.rho + delta_sq
        if self.algorithm == "kozinec":
            self._kozinec_step(k, p, q)
            return 1.0, keep
        lam = self._multiplicity(p, q) if multi else 1.0
        # a <- a + lam * eta * y_k (eta = 1 except for PAUM)
        step = lam * self.learning_rate
        for j in range(idx.shape[0]):
            self.w[idx[j]] += step * label * val[j]
        self.beta += step * label * self.rho
        self.slack[k] += step
        self.sqnorm = self.sqnorm + 2.0 * step * p + step * step * q
        self.t = self.t + lam
        return lam, keep

    def _threshold(self, label: float) -> float:
        """The largest a . y at which the rule updates (ALGORITHMS.md, update conditions)."""
        A, t, P = self.sqnorm, self.t, self.params
        name = self.algorithm
        if name == "perceptron":
            return 0.0
        if name == "pam":
            return float(P["tau"])
        if name == "paum":
            return float(P["tau_pos"] if label > 0 else P["tau_neg"])
        if name == "pfm":
            return float(P["beta"]) * math.sqrt(A)
        if name == "pdm":
            return (1.0 - float(P["eps"])) * A / t if t > 0 else 0.0
        if name == "t-margitron":
            return float(P["b"]) * t ** (1.0 - float(P["zeta"])) if t > 0 else 0.0
        if name == "a-margitron":
            return float(P["b"]) * math.sqrt(A) ** (1.0 - float(P["zeta"])) if t > 0 else 0.0
        if name == "kozinec":  # ||a|| - a . y / ||a|| >= eps, times ||a||
            return A - float(P["eps"]) * math.sqrt(A)
        raise ValueError(f"no threshold for {name!r}")

    def _multiplicity(self, p: float, q: float) -> float:
        """How many times to add the example so that it no longer meets the condition."""
        A, t = self.sqnorm, self.t
        if self.algorithm == "pdm":
            if t <= 0:
                return 1.0
            eps = float(self.params["eps"])
            # f(mu) = eps q mu^2 + (t q + (2 eps - 1) p) mu + (t p - (1 - eps) A) <= 0 while
            # it updates: the least integer lambda >= 1 with f(lambda) > 0
            qa, qb, qc = eps * q, t * q + (2.0 * eps - 1.0) * p, t * p - (1.0 - eps) * A

            def f(mu: float) -> float:
                return (qa * mu + qb) * mu + qc

            if qc >= 0.0:
                return 1.0
            # from the root's guess to the least count, whichever way rounding put it
            lam = math.floor(_positive_root(qa, qb, qc)) + 1.0
            while lam > 1.0 and f(lam - 1.0) > 0.0:
                lam -= 1.0
            while f(lam) <= 0.0:
                lam += 1.0
            return lam
        # PFM: p + mu q <= beta sqrt(A + 2 mu p + mu^2 q) while it updates
        b2 = float(self.params["beta"]) ** 2
        if q <= b2:
            return 1.0
        qa, qb, qc = q * (q - b2), 2.0 * p * (q - b2), p * p - b2 * A
        mu = -p / q
        disc = qb * qb - 4.0 * qa * qc
        if disc >= 0.0:
            mu = max(mu, (-qb + math.sqrt(disc)) / (2.0 * qa))
        return max(math.floor(mu) + 1.0, 1.0)

    def _kozinec_step(self, k: int, p: float, q: float) -> None:
        """a <- (1 - c) a + c y_k, c = clip(a . (a - y_k) / ||a - y_k||^2, 0, 1)."""
        A = self.sqnorm
        denom = A - 2.0 * p + q
        c = 1.0 if A <= 0.0 or denom <= 0.0 else min(max((A - p) / denom, 0.0), 1.0)
        idx, val = self.rows[k]
        label = self.labels[k]
        self.w *= 1.0 - c
        self.beta *= 1.0 - c
        self.slack = [(1.0 - c) * s for s in self.slack]
        for j in range(idx.shape[0]):
            self.w[idx[j]] += c * label * val[j]
        self.beta += c * label * self.rho
        self.slack[k] += c
        self.sqnorm = q if c >= 1.0 else (1.0 - c) ** 2 * A + 2.0 * c * (1.0 - c) * p + c * c * q
        self.t += 1.0

    def _grow(self, n_features: int) -> None:
        if n_features > self.w.shape[0]:
            grown = np.zeros(n_features)
            grown[: self.w.shape[0]] = self.w
            self.w = grown


def _sparse_dot(w: FloatArray, idx: npt.NDArray[np.int64], val: FloatArray) -> float:
    """w . x in the engine's documented order: four interleaved partial sums, nonzero j
    going to sum j mod 4 (the tail to the first), added as (s0 + s1) + (s2 + s3)."""
    sums = [0.0, 0.0, 0.0, 0.0]
    n = idx.shape[0]
    whole = n - n % 4
    for j in range(whole):
        sums[j % 4] += float(w[idx[j]]) * float(val[j])
    for j in range(whole, n):
        sums[0] += float(w[idx[j]]) * float(val[j])
    return (sums[0] + sums[1]) + (sums[2] + sums[3])


def _positive_root(qa: float, qb: float, qc: float) -> float:
    """The non-negative root of qa mu^2 + qb mu + qc (qa > 0, qc <= 0), without
    cancellation."""
    if qc >= 0.0:
        return 0.0
    disc = math.sqrt(qb * qb - 4.0 * qa * qc)
    if qb > 0:
        return -2.0 * qc / (qb + disc)
    return (-qb + disc) / (2.0 * qa)


@dataclass(frozen=True)
class Problem:
    """Examples in CSR form (sorted indices, no explicit zeros) with labels in {+1, -1}."""

    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.int64]
    values: FloatArray
    labels: npt.NDArray[np.int64]

    @property
    def triple(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], FloatArray]:
        return (self.indptr, self.indices, self.values)

    @property
    def n_examples(self) -> int:
        return int(self.indptr.shape[0] - 1)

    def dense(self, n_features: int) -> FloatArray:
        out = np.zeros((self.n_examples, n_features))
        for i in range(self.n_examples):
            lo, hi = self.indptr[i], self.indptr[i + 1]
            out[i, self.indices[lo:hi]] = self.values[lo:hi]
        return out

    def rows(self, start: int, stop: int) -> Problem:
        lo, hi = int(self.indptr[start]), int(self.indptr[stop])
        return Problem(
            indptr=self.indptr[start : stop + 1] - lo,
            indices=self.indices[lo:hi].copy(),
            values=self.values[lo:hi].copy(),
            labels=self.labels[start:stop].copy(),
        )


def sparse_problem(
    n_examples: int,
    n_features: int,
    seed: int,
    *,
    density: float = 0.3,
    flip: float = 0.1,
    min_margin: float = 0.0,
) -> Problem:
    """Random sparse rows labelled by a random hyperplane (with bias).

    ``flip`` is the fraction of labels flipped (class overlap); ``min_margin`` > 0 drops
    rows closer than that to the hyperplane, which makes the data separable when
    ``flip = 0``. Some rows may be empty.
    """
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=n_features)
    bias = 0.3
    indptr: list[int] = [0]
    indices: list[int] = []
    values: list[float] = []
    labels: list[int] = []
    while len(labels) < n_examples:
        nnz = rng.binomial(n_features, density)
        cols = np.sort(rng.choice(n_features, size=nnz, replace=False))
        vals = np.round(rng.normal(size=nnz), 3)
        vals[vals == 0.0] = 0.5
        score = float(normal[cols] @ vals) + bias
        if abs(score) < min_margin:
            continue
        label = 1 if score > 0 else -1
        if rng.random() < flip:
            label = -label
        indices.extend(cols.tolist())
        values.extend(vals.tolist())
        indptr.append(len(indices))
        labels.append(label)
    return Problem(
        indptr=np.array(indptr, dtype=np.int64),
        indices=np.array(indices, dtype=np.int64),
        values=np.array(values, dtype=np.float64),
        labels=np.array(labels, dtype=np.int64),
    )


def best_slack_margin(scores: FloatArray, u_sq: float, d_sq: float) -> float:
    """The margin of a direction u over examples with ``scores`` s_k = l_k u . z_k when
    every slack coordinate is chosen at its best: the largest 1 / sqrt(g(c)) with
    g(c) = c^2 ||u||^2 + sum_k max(0, 1 - c s_k)^2 / Delta^2, found by trying the root of
    g' on every stretch between two breakpoints 1 / s_k (min_k s_k / ||u|| for Delta = 0).
    Written apart from the engine's kernel, which walks the breakpoints in order.
    """
    if d_sq == 0.0:
        return float(scores.min()) / math.sqrt(u_sq)

    def g(c: float) -> float:
        return c * c * u_sq + float(np.sum(np.maximum(0.0, 1.0 - c * scores) ** 2)) / d_sq

    candidates = [0.0]
    breakpoints = sorted(1.0 / s for s in scores if s > 0)
    # one point inside each stretch between breakpoints tells the stretch's active set
    inside = (
        [b / 2 for b in breakpoints[:1]]
        + [(lo + hi) / 2 for lo, hi in itertools.pairwise(breakpoints)]
        + [2 * b for b in breakpoints[-1:]]
    )
    for point in inside or [1.0]:
        active = scores[(scores <= 0) | (point * scores < 1.0)]
        denominator = d_sq * u_sq + float(active @ active)
        if denominator > 0:
            candidates.append(max(0.0, float(active.sum()) / denominator))
    return 1.0 / math.sqrt(min(g(c) for c in candidates))
