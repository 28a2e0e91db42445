"""What the daemon logs of rejected lines from a partitioned source: each line by its
message's offset and partition and its line there, within the log's rate; the dead
letters stay one per message."""

from __future__ import annotations

import logging

import pytest
from memory_source import ListSink, MemorySource
from test_daemon import SETTINGS, decode

from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon
from streamlearn.sources.rejected import LOG_BURST


def test_each_rejected_line_is_logged_in_the_terms_of_its_partition(
    caplog: pytest.LogCaptureFixture,
) -> None:
    values = [b"+1 1:1\n+1 1:x\n-1 2:1\n+1 2:y\n", b"-1 1:z\n+1 3:1\n"]
    values += [b"+1 1:1\n" + b"-1 1:bad\n" * 12]  # more than the log takes in a minute
    dead = ListSink()
    run = Daemon(
        LearnerSpec.from_options("pdm", {"eps": 0.05}), MemorySource({3: values}),
        decode=decode, settings=SETTINGS, dead_letters=dead,
    )  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="streamlearn.daemon"):
        run.run()
    said = [r.getMessage() for r in caplog.records if "rejected line" in r.getMessage()]
    where = [line.split(" (")[0] for line in said]
    assert where[:3] == [
        "message 0@3: rejected line 2",
        "message 0@3: rejected line 4",
        "message 1@3: rejected line 1",
    ]
    assert where[3:-1] == [f"message 2@3: rejected line {n}" for n in range(2, 2 + LOG_BURST - 3)]
    assert len(said) == LOG_BURST + 1  # and the line that says how many were held back
    assert said[-1].startswith(f"{3 + 12 - LOG_BURST} more rejected lines not logged")
    assert [value for _, value in dead.sent] == values  # one dead letter per message
