"""When a calibration fitted on the window is fitted again, and a binary learner's own.

A learner's probabilities are a Platt sigmoid of its decision values in margin units,
fitted on the window (the buffered examples; an even sample of
:data:`CALIBRATION_EXAMPLES` of them in a larger window) with the current model. It is
fitted again when a replay has run since, or when the examples learned since have
reached the count it was fitted at (:func:`calibration_due`): a function of counts, so
the same calls give the same probabilities. A bank's class calibration and the river
adapters' calibration of averaged weights follow the same schedule.

>>> import numpy as np
>>> from streamlearn import PDM
>>> learner = PDM(delta=1.0).learn(np.eye(4), [1, -1, 1, -1])
>>> learner.calibrator.current(learner) is learner.calibrator.current(learner)
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from streamlearn.learn.calibration import Platt, fit_platt
from streamlearn.learn.state import require_finite

if TYPE_CHECKING:
    from streamlearn.learn.binary_view import BinaryModelView

#: examples learned between two fits of the calibration: as many as at the last one,
#: within these bounds
MIN_CALIBRATION_STEP = 16
MAX_CALIBRATION_STEP = 256
#: the calibration is fitted on this many of the window's examples at most (an even
#: sample): one parameter needs no more, and a refit stays a matter of milliseconds
CALIBRATION_EXAMPLES = 8192


def calibration_due(fitted_at: int, examples: int) -> bool:
    """Whether a calibration fitted after ``fitted_at`` examples is due again now, at
    ``examples``: once as many as then have been learned since (16 at least, 256 at most).

    >>> calibration_due(100, 199), calibration_due(100, 200), calibration_due(1000, 1256)
    (False, True, True)
    """
    step = max(MIN_CALIBRATION_STEP, min(MAX_CALIBRATION_STEP, fitted_at))
    return examples >= fitted_at + step


def calibration_stride(window: int) -> int:
    """Every how many window examples a calibration takes one: an even sample of at most
    :data:`CALIBRATION_EXAMPLES`.

    >>> calibration_stride(100), calibration_stride(8192), calibration_stride(100_000)
    (1, 1, 13)
    """
    return max(1, -(-window // CALIBRATION_EXAMPLES))


class LearnerCalibration:
    """The Platt scaling of a binary learner's margin scores: the one fitted on its window
    (kept with the examples and passes it was fitted at, refitted when due) or one fixed
    from outside (a learning group's)."""

    def __init__(self) -> None:
        #: the window's fit, and the examples and passes it was fitted at
        self.fitted: tuple[Platt, int, int] | None = None
        #: a calibration set from outside, used instead of the window's
        self.fixed: Platt | None = None

    def current(self, learner: BinaryModelView) -> Platt:
        """The fixed calibration if one is set, else :meth:`of_window`."""
        if self.fixed is not None:
            return self.fixed
        return self.of_window(learner)

    def of_window(self, learner: BinaryModelView) -> Platt:
        """The fit on ``learner``'s window with its current model, fitted again when due
        (see the module doc)."""
        state = learner.state
        fitted = self.fitted
        if fitted is not None:
            platt, examples, passes = fitted
            if passes == state.passes and not calibration_due(examples, state.examples_seen):
                return platt
        buffer = state.buffer
        sample = buffer.examples(stride=calibration_stride(len(buffer)))
        z = learner.margin_scores((sample.indptr, sample.indices, sample.values))
        platt = fit_platt(z, sample.labels)
        self.fitted = (platt, state.examples_seen, state.passes)
        return platt

    def state(self) -> list[float] | None:
        """The window's fit as ``[slope, examples, passes]``, or None."""
        if self.fitted is None:
            return None
        platt, examples, passes = self.fitted
        return [platt.slope, float(examples), float(passes)]

    def load(self, saved: Any) -> None:
        """Take back :meth:`state` (None: no fit yet, as in states of 0.1.0's betas)."""
        self.fitted = None
        if saved is not None:
            slope, examples, passes = (float(v) for v in saved)
            require_finite("calibration", np.array([slope]))
            self.fitted = (Platt(slope), int(examples), int(passes))
