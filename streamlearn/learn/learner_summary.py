"""A binary learner's report: its counts and the margin certificate of its solution on
the buffer (:meth:`LinearLearner.summary <streamlearn.learn.base.LinearLearner.summary>`),
and what ``inspect`` shows of it.

>>> import numpy as np
>>> from streamlearn import PDM
>>> figures = learner_summary(PDM(delta=0.0).fit(np.eye(2), [1, -1]))
>>> figures["converged"], round(figures["certified_gap"], 9), figures["buffer_examples"]
(True, 0.0, 2)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from streamlearn._kernels.engine import STAT_LEVEL1
from streamlearn.learn.certificate import certificate
from streamlearn.learn.params import plain_params

if TYPE_CHECKING:
    from streamlearn.learn.base import LinearLearner
    from streamlearn.learn.binary_view import BinaryModelView

#: a certified gap below 0 by less than this is rounding (-2.2e-16 was printed), shown as 0;
#: a larger negative one would say the bound is wrong, and stays visible
ROUNDING_GAP = 1e-12


def learner_summary(learner: BinaryModelView) -> dict[str, Any]:
    """Counts and the margin certificate of ``learner``'s solution on its buffer (see
    :meth:`LinearLearner.summary <streamlearn.learn.base.LinearLearner.summary>`)."""
    state = learner.state
    weights = state.weights[: state.n_features]
    stats = state.stats
    found = certificate(state, learner.rho)
    negative, positive = found.class_margins()
    with_counts = min(negative, positive) if len(state.buffer) else math.nan
    achieved = found.achieved if len(state.buffer) else math.nan
    bound = found.upper_bound
    gap = 1.0 - achieved / bound if math.isfinite(bound) and bound > 0 else math.nan
    if -ROUNDING_GAP < gap < 0.0:  # rounding, as when the margin meets its bound
        gap = 0.0
    return {
        "algorithm": learner.algorithm,
        "examples": state.examples_seen,
        "updates": learner.updates,
        "update_events": int(stats[0]),
        "presentations": int(stats[1]),
        "mini_epochs": int(stats[2]),
        "stream_mistakes": int(stats[3]),
        "active_set_examples": {level: int(stats[STAT_LEVEL1 + level - 1]) for level in (1, 2, 3)},
        "passes": state.passes,
        "converged": state.converged,
        "stopped_by": state.stopped_by if state.converged else None,
        "margin_achieved": achieved,
        "margin_with_slack_counts": with_counts,
        "margin_negative": negative,
        "margin_positive": positive,
        "margin_upper_bound": bound,
        "certified_gap": gap,
        # of coef_, without making it (a copy as large as the largest feature index)
        "weight_norm": math.sqrt(float(weights @ weights)) * abs(learner.output_scale),
        "delta": state.delta,
        "n_features": state.n_features,
        "buffer_examples": len(state.buffer),
        "buffer_capacity": state.buffer.max_examples,
        "buffer_nnz": state.buffer.nnz,
        "buffer_evicted": state.buffer.evicted,
        "evictions_to_forget": learner.evictions_to_forget,
        "forget": learner.forget,
        "pending_examples": learner.window.held_examples,
    }


def describe_learner(learner: LinearLearner) -> dict[str, Any]:
    """What ``inspect`` shows: algorithm, parameters, Delta, intercept and the summary."""
    summary = learner.summary()
    return {
        "algorithm": learner.algorithm,
        "params": plain_params(learner.get_params()),
        "delta": learner.delta_,
        "intercept": learner.intercept_,
        **{k: v for k, v in summary.items() if k not in ("algorithm", "delta")},
    }
