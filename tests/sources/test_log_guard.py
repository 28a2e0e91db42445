"""Which logs went back behind what was learned: the end offsets a broker gives, compared
only with ends it gave before."""

from __future__ import annotations

from streamlearn.sources.log_guard import LogGuard, behind


def test_a_log_that_grows_or_a_lagging_end_raises_nothing() -> None:
    guard = LogGuard(confirm=5.0)
    for now, end in enumerate([10, 10, 25, 40]):
        assert guard.observe_ends({0: end}, {0: end}, now=float(now)) == set()
    # a broker whose end lags its last batch (Tansu: the last batch's base offset + 1):
    # the position is past the end, but the end never went back
    assert guard.observe_ends({0: 40}, {0: 49}, now=10.0) == set()
    assert guard.observe_ends({0: 40}, {0: 49}, now=100.0) == set()


def test_a_new_leaders_end_lagging_for_a_moment_raises_nothing() -> None:
    guard = LogGuard(confirm=5.0)
    guard.observe_ends({0: 100}, {0: 100}, now=0.0)
    assert guard.observe_ends({0: 97}, {0: 100}, now=1.0) == set()
    assert guard.observe_ends({0: 101}, {0: 100}, now=3.0) == set()  # caught up
    assert guard.observe_ends({0: 97}, {0: 100}, now=7.0) == set()  # the clock starts again
    assert guard.observe_ends({0: 97}, {0: 100}, now=12.5) == {0}


def test_a_log_behind_a_checkpoints_end_and_position_is_found_after_a_restart() -> None:
    guard = LogGuard(confirm=5.0)
    guard.expect({0: 6000, 1: 300})
    assert guard.observe_ends({0: 20, 1: 300}, {0: 6000, 1: 300}, now=0.0) == set()
    assert guard.observe_ends({0: 20, 1: 300}, {0: 6000, 1: 300}, now=5.0) == {0}
    guard.restart(0, 20)  # read again from its start
    assert guard.observe_ends({0: 20, 1: 300}, {0: 0, 1: 300}, now=6.0) == set()
    assert guard.ends == {0: 20, 1: 300}


def test_a_log_behind_its_old_end_but_not_behind_the_position_is_not_lost() -> None:
    """The position is at or before the new end: nothing learned is missing from it."""
    guard = LogGuard(confirm=0.0)
    guard.expect({0: 500})
    assert guard.observe_ends({0: 400}, {0: 350}, now=0.0) == set()


def test_records_from_behind_the_position() -> None:
    assert behind(0, 5000) and not behind(5000, 5000) and not behind(0, None)
