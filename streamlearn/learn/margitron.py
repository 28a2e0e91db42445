"""The margitrons (Panagiotakopoulos and Tsampouka): perceptrons with a growing margin.

t-margitron updates when a . y <= b t^(1 - zeta), a-margitron when
a . y <= b ||a||^(1 - zeta); zeta = 1 gives the perceptron with margin PAM(b), and as
zeta tends to 0 the guaranteed fraction of the maximum margin tends to 1.

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0]])
>>> TMargitron(b=1.0, zeta=0.5, delta=0.0).fit(X, [1, -1, 1, -1]).predict(X).tolist()
[1, -1, 1, -1]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import RULE_AMARGITRON, RULE_TMARGITRON
from streamlearn.errors import InvalidParameterError
from streamlearn.learn.base import LinearLearner, _finite, _positive
from streamlearn.replay import ActiveSetSchedule


class _Margitron(LinearLearner):
    def __init__(
        self,
        b: float = 1.0,
        zeta: float = 0.5,
        *,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.b = _positive("b", b)
        self.zeta = _finite("zeta", zeta)
        if not 0.0 < self.zeta < 2.0:
            raise InvalidParameterError(f"zeta must be in (0, 2), got {zeta!r}")
        super().__init__(
            rho=rho, delta=delta, buffer_size=buffer_size, buffer_nnz=buffer_nnz, seed=seed,
            active_sets=active_sets, max_passes=max_passes,
        )  # fmt: skip

    def _rule_params(self) -> npt.NDArray[np.float64]:
        return np.array([self.b, 1.0 - self.zeta])


class TMargitron(_Margitron):
    """Update when a . y <= b t^(1 - zeta) (threshold 0 before the first update)."""

    algorithm = "t-margitron"
    rule = RULE_TMARGITRON


class AMargitron(_Margitron):
    """Update when a . y <= b ||a||^(1 - zeta) (threshold 0 before the first update)."""

    algorithm = "a-margitron"
    rule = RULE_AMARGITRON
