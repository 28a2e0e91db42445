"""The three nested active sets of the PDM paper, as a configurable schedule.

>>> ActiveSetSchedule().as_array(first_pass=True).tolist()
[1.0, 1.1, 1.1, 9.0, 12.0, 12.0, 0.0, 0.0]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidParameterError


@dataclass(frozen=True)
class ActiveSetSchedule:
    """How a replay pass orders its presentations.

    A full pass over the buffer collects level 1 (examples with a . y <= c1 times the
    update threshold); a cycle over level 1 collects level 2 (factor ``c2``); a cycle
    over level 2 collects level 3 (factor 1), which is presented up to ``nep3`` times;
    level 2 is cycled up to ``nep2`` times and level 1 up to ``nep1`` times before the
    next full pass. ``c1_first_pass`` replaces ``c1`` during a learner's first replay
    pass. ``enabled=False`` makes every pass a plain full pass.

    ``shrink=True`` makes each cycle over level 3 keep in it only the examples it just
    updated, instead of presenting the whole of level 3 ``nep3`` times. It is an order of
    presentation like the rest: every guarantee still holds, since only a full pass
    declares convergence. Whether it pays depends on the data: on Adult with PDM,
    eps = 0.01 and Delta = 1 it saves a quarter of the presentations, but with Delta =
    0.5, with PDM-succ or on yeast it needs more passes and up to twice the time
    (``benchmarks/bench_schedule.py``), so it is off by default.

    For a negative threshold (PAUM with negative tau) "c times the threshold" reads as
    ``thr + (c - 1) |thr|``, so a level is always looser than the update condition.
    """

    enabled: bool = True
    shrink: bool = False
    c1: float = 2.2
    c1_first_pass: float = 1.1
    c2: float = 1.1
    nep1: int = 9
    nep2: int = 12
    nep3: int = 12

    def __post_init__(self) -> None:
        for name in ("enabled", "shrink"):
            if not isinstance(getattr(self, name), bool | np.bool_):
                raise InvalidParameterError(
                    f"active sets: {name} must be True or False, got {getattr(self, name)!r}"
                )
        for name in ("c1", "c1_first_pass", "c2"):
            value = getattr(self, name)
            if not isinstance(value, int | float | np.integer | np.floating) or not value >= 1.0:
                raise InvalidParameterError(
                    f"active sets: {name} must be >= 1, got {getattr(self, name)}"
                )
        for name in ("nep1", "nep2", "nep3"):
            value = getattr(self, name)
            if not isinstance(value, int | np.integer) or value < 0:
                raise InvalidParameterError(
                    f"active sets: {name} must be a non-negative integer, got {value!r}"
                )

    def as_array(self, first_pass: bool) -> npt.NDArray[np.float64]:
        """The kernel's float64 ``[enabled, c1, c2, nep1, nep2, nep3, shrink,
        continuing]`` for a whole pass (``continuing`` 0, see
        :func:`~streamlearn._kernels.engine.replay_pass`)."""
        c1 = self.c1_first_pass if first_pass else self.c1
        values = [float(self.enabled), c1, self.c2, self.nep1, self.nep2, self.nep3]
        return np.array([*values, float(self.shrink), 0.0], dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for state dictionaries."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ActiveSetSchedule:
        """Inverse of :meth:`to_dict`."""
        return cls(
            enabled=bool(values["enabled"]),
            shrink=bool(values.get("shrink", False)),
            c1=float(values["c1"]),
            c1_first_pass=float(values["c1_first_pass"]),
            c2=float(values["c2"]),
            nep1=int(values["nep1"]),
            nep2=int(values["nep2"]),
            nep3=int(values["nep3"]),
        )
