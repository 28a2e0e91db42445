"""Successive runs of decreasing eps (PDM-succ): what a learner class adds to the engine.

Each run replays to convergence with its eps, then the next run continues from there
with eps divided by ``succ_eta``, down to ``eps``. New examples are learned with the eps
of the current run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from streamlearn.errors import InvalidParameterError
from streamlearn.learn.base import LinearLearner

#: the most successive runs a PDM-succ setting may ask for (the paper's takes 3)
MAX_SUCC_RUNS = 1000


class SuccessiveRuns(LinearLearner):
    """A learner whose ``eps`` goes from ``eps_start`` to ``eps`` in successive runs."""

    eps: float
    eps_start: float
    succ_eta: float

    def _reset_state(self) -> None:
        super()._reset_state()
        self._stage = 0

    def eps_schedule(self) -> list[float]:
        """The eps of each successive run, ending with ``eps``.

        >>> from streamlearn import PDMSucc
        >>> PDMSucc(eps=0.01).eps_schedule()
        [0.5, 0.0625, 0.01]
        """
        return list(eps_schedule(self.eps_start, self.eps, self.succ_eta))

    def current_eps(self) -> float:
        """The eps of the current run."""
        return eps_schedule(self.eps_start, self.eps, self.succ_eta)[self._stage]

    def _run_passes(self, budget: int, interrupt: Callable[[], bool] | None = None) -> int:
        last = len(eps_schedule(self.eps_start, self.eps, self.succ_eta)) - 1
        used = 0
        while True:
            used += super()._run_passes(budget - used, interrupt)
            if self.state.stopped_by == "certified gap":  # certified for the final eps
                self._stage = last
            if not self.state.converged or self._stage == last:
                return used
            # converged at an intermediate eps: the next run starts from here
            self._stage += 1
            self.state.converged = False
            if used >= budget or (interrupt is not None and interrupt()):
                return used

    def summary(self) -> dict[str, Any]:
        """:meth:`LinearLearner.summary` with the current run's eps."""
        out = super().summary()
        out["current_eps"] = self.current_eps()
        return out

    def extra_state(self) -> dict[str, Any]:
        """The current run."""
        return {"stage": self._stage}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Take back the current run."""
        self._stage = int(state["stage"])


def check_runs(params: dict[str, Any]) -> None:
    """Refuse a ``succ_eta`` so close to 1 that going from ``eps_start`` to ``eps`` takes
    more than :data:`MAX_SUCC_RUNS` runs."""
    runs = math.log(params["eps_start"] / params["eps"]) / math.log(params["succ_eta"])
    if runs > MAX_SUCC_RUNS:
        raise InvalidParameterError(
            f"succ_eta={params['succ_eta']!r} is so close to 1 that going from eps_start to "
            f"eps takes {math.ceil(runs)} successive runs (at most {MAX_SUCC_RUNS})"
        )


@functools.lru_cache(maxsize=64)
def eps_schedule(eps_start: float, eps: float, succ_eta: float) -> tuple[float, ...]:
    """The eps of each run, made once per setting: a learner asks for its current eps at
    every batch and every replay."""
    schedule = []
    current = eps_start
    while current > eps:
        schedule.append(current)
        current /= succ_eta
    schedule.append(eps)
    return tuple(schedule)
