"""Kozinec's algorithm with accuracy eps: the closest point of the convex hull to 0.

In the augmented, reflected (and extended) space, a starts as the first example; while
some y_j has ||a|| - (a / ||a||) . y_j >= eps, a <- (1 - c) a + c y_j with
c = clip(a . (a - y_j) / ||a - y_j||^2, 0, 1). Then min_j (a / ||a||) . y_j <= gamma
<= ||a||, so at convergence the margin is within eps of the maximum (eps is absolute,
in the units of the data).

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0]])
>>> Kozinec(eps=0.01, delta=0.0).fit(X, [1, -1, 1, -1]).predict(X).tolist()
[1, -1, 1, -1]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import RULE_KOZINEC
from streamlearn.learn.base import LinearLearner, _positive
from streamlearn.replay import ActiveSetSchedule


class Kozinec(LinearLearner):
    """eps-Kozinec: a is a point of the convex hull, so its margin upper bound is ||a||."""

    algorithm = "kozinec"
    rule = RULE_KOZINEC

    def __init__(
        self,
        eps: float = 0.001,
        *,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.eps = _positive("eps", eps)
        super().__init__(
            rho=rho, delta=delta, buffer_size=buffer_size, buffer_nnz=buffer_nnz, seed=seed,
            active_sets=active_sets, max_passes=max_passes,
        )  # fmt: skip

    def _rule_params(self) -> npt.NDArray[np.float64]:
        return np.array([self.eps, 0.0])
