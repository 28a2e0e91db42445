"""kafka-python's warnings once a Kafka client exists: short stalls dropped, repeats held
back."""

from __future__ import annotations

import logging
import uuid

import pytest

from streamlearn.sources.kafka import KafkaSource
from streamlearn.sources.kafka_logging import LONG_STALL_SECONDS, SELECTOR_LOGGER


def stall(seconds: float) -> str:
    return f"Task <Task object at 0x7f> ran for {seconds:.3f}s (>0.100s threshold). It is ..."


def test_a_source_keeps_long_stalls_and_every_other_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    KafkaSource("127.0.0.1:9", "topic", "group")  # connects only when first polled
    selector = logging.getLogger(SELECTOR_LOGGER)
    with caplog.at_level(logging.WARNING, logger=SELECTOR_LOGGER):
        selector.warning(stall(0.24))
        selector.warning(stall(LONG_STALL_SECONDS + 1.5))
        selector.warning("Task %s left RUNNING after step; demoting to UNSCHEDULED", "<t>")
    assert [r.getMessage()[:28] for r in caplog.records] == [
        "Task <Task object at 0x7f> r",
        "Task <t> left RUNNING after ",
    ]
    assert "ran for 2.500s" in caplog.records[0].getMessage()
    KafkaSource("127.0.0.1:9", "topic", "group")
    assert len(selector.filters) == 2  # each installed once: long stalls, repeats


def test_a_broker_outage_logs_each_kind_of_warning_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """During an outage kafka-python repeats the same warnings, for every connection,
    every few seconds (about 16 lines every 5 s)."""
    KafkaSource("127.0.0.1:9", "topic", "group")
    connection = logging.getLogger("kafka.net.connection")
    fetcher = logging.getLogger("kafka.consumer.fetcher")
    tag = uuid.uuid4().hex[:6]  # kinds no other test of this process has logged
    with caplog.at_level(logging.WARNING):
        for port in range(40):
            connection.warning(f"%s: Connection lost {tag}: %s", f"<conn {port}>", "timed out")
            fetcher.warning(f"Fetch {tag} to node %s failed: %s", port, "timed out")
    assert [r.getMessage() for r in caplog.records] == [
        f"<conn 0>: Connection lost {tag}: timed out",
        f"Fetch {tag} to node 0 failed: timed out",
    ]
