"""Drift of the progressive error: the Page-Hinkley test (Page 1954), fed the mistakes
of each batch learned.

The daemon judges every example just before it learns it (progressive validation); a
stream whose concept changes shows it first as a rise of that error. The test keeps the
running mean of the error and the cumulative sum of each example's error above the mean
less a tolerance ``delta``; it alarms when the sum rises more than ``threshold`` above
its lowest point (after ``min_examples``), and then starts again. It is river's
``drift.PageHinkley(mode="up", alpha=1)``, one example at a time; a batch of ``n``
examples with ``k`` mistakes counts as ``n`` examples of error ``k / n`` each, so the
daemon does not need each example's error, and a batch of one is river's update exactly.

>>> detector = PageHinkley(threshold=20.0)
>>> [detector.update(1000, 100) for _ in range(5)]       # 10% error: stationary
[False, False, False, False, False]
>>> detector.update(500, 250)                            # 50%: the concept changed
True
>>> detector.examples, detector.detections               # it starts again
(0, 1)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import numpy as np

log = logging.getLogger("streamlearn.daemon")

#: the tolerance, alarm level and examples before any alarm: river's, but a tolerance of
#: 0.01 (river: 0.005), which on Adult's progressive error raises fewer false alarms for
#: a somewhat longer delay (benchmarks/bench_drift.py measures both)
DEFAULT_DELTA = 0.01
DEFAULT_THRESHOLD = 50.0
DEFAULT_MIN_EXAMPLES = 30


class PageHinkley:
    """The one-sided (rising error) Page-Hinkley test over batches' error counts (see
    the module doc)."""

    def __init__(
        self,
        delta: float = DEFAULT_DELTA,
        threshold: float = DEFAULT_THRESHOLD,
        min_examples: int = DEFAULT_MIN_EXAMPLES,
    ) -> None:
        if not (math.isfinite(delta) and delta >= 0.0):
            raise ValueError(f"delta must be a number >= 0, got {delta!r}")
        if not (math.isfinite(threshold) and threshold > 0.0):
            raise ValueError(f"threshold must be a number > 0, got {threshold!r}")
        self.delta = delta
        self.threshold = threshold
        self.min_examples = min_examples
        #: alarms so far
        self.detections = 0
        self._start()

    def _start(self) -> None:
        #: examples, and the sum of their errors, since the last alarm
        self.examples = 0
        self.errors = 0.0
        self.sum = 0.0
        self.lowest = math.inf
        #: the error rate over the examples before the last alarm, how many they were,
        #: and the rate of the batch that raised it (what the alarm reports)
        self.rate_before = math.nan
        self.examples_before = 0
        self.rate_after = math.nan

    @property
    def statistic(self) -> float:
        """How far the cumulative sum stands above its lowest point (alarm above the
        threshold)."""
        return self.sum - self.lowest if self.examples else 0.0

    def update(self, examples: int, mistakes: int) -> bool:
        """Take a batch of ``examples`` judged examples with ``mistakes`` among them;
        whether the error rose (an alarm: the test then starts again)."""
        if examples <= 0:
            return False
        rate = mistakes / examples
        # example i of the batch (1-based) brings the mean to (errors + i rate) / (n0 + i)
        steps = np.arange(1, examples + 1, dtype=np.float64)
        means = (self.errors + steps * rate) / (self.examples + steps)
        sums = self.sum + np.cumsum(rate - means - self.delta)
        lowest = np.minimum.accumulate(np.minimum(sums, self.lowest))
        tested = sums - lowest
        counted = self.examples + steps >= self.min_examples
        alarms = np.flatnonzero(counted & (tested > self.threshold))
        if alarms.size:
            before, count = (self.errors / self.examples if self.examples else math.nan,
                             self.examples)  # fmt: skip
            self.detections += 1
            self._start()
            self.rate_before, self.examples_before, self.rate_after = before, count, rate
            return True
        self.examples += examples
        self.errors += mistakes
        self.sum = float(sums[-1])
        self.lowest = float(lowest[-1])
        return False


class DriftWatch:
    """A daemon's :class:`PageHinkley` test over the progressive error of what it learns:
    each alarm logged with the example it came at; ``report`` told the statistic after
    each batch and whether it alarmed (the metrics)."""

    def __init__(self, test: PageHinkley, report: Callable[[float, bool], None]) -> None:
        self.test = test
        self.report = report

    def watch(self, pieces: list[tuple[int, int]], end: int) -> None:
        """Test the examples just judged, ``pieces`` of (examples, mistakes) in stream
        order, the last ending at stream example ``end``."""
        test = self.test
        detected = False
        at = end - sum(judged for judged, _ in pieces)
        for judged, wrong in pieces:
            at += judged
            if test.update(judged, wrong):
                detected = True
                log.warning(
                    "drift at example %d: the progressive error rose to %.1f%% (from "
                    "%.1f%% over the %d examples before; Page-Hinkley alarm %d, threshold "
                    "%g)", at, 100 * test.rate_after, 100 * test.rate_before,
                    test.examples_before, test.detections, test.threshold,
                )  # fmt: skip
        self.report(test.statistic, detected)
