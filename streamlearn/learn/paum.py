"""The perceptron with uneven margins (Li, Zaragoza, Herbrich, Shawe-Taylor, Kandola 2002).

Update when l (w . x + b) <= tau_l: positives and negatives get their own margin, which
suits rare classes ranked by score. The paper's form adds ``lr * l * x`` to w and
``lr * l * R^2`` to b: that is ``rho = R`` here, with weights scaled by ``lr``.

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0]])
>>> model = PAUM(tau_neg=-1.0, tau_pos=1.0, delta=0.0).fit(X, [1, -1, 1, -1])
>>> model.predict(X).tolist()
[1, -1, 1, -1]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import RULE_PAUM
from streamlearn.learn.base import LinearLearner, _finite, _positive
from streamlearn.replay import ActiveSetSchedule


class PAUM(LinearLearner):
    """PAUM(tau_neg, tau_pos) with learning rate ``lr``.

    Parameters
    ----------
    tau_neg, tau_pos
        Margin demanded of negative and positive examples (any real number; the
        theorem needs them >= 0, small negative values tolerate a few errors). The
        defaults, PAUM(-1, 1), came near the SVM in the paper with sparse solutions;
        PAUM(1, 50) was best on Reuters.
    lr
        Learning rate eta > 0; it trades convergence speed against guaranteed margins.
    """

    algorithm = "paum"
    rule = RULE_PAUM

    def __init__(
        self,
        tau_neg: float = -1.0,
        tau_pos: float = 1.0,
        lr: float = 1.0,
        *,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.tau_neg = _finite("tau_neg", tau_neg)
        self.tau_pos = _finite("tau_pos", tau_pos)
        self.lr = _positive("lr", lr)
        super().__init__(
            rho=rho, delta=delta, buffer_size=buffer_size, buffer_nnz=buffer_nnz, seed=seed,
            active_sets=active_sets, max_passes=max_passes,
        )  # fmt: skip

    def _rule_params(self) -> npt.NDArray[np.float64]:
        # the engine runs unscaled weights a/lr, so thresholds are divided by lr
        return np.array([self.tau_neg / self.lr, self.tau_pos / self.lr])

    @property
    def _output_scale(self) -> float:
        return self.lr * float(self._scalars[3])
