"""``delta='auto'`` and ``delta='first'``: Delta from the first examples, learned at once.

A learner (or a bank) learns from its first example with a provisional Delta = R/10, R
= ||[x, rho]|| of that example. With ``'first'`` that is its Delta. With ``'auto'``,
once its first min(1000, buffer_size) examples have arrived, Delta is fixed again from
all of them (R their largest ||[x, rho]||) and the state is rescaled to it exactly: the
weights, beta and the slack counts stay as they are (the combination of the same
updates), and ||a||^2 = ||w||^2 + beta^2 + Delta^2 sum alpha_k^2 is computed again. The
window only counts: nothing waits in it (older versions held the examples until Delta
was fixed; a state of theirs is still read, and what it holds is learned first). A
replay before the window is full takes Delta from the examples so far the same way,
leaving the window open.

>>> import numpy as np
>>> from streamlearn.types import Batch
>>> window = AutoDeltaWindow(size=3, rho=1.0, concatenate=Batch.concatenate)
>>> rows = Batch.from_csr([0, 1, 2], [0, 0], [3.0, 1.0], [1, -1])
>>> window.provisional(rows), window.observe(rows), window.room
(0.31622776601683794, 2, 1)
>>> window.observe(Batch.from_csr([0, 1], [0], [7.0], [1])), window.room, window.delta()
(1, 0, 0.7071067811865476)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import row_sqnorms
from streamlearn.types import features_spanned

#: examples that fix Delta when ``delta='auto'`` (capped by the buffer size)
AUTO_DELTA_WINDOW = 1000


class Rows(Protocol):
    """What the window holds: examples as CSR rows (a :class:`~streamlearn.types.Batch`,
    or rows with label sets)."""

    @property
    def indptr(self) -> npt.NDArray[np.int64]: ...
    @property
    def indices(self) -> npt.NDArray[np.int32]: ...
    @property
    def values(self) -> npt.NDArray[np.float64]: ...
    @property
    def n_examples(self) -> int: ...
    def slice(self, start: int, stop: int) -> Any: ...


R = TypeVar("R", bound=Rows)


class AutoDeltaWindow(Generic[R]):
    """The examples that fix Delta, held until there are ``size`` of them.

    ``concatenate`` joins held rows into one (``Batch.concatenate``, or the label-set
    rows' own); it copies, so callers may reuse the arrays they hand in.
    """

    def __init__(self, size: int, rho: float, concatenate: Callable[[list[R]], R]) -> None:
        self.size = size
        self.rho = rho
        self.concatenate = concatenate
        #: examples that arrived (at most ``size`` count)
        self.seen = 0
        #: the largest ||x||^2 among them
        self.max_sqnorm = 0.0
        #: the rows held, in arrival order
        self.pending: list[R] = []

    @classmethod
    def for_buffer(
        cls, buffer_size: int, rho: float, concatenate: Callable[[list[R]], R], delta: Any
    ) -> AutoDeltaWindow[R]:
        """The window of a learner with parameter ``delta`` whose buffer holds
        ``buffer_size`` examples: one example for ``'first'``, none for a number (its
        :attr:`room` is then 0: nothing to watch)."""
        if delta == "first":
            size = 1
        elif delta == "auto":
            size = min(AUTO_DELTA_WINDOW, buffer_size)
        else:
            size = 0
        return cls(size, rho, concatenate)

    @property
    def room(self) -> int:
        """Examples still to arrive before Delta is fixed (0 once it is, or when Delta is
        a number): while there is room, the learner watches the examples it learns."""
        return self.size - self.seen

    @property
    def held_examples(self) -> int:
        """Examples held now."""
        return sum(rows.n_examples for rows in self.pending)

    def features_spanned(self) -> int:
        """One more than the largest feature index among the held examples."""
        return max([0, *(features_spanned(rows.indices) for rows in self.pending)])

    def provisional(self, rows: R) -> float:
        """The Delta a learner starts with: R/10 from the first example of ``rows``."""
        first = rows.slice(0, 1)
        return self.delta_of(float(row_sqnorms(first.indptr, first.values)[0]))

    def delta_of(self, sqnorm: float) -> float:
        """R/10 for an example of squared norm ``sqnorm`` (R = ||[x, rho]||)."""
        return math.sqrt(sqnorm + self.rho * self.rho) / 10.0

    def observe_one(self, sqnorm: float) -> None:
        """:meth:`observe` of one example of squared norm ``sqnorm``, with room for it."""
        self.max_sqnorm = max(self.max_sqnorm, sqnorm)
        self.seen += 1

    def observe(self, rows: R) -> int:
        """Count the first of ``rows`` that fall in the window (their largest squared
        norm kept); how many did (the room there was)."""
        take = min(self.room, rows.n_examples)
        if take > 0:
            head = rows.slice(0, take)
            sqnorms = row_sqnorms(head.indptr, head.values)
            self.max_sqnorm = max(self.max_sqnorm, float(sqnorms.max()))
            self.seen += take
        return take

    def close(self) -> None:
        """Settle with the examples that came (the end of the stream)."""
        self.seen = max(self.seen, self.size)

    def delta(self) -> float:
        """Delta = R/10 from the examples that arrived, R their largest ||[x, rho]||."""
        return self.delta_of(self.max_sqnorm)

    def release(self) -> tuple[R, float]:
        """Every example held, in order, and Delta = R/10 from those that arrived."""
        held = self.concatenate(self.pending)
        self.pending = []
        return held, self.delta()

    def state_dict(self) -> dict[str, Any]:
        """The counts; the owner stores the held rows (their format is its own)."""
        return {"window_seen": self.seen, "window_max_sqnorm": self.max_sqnorm}

    def load(self, state: dict[str, Any], held: R) -> None:
        """Take back :meth:`state_dict`'s counts and the held rows."""
        self.seen = int(state["window_seen"])
        self.max_sqnorm = float(state["window_max_sqnorm"])
        self.pending = [held] if held.n_examples else []
