"""One example at a time: a learner packed for the per-example kernels.

An online caller (the river adapters) holds one example per call; numba's dispatch on
every argument of every call would cost as much as the learning. :class:`OneExamplePath`
packs the learner's small arrays into the two blocks of :mod:`streamlearn._kernels.single`
(:meth:`~streamlearn.learn.state.LearnerState.pack`), writes the rule into their header
and hands the caller what its hot loop needs: the float block ``F`` with the offset where
the raw example goes, the kernels' argument tuple and the kernels compiled for it. The
weights, buffer and counters stay the learner's own, so the batch paths (replay, a
checkpoint) work on the very same state; :meth:`OneExamplePath.sync` hands the counts the
kernels keep back to the learner.

>>> import struct
>>> from streamlearn.learn import PDM
>>> path = OneExamplePath(PDM(delta=1.0), on_refresh=lambda new_blocks: None)
>>> path.bind(min_weights=3)
>>> struct.pack_into("@4d", path.F, path.raw_offset, 0.0, 2.0, 1.0, 1.0)  # x = {0: 1, 2: 1}
>>> path.kernels.learn_one(2, 1.0, path.state)
0
>>> path.sync()
>>> path.learner.coef_.tolist(), path.learner.examples_presented
([1.0, 0.0, 1.0], 1)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from streamlearn._kernels import single
from streamlearn._kernels.addresses import kernel_ready
from streamlearn.errors import StateError
from streamlearn.learn.base import LinearLearner
from streamlearn.learn.state import PackedBlocks
from streamlearn.types import RowStatus

#: entries of an example the workspaces hold at first (they grow for longer ones)
FIRST_WORKSPACE = 64


class OneExamplePath:
    """``learner`` packed for the per-example kernels (see the module doc); usable once
    :meth:`bind` has run.

    ``on_refresh(new_blocks)`` is called whenever :attr:`F`, :attr:`raw_offset`,
    :attr:`state` or :attr:`kernels` change (a grown arena, workspace or weight array):
    a caller that keeps them in its own attributes takes them again then.
    ``new_blocks`` says that the workspaces were made anew (what a kernel left in them
    is gone).
    """

    def __init__(self, learner: LinearLearner, on_refresh: Callable[[bool], None]) -> None:
        self.learner = learner
        self.on_refresh = on_refresh
        self.work = FIRST_WORKSPACE
        self._blocks: PackedBlocks | None = None

    # -- what the caller's hot loop reads ------------------------------------------------

    F: npt.NDArray[np.float64]
    #: byte offset in ``F`` of the raw example ``[index_0 .. index_(n-1), value_0 ..]``
    raw_offset: int
    #: the kernels' argument tuple ``(w, F, Z, slot_label, arena_idx, arena_val)``
    state: single.State
    #: the hot kernels compiled for :attr:`state`'s types
    kernels: single.HotKernels

    @property
    def status(self) -> RowStatus:
        """Why the last kernel that returned NaN did."""
        return RowStatus(int(self._counts[single.Z_STATUS]))

    @property
    def work_indices(self) -> npt.NDArray[np.int64]:
        """The workspace of the canonical example's indices."""
        return self._packed.work_indices

    # -- binding ---------------------------------------------------------------------------

    def bind(self, min_weights: int = 0) -> None:
        """Point the path at the learner's arrays after the learner itself ran (replay,
        batch learning, a load), with room for at least ``min_weights`` weights."""
        learner = self.learner
        state = learner.state
        blocks = self._blocks
        new_blocks = blocks is None or not state.packed_in(blocks)
        if blocks is None or new_blocks:
            blocks = self._blocks = state.pack(self.work)
        F, Z = blocks.F, blocks.Z
        F[single.F_RULE : single.F_RULE + 2] = learner.rule_values()
        F[single.F_RHO] = learner.rho
        F[single.F_DELTA_SQ] = state.delta_sq
        Z[single.Z_CODE] = learner.rule
        Z[single.Z_MAX_NNZ] = state.buffer.max_nnz
        Z[single.Z_EXAMPLES] = state.examples_seen
        Z[single.Z_N_FEATURES] = state.n_features
        Z[single.Z_CHANGED] = 0
        Z[single.Z_FORGET] = learner.forget == "window"
        Z[single.Z_DEFER_UNTIL] = state.defer_until
        state.reserve_weights(min_weights)
        if learner.window.pending:  # what a state of an older version held back, first
            learner.flush()
        self.refresh(new_blocks)

    @property
    def watching(self) -> bool:
        """Whether the learner's window still watches the examples learned (``delta``
        ``'auto'`` or ``'first'`` before Delta is settled): then :meth:`hold` learns
        them, not the caller's kernels alone."""
        return self.learner.window.room > 0

    def refresh(self, new_blocks: bool = False) -> None:
        """Take the learner's arrays again (after one of them was replaced)."""
        state = self.learner.state
        buf = state.buffer
        blocks = self._packed
        args: single.State = (
            state.weights, blocks.F, blocks.Z, buf.slot_label, buf.arena_idx, buf.arena_val
        )  # fmt: skip
        for array, dtype in zip(args, single.STATE_DTYPES, strict=True):
            if not kernel_ready(array, dtype):
                raise StateError(f"a learner array is {array.dtype}[{array.shape}], not {dtype}")
        self.F = blocks.F
        self.raw_offset = blocks.raw_offset
        self.state = args
        self.kernels = single.hot_kernels()
        self.on_refresh(new_blocks)

    def ensure_weights(self, n: int) -> None:
        """Room for ``n`` weights (a feature name's index before any example has it)."""
        state = self.learner.state
        if n > state.weights.shape[0]:
            state.reserve_weights(n)
            self.refresh()

    def grow_workspace(self, n: int) -> None:
        """Workspaces for examples of ``n`` entries."""
        self.sync()
        work = self.work
        while work < n:
            work *= 2
        self.work = work
        self._blocks = None
        self.bind()

    # -- learning --------------------------------------------------------------------------

    def settle(self, sign: float, status: int) -> None:
        """Finish learning the example in the workspaces after a kernel returned
        ``status`` (negated): grow the arena while it is short; learn an example larger
        than the buffer can ever hold without storing it."""
        while status == -single.NEED_ARENA:
            self.learner.state.buffer.reserve_for(int(self._counts[single.Z_WHERE]) + 1)
            self.refresh()
            status = single.learn_last(sign, self.state)
        if status == -single.UNBUFFERED:
            single.learn_last_unbuffered(sign, self.state)

    def learn_last(self, sign: float) -> None:
        """Learn the example whose canonical form the last kernel call left in the
        workspaces."""
        self.settle(sign, single.learn_last(sign, self.state))

    def hold(self, n: int, sign: float) -> int:
        """Learn the raw example of ``n`` entries while the learner's window watches its
        first examples (``delta='auto'``, ``'first'``): the first gives the provisional
        Delta, and the one that fills the window settles it
        (:func:`~streamlearn.learn.learner_delta.settle_delta`, as the learner's batch path
        does). 0, or the negated status of a refused example (nothing learned)."""
        blocks = self._blocks
        assert self.watching and blocks is not None
        m = single.canonical(n, self.state[0].shape[0], blocks.F, blocks.Z)
        if m < 0:
            return m
        room = self.watch_last()
        self.learn_last(sign)
        if not room:
            self.settle_delta()
        return 0

    def watch_last(self) -> bool:
        """Count the example whose canonical form the last kernel call left in the
        workspaces in the learner's window (its Delta the provisional one when it is the
        first), before it is learned; whether the window has room left after it (else
        :meth:`settle_delta` is due right after its learning)."""
        blocks = self._packed
        learner = self.learner
        window = learner.window
        values = blocks.work_values[: int(blocks.Z[single.Z_LAST])]
        sqnorm = float(values.dot(values))  # a third of what @ costs on a short array
        if learner.state.delta is None:  # the first example
            learner.state.delta = window.delta_of(sqnorm)
            blocks.F[single.F_DELTA_SQ] = learner.state.delta_sq
        window.observe_one(sqnorm)
        return window.room > 0

    def settle_delta(self) -> None:
        """The window is full: Delta settles, the state rescaled (the learner's
        ``flush``), and the path bound again."""
        self.sync()
        self.learner.flush()
        self.bind()

    def sync(self) -> None:
        """Hand the counts the kernels keep to the learner."""
        state = self.learner.state
        Z = self._counts
        state.examples_seen = int(Z[single.Z_EXAMPLES])
        state.n_features = max(state.n_features, int(Z[single.Z_N_FEATURES]))
        if Z[single.Z_CHANGED] or self.learner.evictions_to_forget:
            state.converged = False  # the window changed: its replay is due
            Z[single.Z_CHANGED] = 0

    @property
    def _packed(self) -> PackedBlocks:
        assert self._blocks is not None
        return self._blocks

    @property
    def _counts(self) -> npt.NDArray[np.int64]:
        return self._packed.Z
