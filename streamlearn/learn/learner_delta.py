"""How a binary learner's Delta settles (``delta='auto'`` and ``'first'``): from the
window's examples (:mod:`streamlearn.learn.window`), from a learning group's agreement,
or from what an older version's state held back; the state rescaled to it exactly.

>>> import numpy as np
>>> from streamlearn import PDM
>>> learner = PDM(delta="first").learn(np.array([[1.0, 0.0]]), np.array([1]))
>>> learner.state.delta, agree_delta(learner, 0.5), learner.state.delta
(0.1414213562373095, True, 0.5)
>>> learner.learn(np.array([[9.0, 0.0]]), np.array([-1])).state.delta
0.5
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamlearn.learn.params import AUTO_DELTAS
from streamlearn.learn.stream_presentation import present_stream

if TYPE_CHECKING:
    from streamlearn.learn.base import LinearLearner


def release_held(learner: LinearLearner) -> None:
    """Learn what the state of an older version held back while ``delta='auto'`` waited
    for its window, Delta fixed from it as that version did."""
    if learner.window.pending:
        batch, learner.state.delta = learner.window.release()
        learner.window.close()
        present_stream(learner, batch)


def settle_delta(learner: LinearLearner, final: bool = True) -> None:
    """With ``delta='auto'``: Delta = R/10 over the window's examples so far, and the
    state rescaled to it exactly. ``final`` once the window is full or the stream ends:
    the window closes; else (as a replay starts) it stays open and Delta may move again."""
    window = learner.window
    if learner.delta != "auto" or window.seen == 0:
        return
    if final:
        window.close()
    if rescale_to(learner, max(window.delta(), learner.delta_floor)):
        learner.state.converged = False


def agree_delta(learner: LinearLearner, floor: float) -> bool:
    """With ``delta='auto'`` or ``'first'``: Delta at least ``floor`` from now on (a
    learning group's members each settle Delta from their own first examples and agree on
    the largest), the state rescaled to it exactly when that raises it. Returns whether
    Delta changed."""
    if learner.delta not in AUTO_DELTAS or not floor > learner.delta_floor:
        return False
    learner.delta_floor = float(floor)
    if learner.state.delta is not None and learner.state.delta >= floor:
        return False
    rescale_to(learner, float(floor))
    learner.state.converged = False
    return True


def rescale_to(learner: LinearLearner, delta: float) -> bool:
    """Delta = ``delta``, ||a||^2 computed again under it; whether it changed."""
    state = learner.state
    if delta == state.delta:
        return False
    state.delta = delta
    state.recompute_sqnorm()
    return True
