"""Rosenblatt's perceptron and the perceptron with margin (Krauth and Mezard).

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0]])
>>> y = np.array([1, -1, 1, -1])
>>> Perceptron(delta=0.0).fit(X, y).predict(X).tolist()
[1, -1, 1, -1]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import RULE_PAM, RULE_PERCEPTRON
from streamlearn.learn.base import LinearLearner, _non_negative
from streamlearn.replay import ActiveSetSchedule


class Perceptron(LinearLearner):
    """Update when a . y <= 0. On separable data: at most R^2 / gamma^2 updates."""

    algorithm = "perceptron"
    rule = RULE_PERCEPTRON

    def _rule_params(self) -> npt.NDArray[np.float64]:
        return np.zeros(2)


class PAM(LinearLearner):
    """Perceptron with margin: update when a . y <= tau (tau >= 0, default 1).

    On separable data its margin is at least gamma * tau / (2 tau + R^2).
    """

    algorithm = "pam"
    rule = RULE_PAM

    def __init__(
        self,
        tau: float = 1.0,
        *,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.tau = _non_negative("tau", tau)
        super().__init__(
            rho=rho, delta=delta, buffer_size=buffer_size, buffer_nnz=buffer_nnz, seed=seed,
            active_sets=active_sets, max_passes=max_passes,
        )  # fmt: skip

    def _rule_params(self) -> npt.NDArray[np.float64]:
        return np.array([self.tau, 0.0])
