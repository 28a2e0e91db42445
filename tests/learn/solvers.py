"""Independent reference solutions for the theorem tests: LIBLINEAR and data helpers.

The maximum directional margin gamma* of the augmented, extended problem (x becomes
[x, rho], and with the 2-norm soft-margin extension Delta > 0 every example k gets its
own coordinate of value Delta) is the solution of a quadratic program that LIBLINEAR
solves: ``-s 1 -c C -B rho`` with C = 1 / (2 Delta^2) minimises
0.5 (||w||^2 + b_w^2) + C sum xi_k^2 subject to l_k (w . x_k + rho b_w) >= 1 - xi_k.
Any (w, b_w, xi) gives the extended vector a = (w, b_w, xi / Delta) whose directional
margin min_k (l_k f(x_k) + xi_k) / ||a|| is a lower bound of gamma*; at LIBLINEAR's
optimum it equals gamma*. For Delta = 0 (hard margin) a large C and xi = 0 do the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from liblinear.liblinearutil import parameter, problem, train

Array = npt.NDArray[np.float64]

#: the shared data folder beside the repository (../shared/data)
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
#: C standing for the hard margin (Delta = 0)
HARD_MARGIN_C = 1e6


@dataclass(frozen=True)
class Reference:
    """A LIBLINEAR solution and the margin it certifies from below."""

    w: Array
    bias_weight: float
    rho: float
    delta: float
    #: l_k f(x_k) with f(x) = w . x + rho * bias_weight
    functional: Array
    #: the slack xi_k = max(0, 1 - l_k f(x_k)) (zeros for the hard margin)
    slack: Array
    #: min_k (l_k f(x_k) + xi_k) / ||(w, bias_weight, xi / Delta)||, a lower bound of gamma*
    margin: float

    @property
    def intercept(self) -> float:
        return self.rho * self.bias_weight


def _csr(X: Any) -> sp.csr_matrix:
    return sp.csr_matrix(X, dtype=np.float64)


def liblinear_reference(
    X: Any, y: npt.ArrayLike, *, rho: float, delta: float, tol: float = 1e-6
) -> Reference:
    """Solve the max-margin problem with LIBLINEAR's dual coordinate descent (L2 loss).

    ``delta > 0``: C = 1 / (2 delta^2) and the slack enters the extended vector.
    ``delta == 0``: C = ``HARD_MARGIN_C``; the data must be separable and the slack is 0
    (the margin is then min_k l_k f(x_k) / ||(w, b_w)||, still a valid lower bound).
    """
    Xc = _csr(X)
    labels = np.asarray(y, dtype=np.float64)
    if not set(np.unique(labels).tolist()) <= {-1.0, 1.0}:
        raise ValueError("labels must be +1/-1")
    C = 1.0 / (2.0 * delta * delta) if delta > 0 else HARD_MARGIN_C
    model = train(problem(labels, Xc), parameter(f"-s 1 -c {C!r} -B {rho!r} -e {tol!r} -q"))
    coef, bias = model.get_decfun()
    # the decision function is for the model's first label
    sign = 1.0 if int(model.get_labels()[0]) == 1 else -1.0
    w = np.zeros(Xc.shape[1])
    w[: len(coef)] = coef
    w *= sign
    intercept = sign * float(bias)  # get_decfun's bias already is bias_weight * B
    bias_weight = intercept / rho
    functional = labels * (Xc @ w + intercept)
    if delta > 0:
        slack = np.maximum(0.0, 1.0 - functional)
        norm = math.sqrt(w @ w + bias_weight**2 + float(slack @ slack) / delta**2)
    else:
        slack = np.zeros_like(functional)
        norm = math.sqrt(w @ w + bias_weight**2)
    margin = float(np.min(functional + slack)) / norm
    return Reference(w, bias_weight, rho, delta, functional, slack, margin)


def augmented_radius(X: Any, rho: float) -> float:
    """R = max_k ||[x_k, rho]||."""
    Xc = _csr(X)
    sq = np.asarray(Xc.multiply(Xc).sum(axis=1)).ravel()
    return math.sqrt(float(sq.max()) + rho * rho)


def feature_radius(X: Any) -> float:
    """R = max_k ||x_k|| (the PAUM paper's R)."""
    Xc = _csr(X)
    sq = np.asarray(Xc.multiply(Xc).sum(axis=1)).ravel()
    return math.sqrt(float(sq.max()))


def class_margins(X: Any, y: npt.ArrayLike, coef: Array, intercept: float) -> tuple[float, float]:
    """The PAUM paper's (2.2): min over class j of j (w . x + b) / ||w||, for j = -1, +1.

    ||w|| is the norm of the weights without the bias. Returns (gamma_-1, gamma_+1).
    """
    labels = np.asarray(y, dtype=np.float64)
    values = labels * (_csr(X) @ coef + intercept) / float(np.linalg.norm(coef))
    return float(values[labels < 0].min()), float(values[labels > 0].min())


def separable_data(
    n: int, d: int, gamma0: float, *, rho: float, seed: int
) -> tuple[Array, npt.NDArray[np.int64], Array]:
    """Points at directional distance >= gamma0 from a random hyperplane (w, beta) through
    the origin of the augmented space [x, rho], labelled by its side.

    Returns X, labels (+1/-1) and the unit vector u of the augmented space, whose margin
    min_k l_k u . [x_k, rho] is >= gamma0 (a known lower bound of gamma*).
    """
    rng = np.random.default_rng(seed)
    u = rng.normal(size=d + 1)
    u[-1] *= 0.3  # a moderate bias
    u /= np.linalg.norm(u)
    X = np.empty((0, d))
    labels = np.empty(0, dtype=np.int64)
    while X.shape[0] < n:
        cand = rng.uniform(-1.0, 1.0, size=(4 * n, d))
        score = cand @ u[:-1] + rho * u[-1]
        keep = np.abs(score) >= gamma0
        X = np.vstack([X, cand[keep]])
        labels = np.concatenate([labels, np.where(score[keep] > 0, 1, -1)])
    return X[:n], labels[:n], u


def phishing() -> tuple[Array, npt.NDArray[np.int64]]:
    """river's bundled Phishing data set as a dense array (keys in sorted order), +1/-1."""
    from river.datasets import Phishing

    rows = list(Phishing())
    keys = sorted({key for x, _ in rows for key in x})
    X = np.array([[float(x.get(key, 0.0)) for key in keys] for x, _ in rows])
    labels = np.array([1 if label else -1 for _, label in rows], dtype=np.int64)
    return X, labels


def paum_algorithm_1(
    X: Array,
    y: npt.NDArray[np.int64],
    *,
    tau_neg: float,
    tau_pos: float,
    eta: float,
    orders: list[npt.NDArray[np.int64]],
) -> tuple[Array, float, int, bool]:
    """The PAUM paper's Algorithm 1, literally: w += eta y x, b += eta y R^2 whenever
    y (w . x + b) <= tau_y. One epoch per entry of ``orders`` (example indices), stopping
    after an epoch without update. Returns (w, b, updates, converged)."""
    radius_sq = float(np.max(np.einsum("ij,ij->i", X, X)))
    w = np.zeros(X.shape[1])
    b = 0.0
    t = 0
    for order in orders:
        updated = False
        for i in order:
            label = float(y[i])
            if label * (float(w @ X[i]) + b) <= (tau_pos if label > 0 else tau_neg):
                w += eta * label * X[i]
                b += eta * label * radius_sq
                t += 1
                updated = True
        if not updated:
            return w, b, t, True
    return w, b, t, False
