"""The Page-Hinkley test of the progressive error: one example at a time it is river's
``drift.PageHinkley(mode="up", alpha=1)``, alarm for alarm; in batches it alarms on a
rise soon after it starts and not on a stationary error."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.drift import PageHinkley


def errors(rng: np.random.Generator, *pieces: tuple[int, float]) -> np.ndarray:
    """0/1 errors: ``count`` examples of error rate ``rate`` for each piece, in turn."""
    return np.concatenate([rng.random(count) < rate for count, rate in pieces]).astype(int)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_example_at_a_time_it_is_rivers_test(seed: int) -> None:
    drift = pytest.importorskip("river.drift")
    rng = np.random.default_rng(seed)
    stream = errors(rng, (8000, 0.15), (3000, 0.4), (8000, 0.1), (3000, 0.5), (5000, 0.05))
    theirs = drift.PageHinkley(mode="up", alpha=1.0, threshold=30.0, delta=0.01)
    ours = PageHinkley(delta=0.01, threshold=30.0)
    alarms_theirs, alarms_ours = [], []
    for i, value in enumerate(stream.tolist()):
        theirs.update(value)
        if theirs.drift_detected:
            alarms_theirs.append(i)
        if ours.update(1, value):
            alarms_ours.append(i)
    assert alarms_ours == alarms_theirs and len(alarms_ours) >= 2


def test_in_batches_a_rise_is_found_soon_and_a_steady_error_never() -> None:
    rng = np.random.default_rng(4)
    detector = PageHinkley()
    for _ in range(1000):  # a million examples at 16% error, in batches of 1,000
        assert not detector.update(1000, int(rng.binomial(1000, 0.16)))
    found_after = None
    for batch in range(100):
        if detector.update(1000, int(rng.binomial(1000, 0.30))):
            found_after = (batch + 1) * 1000
            break
    assert found_after is not None and found_after <= 2000
    assert detector.detections == 1 and detector.rate_after > detector.rate_before
    assert detector.examples == 0 and detector.statistic == 0.0  # it starts again


def test_a_falling_error_is_no_alarm() -> None:
    detector = PageHinkley(threshold=5.0)
    assert not any(detector.update(100, k) for k in (50, 40, 30, 20, 10, 5, 1, 0))


@pytest.mark.parametrize(("delta", "threshold"), [(-1.0, 50.0), (0.0, 0.0), (float("nan"), 1.0)])
def test_a_tolerance_or_level_that_means_nothing_is_refused(delta: float, threshold: float) -> None:
    with pytest.raises(ValueError):
        PageHinkley(delta, threshold)
