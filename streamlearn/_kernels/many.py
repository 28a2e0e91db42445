"""Many binary learners' stream learning in one call: a poll's rows, grouped by model.

Each model's arrays stay where they are; the caller hands in views of the process's
memory that span them all (``F`` float64, ``Z`` int64, ``I`` int32 and ``B`` int8, each
starting at the same address) and, per model, where each array starts in those views
(``at``, in elements of the view's type), in the order of :data:`ARRAYS`, with the
weights' length, the slots and the arena cells (``sizes``). The caller keeps every one
of those arrays alive during the call. Model ``m`` learns rows ``runs[m, 0]:runs[m, 1]``
exactly as :func:`~streamlearn._kernels.engine.learn_stream` learns them (the same
inlined code, the rule given by ``codes``, ``params`` and ``forgets``): the buffer has
room for them without evicting by count or by arena growth, and none has more nonzeros
than the buffer can ever hold (the caller makes sure of both).
"""

from __future__ import annotations

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.engine import (
    BETA,
    N_STATS,
    SCALE,
    SQNORM,
    STAT_STREAM_MISTAKES,
    STAT_UPDATE_EVENTS,
    UPDATES,
    store_and_present,
)

#: each model's arrays, in the order of ``at``'s columns: (name, view)
ARRAYS = (
    ("weights", "F"),
    ("scalars", "F"),
    ("stats", "Z"),
    ("slot_start", "Z"),
    ("slot_len", "Z"),
    ("slot_label", "B"),
    ("slot_alpha", "F"),
    ("slot_sqnorm", "F"),
    ("arena_idx", "I"),
    ("arena_val", "F"),
    ("ring", "Z"),
)
#: ``codes`` columns: the rule's code, whether evicted examples leave the model, and
#: the evictions below which they stay (``LearnerState.defer_until``)
CODE, FORGET, DEFER_UNTIL = 0, 1, 2
#: ``params`` columns: the rule's two parameters, rho and Delta^2
PARAM0, PARAM1, RHO, DELTA_SQ = 0, 1, 2, 3
#: ``totals``: the update events and stream mistakes the call added
TOTAL_EVENTS, TOTAL_MISTAKES = 0, 1
#: int64 counters of a ring (:mod:`streamlearn._kernels.ring`)
_RING_LEN = 5


@kernel(releases_gil=True)
def learn_models(
    F: np.ndarray,
    Z: np.ndarray,
    I: np.ndarray,  # noqa: E741 - the int32 view, beside F, Z and B
    B: np.ndarray,
    at: np.ndarray,
    sizes: np.ndarray,
    codes: np.ndarray,
    params: np.ndarray,
    runs: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    labels: np.ndarray,
    x_sqnorms: np.ndarray,
    changed: np.ndarray,
    totals: np.ndarray,
) -> None:
    """Learn each model's rows (see the module doc); ``changed[m]`` says whether model
    ``m``'s (t, ||a||^2) changed, ``totals`` adds the update events and mistakes."""
    multi = bool(False)  # noqa: UP018 - a plain bool, not a literal (see replay_pass)
    for m in range(at.shape[0]):
        n_w, n_slots, n_cells = sizes[m, 0], sizes[m, 1], sizes[m, 2]
        w = F[at[m, 0] : at[m, 0] + n_w]
        scalars = F[at[m, 1] : at[m, 1] + 4]
        stats = Z[at[m, 2] : at[m, 2] + N_STATS]
        buffer = (
            Z[at[m, 3] : at[m, 3] + n_slots],
            Z[at[m, 4] : at[m, 4] + n_slots],
            B[at[m, 5] : at[m, 5] + n_slots],
            F[at[m, 6] : at[m, 6] + n_slots],
            F[at[m, 7] : at[m, 7] + n_slots],
            I[at[m, 8] : at[m, 8] + n_cells],
            F[at[m, 9] : at[m, 9] + n_cells],
        )
        ring = Z[at[m, 10] : at[m, 10] + _RING_LEN]
        lo, hi = runs[m, 0], runs[m, 1]
        unit = True
        for j in range(indptr[lo], indptr[hi]):
            if values[j] != 1.0:
                unit = False
                break
        rule = (codes[m, CODE], params[m, :2], params[m, RHO], params[m, DELTA_SQ], multi, unit)
        forget = codes[m, FORGET] != 0
        defer_until = codes[m, DEFER_UNTIL]
        events, mistakes = stats[STAT_UPDATE_EVENTS], stats[STAT_STREAM_MISTAKES]
        state = (scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE])
        before = (state[2], state[1])
        for i in range(lo, hi):
            state = store_and_present(
                i, indptr, indices, values, labels, x_sqnorms, buffer, ring, w, state, scalars,
                rule, stats, forget, defer_until,
            )  # fmt: skip
        scalars[BETA], scalars[SQNORM], scalars[UPDATES], scalars[SCALE] = state
        changed[m] = scalars[UPDATES] != before[0] or scalars[SQNORM] != before[1]
        totals[TOTAL_EVENTS] += stats[STAT_UPDATE_EVENTS] - events
        totals[TOTAL_MISTAKES] += stats[STAT_STREAM_MISTAKES] - mistakes
