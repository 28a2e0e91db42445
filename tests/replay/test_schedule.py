"""The count-based replay schedules: the pieces a batch is cut into and the replays after
them follow the due points, however the stream is chunked."""

from __future__ import annotations

import itertools
import random

import pytest

from streamlearn.errors import InvalidParameterError
from streamlearn.replay import ReplaySchedule

SCHEDULES = {
    "fixed": ReplaySchedule(every=7, passes=2),
    "growing": ReplaySchedule.growing(window=50, every=3, growth=4),
}


def _due_points(schedule: ReplaySchedule, up_to: int) -> set[int]:
    points, point = set(), 0
    while point < up_to:
        point = schedule.next_after(point)
        points.add(point)
    return points


@pytest.mark.parametrize("name", SCHEDULES)
def test_any_chunking_replays_exactly_at_the_due_points(name: str) -> None:
    schedule = SCHEDULES[name]
    due = _due_points(schedule, 1000)
    rng = random.Random(0)
    position, replayed = 0, set()
    while position < 600:
        n_new = rng.randrange(1, 60)
        pieces = schedule.split(position, n_new)
        assert sum(pieces) == n_new and all(pieces)
        for piece in pieces:
            passes = schedule.replays_after(position, piece)
            position += piece
            if passes:
                assert passes == schedule.passes
                replayed.add(position)
    assert replayed == {point for point in due if point <= position}


def test_growing_gaps_grow_by_half_then_stay_at_half_the_window() -> None:
    schedule = ReplaySchedule.growing(window=100_000)
    points = [schedule.next_after(0)]
    while points[-1] < 400_000:
        points.append(schedule.next_after(points[-1]))
    gaps = [b - a for a, b in itertools.pairwise(points)]
    assert points[:6] == [1000, 2000, 3000, 4500, 6750, 10125]
    assert all(gap == max(1000, min(a, 100_000) // 2) for a, gap in zip(points, gaps, strict=False))
    assert gaps[-1] == 50_000
    # an endless stream: the next point far out, without walking every gap
    far = schedule.next_after(10**12)
    assert far > 10**12 and (far - 10**12) <= 50_000 and (far - points[-1]) % 50_000 == 0


def test_a_growing_schedule_needs_a_window() -> None:
    with pytest.raises(InvalidParameterError):
        ReplaySchedule(every=1000, growth=4)
