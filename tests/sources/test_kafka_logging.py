"""kafka-python's slow-task warnings: short stalls dropped once a Kafka client exists."""

from __future__ import annotations

import logging

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
    assert len(selector.filters) == 1  # installed once
