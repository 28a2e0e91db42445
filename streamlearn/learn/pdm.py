"""The perceptron with dynamic margin (Panagiotakopoulos and Tsampouka), PDM-succ and PFM.

PDM updates when a . y <= (1 - eps) ||a||^2 / t. At convergence its directional margin
is at least (1 - eps) times the maximum, after finitely many updates; eps is its only
parameter.

>>> import numpy as np
>>> X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0]])
>>> model = PDM(eps=0.1, delta=0.0).fit(X, [1, -1, 1, -1])
>>> model.converged, model.summary()["certified_gap"] <= 0.1
(True, True)
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import RULE_PDM, RULE_PFM
from streamlearn.errors import InvalidParameterError
from streamlearn.learn.base import LinearLearner, _finite, _flag, _positive
from streamlearn.replay import ActiveSetSchedule

#: the most successive runs a PDMSucc setting may ask for (the paper's takes 3)
MAX_SUCC_RUNS = 1000


def _eps(value: Any) -> float:
    eps = _finite("eps", value)
    if not 0.0 < eps <= 1.0:
        raise InvalidParameterError(f"eps must be in (0, 1], got {value!r}")
    return eps


class PDM(LinearLearner):
    """PDM(eps): margin >= (1 - eps) of the maximum at convergence.

    Parameters
    ----------
    eps
        Accuracy, in (0, 1]. Default 0.01.
    multiple_updates
        In replay passes, add an example lambda times at once, lambda the least count
        after which it no longer meets the condition (PDM paper, section 4).
    """

    algorithm = "pdm"
    rule = RULE_PDM
    supports_multiple_updates = True

    def __init__(
        self,
        eps: float = 0.01,
        *,
        multiple_updates: bool = True,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.eps = _eps(eps)
        self.multiple_updates = _flag("multiple_updates", multiple_updates)
        super().__init__(
            rho=rho, delta=delta, buffer_size=buffer_size, buffer_nnz=buffer_nnz, seed=seed,
            active_sets=active_sets, max_passes=max_passes,
        )  # fmt: skip

    def _current_eps(self) -> float:
        return self.eps

    def _rule_params(self) -> npt.NDArray[np.float64]:
        return np.array([1.0 - self._current_eps(), 0.0])


class PDMSucc(PDM):
    """PDM in successive runs: eps_0 = ``eps_start``, eps_(n+1) = eps_n / ``succ_eta``.

    Each run continues from where the previous one converged; the last run uses
    ``eps``. New examples are learned with the eps of the current run. Usually fewer
    updates than plain PDM for a similar time.
    """

    algorithm = "pdm-succ"

    def __init__(
        self,
        eps: float = 0.01,
        *,
        succ_eta: float = 8.0,
        eps_start: float = 0.5,
        multiple_updates: bool = True,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.succ_eta = _positive("succ_eta", succ_eta)
        if self.succ_eta <= 1.0:
            raise InvalidParameterError(f"succ_eta must be > 1, got {succ_eta!r}")
        self.eps_start = _eps(eps_start)
        runs = math.log(self.eps_start / _eps(eps)) / math.log(self.succ_eta)
        if runs > MAX_SUCC_RUNS:
            raise InvalidParameterError(
                f"succ_eta={succ_eta!r} is so close to 1 that going from eps_start to eps "
                f"takes {math.ceil(runs)} successive runs (at most {MAX_SUCC_RUNS})"
            )
        super().__init__(
            eps, multiple_updates=multiple_updates, rho=rho, delta=delta,
            buffer_size=buffer_size, buffer_nnz=buffer_nnz, seed=seed, active_sets=active_sets,
            max_passes=max_passes,
        )  # fmt: skip
        self._stage = 0

    def eps_schedule(self) -> list[float]:
        """The eps of each successive run, ending with ``eps``.

        >>> PDMSucc(eps=0.01).eps_schedule()
        [0.5, 0.0625, 0.01]
        """
        return list(_eps_schedule(self.eps_start, self.eps, self.succ_eta))

    def _current_eps(self) -> float:
        return _eps_schedule(self.eps_start, self.eps, self.succ_eta)[self._stage]

    def _run_passes(self, budget: int) -> int:
        last = len(_eps_schedule(self.eps_start, self.eps, self.succ_eta)) - 1
        used = 0
        while True:
            used += super()._run_passes(budget - used)
            if not self._converged or self._stage == last:
                return used
            # converged at an intermediate eps: the next run starts from here
            self._stage += 1
            self._converged = False
            if used >= budget:
                return used

    def summary(self) -> dict[str, Any]:
        """:meth:`LinearLearner.summary` with the current run's eps."""
        out = super().summary()
        out["current_eps"] = self._current_eps()
        return out

    def _extra_state(self) -> dict[str, Any]:
        return {"stage": self._stage}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._stage = int(state["stage"])


@functools.lru_cache(maxsize=64)
def _eps_schedule(eps_start: float, eps: float, succ_eta: float) -> tuple[float, ...]:
    """:meth:`PDMSucc.eps_schedule`, made once per setting: a learner asks for its
    current eps at every batch and every replay."""
    schedule = []
    current = eps_start
    while current > eps:
        schedule.append(current)
        current /= succ_eta
    schedule.append(eps)
    return tuple(schedule)


class PFM(LinearLearner):
    """Perceptron with fixed margin: update when a . y <= beta ||a||.

    ``beta`` must be a guess of (1 - eps) gamma_d: below the maximum margin it converges
    to a margin >= beta; above it, it never converges: replay stops after ``max_passes``
    passes unconverged, or raises :class:`~streamlearn.errors.DivergenceError` when
    multiple updates make the weights grow geometrically until they overflow (when beta
    is also above the examples' norms, every count is 1 and they grow only linearly).
    No default: the right value depends on the data.
    """

    algorithm = "pfm"
    rule = RULE_PFM
    supports_multiple_updates = True

    def __init__(
        self,
        beta: float,
        *,
        multiple_updates: bool = True,
        rho: float = 1.0,
        delta: float | str = "auto",
        buffer_size: int = 100_000,
        buffer_nnz: int = 10_000_000,
        seed: int = 0,
        active_sets: ActiveSetSchedule | None = None,
        max_passes: int = 1000,
    ) -> None:
        self.beta = _positive("beta", beta)
        self.multiple_updates = _flag("multiple_updates", multiple_updates)
        super().__init__(
            rho=rho, delta=delta, buffer_size=buffer_size, buffer_nnz=buffer_nnz, seed=seed,
            active_sets=active_sets, max_passes=max_passes,
        )  # fmt: skip

    def _rule_params(self) -> npt.NDArray[np.float64]:
        return np.array([self.beta, 0.0])

    def _divergence_hint(self) -> str:
        return f"beta={self.beta} is above the maximum margin of the data: lower it"
