"""The weights averaged over the stream, which the binary adapters predict with.

One pass of a perceptron-family rule ends with weights that carry the last few updates'
noise; their average over the stream is close to where replays would take them
[Freund and Schapire 1999, "Large margin classification using the perceptron
algorithm"; Collins 2002]. On Adult, one pass of PDM averaged this way predicts
a9a.test with the log loss of logistic regression, where the last weights are 1.5 times
worse (``benchmarks/bench_river_adapter.py``).

The average is taken in margin units (the weights and the bias over ``||a||^2 / t``,
``LinearLearner.margin_unit``), so that the growth of ``a`` does not weigh the late
weights more than the early ones. It is sampled at counts of examples, never by the
clock: after every example at first, then after every eighth of the count, every
:data:`MAX_INTERVAL` examples at most (more for wide models: a sample costs a pass over
the weights). Each sample counts for the examples since the previous one, so the result
is the average over the stream while it is shorter than the window (the replay buffer)
and an exponential average over about a window's worth of examples after that: a model
on an endless stream follows the window, as the learner does.

>>> average = WeightAverage(window=100)
>>> average.resize(1)
>>> for seen in (1, 2, 3):
...     average.add(seen, np.array([float(seen)]), 0.0, 1.0, width=1)
>>> average.weights.tolist(), average.next_at
([2.0], 4)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from streamlearn.learn.calibration import Platt, fit_platt
from streamlearn.learn.window_calibration import calibration_due, calibration_stride
from streamlearn.types import Batch

if TYPE_CHECKING:
    from streamlearn.learn.state import LearnerState

#: samples are this many examples apart at most (for models of up to 256 * 256 weights)
MAX_INTERVAL = 256
#: a sample's pass over the weights costs about as much as this many examples
WEIGHTS_PER_EXAMPLE = 256


def interval(seen: int, n_weights: int) -> int:
    """Examples from the sample taken at ``seen`` to the next one, for a model of
    ``n_weights`` weights.

    >>> interval(1, 123), interval(100, 123), interval(10_000, 123), interval(10**6, 2**20)
    (1, 12, 256, 4096)
    """
    cap = max(MAX_INTERVAL, n_weights // WEIGHTS_PER_EXAMPLE)
    return max(1, min(cap, seen // 8))


class WeightAverage:
    """Running average of a learner's weights and bias in margin units (see the module
    doc), for a replay buffer of ``window`` examples."""

    def __init__(self, window: int) -> None:
        self.window = max(1, window)
        self.weights: npt.NDArray[np.float64] = np.zeros(0)
        self.bias = 0.0
        #: the count at which the next sample is due, and the count of the last one
        self.next_at = 1
        self.last_at = 0

    def add(
        self,
        seen: int,
        weights: npt.NDArray[np.float64],
        bias: float,
        unit_factor: float,
        width: int = 0,
    ) -> None:
        """Take the sample due at ``seen``: ``weights`` (as long as :attr:`weights` at
        least) and ``bias`` times ``unit_factor`` (0 for a model that made no update).
        ``width``, the features the model has (a count that a restored model has too,
        unlike the room its arrays have), spaces the samples."""
        share = (seen - self.last_at) / min(seen, self.window)
        keep = 1.0 - share
        n = self.weights.shape[0]
        self.weights *= keep
        self.weights += (share * unit_factor) * weights[:n]
        self.bias = keep * self.bias + share * unit_factor * bias
        self.last_at = seen
        self.next_at = seen + interval(seen, width)

    def resize(self, n: int) -> None:
        """Room for ``n`` weights (new ones start at 0); never shorter than its nonzeros."""
        current = self.weights.shape[0]
        if n > current:
            self.weights = np.concatenate([self.weights, np.zeros(n - current)])

    def calibration(
        self, state: LearnerState, fitted: tuple[Platt, int, int] | None
    ) -> tuple[Platt, int, int]:
        """Platt scaling of the averaged decision values, fitted on the window of the
        learner's ``state`` (as ``LinearLearner.window_calibration`` fits the live ones,
        and as often), with the examples and passes it was fitted at: ``fitted`` (the last
        fit, or None) while it is not due again."""
        if fitted is not None:
            _, examples, passes = fitted
            if passes == state.passes and not calibration_due(examples, state.examples_seen):
                return fitted
        sample = state.buffer.examples(stride=calibration_stride(len(state.buffer)))
        return fit_platt(self.scores(sample), sample.labels), state.examples_seen, state.passes

    def scores(self, batch: Batch) -> npt.NDArray[np.float64]:
        """The averaged decision values (margin units) of the rows of ``batch``."""
        rows = np.repeat(np.arange(batch.n_examples), np.diff(batch.indptr))
        weights = self.weights
        indices = np.asarray(batch.indices, dtype=np.int64)
        inside = indices < weights.shape[0]
        products = np.where(inside, batch.values * weights[np.where(inside, indices, 0)], 0.0)
        dots = np.bincount(rows, weights=products, minlength=batch.n_examples)
        return np.asarray(dots + self.bias, dtype=np.float64)

    def state_dict(self) -> dict[str, Any]:
        """Plain values: the nonzero weights (indices and values: a hashed model's are
        few of many), the bias and the counts."""
        nonzero = np.flatnonzero(self.weights)
        return {
            "indices": nonzero.astype(np.int64),
            "values": self.weights[nonzero].copy(),
            "bias": self.bias,
            "next_at": self.next_at,
            "last_at": self.last_at,
        }

    def load(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s values."""
        indices = np.asarray(state["indices"], dtype=np.int64)
        self.weights = np.zeros(int(indices[-1]) + 1 if indices.shape[0] else 0)
        self.weights[indices] = np.asarray(state["values"], dtype=np.float64)
        self.bias = float(state["bias"])
        self.next_at = int(state["next_at"])
        self.last_at = int(state["last_at"])
