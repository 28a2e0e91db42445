"""The daemon's side of the HTTP API's shared state, with readers that give up."""

from __future__ import annotations

import pytest

from streamlearn.http.live import ClosedError, LiveModel, Published


def test_a_reader_that_gave_up_does_not_stop_the_daemon_publishing() -> None:
    """A request cancelled while it waited for a fresher copy (client gone, time-out)
    cancels its future; publishing then raised InvalidStateError in the daemon."""
    live = LiveModel(max_pending=10)
    gone, waiting = live.refresh(), live.refresh()
    gone.cancel()
    live.publish(Published(version=1, predictor=None))
    assert gone.cancelled()
    assert waiting.result(timeout=0).version == 1


def test_closing_fails_the_readers_still_there_and_skips_the_others() -> None:
    live = LiveModel(max_pending=10)
    gone, waiting = live.refresh(), live.refresh()
    gone.cancel()
    live.close()
    with pytest.raises(ClosedError):
        waiting.result(timeout=0)
