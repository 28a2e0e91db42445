"""What ``serve`` refuses of delayed labels before anything starts (exit 1, a line that
says why)."""

from __future__ import annotations

import pytest

from streamlearn.config import LearnerSpec
from streamlearn.errors import InvalidParameterError
from streamlearn.jobs.serve import ServeConfig
from streamlearn.keyed.settings import KeyedSettings

KAFKA = {"source": "kafka", "bootstrap_servers": "127.0.0.1:9092", "topic": "examples"}
LEARNER = LearnerSpec("pdm", {"delta": 1.0})


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"source": "stdin", "labels_topic": "labels"}, "--labels-topic needs --source kafka"),
        ({**KAFKA, "labels_topic": "labels", "sync_topic": "sync"}, "drop --sync-topic"),
        ({**KAFKA, "labels_topic": "labels", "keyed": KeyedSettings()}, "drop --model-key"),
        ({**KAFKA, "labels_topic": "bad name!"}, "--labels-topic"),
        ({"pending_max": 0}, "--pending-max"),
        ({"pending_ttl": 0.0}, "--pending-ttl"),
    ],
)
def test_delayed_labels_that_cannot_work_are_refused(options: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidParameterError, match=says):
        ServeConfig(LEARNER, **options)  # type: ignore[arg-type]


def test_a_labels_topic_on_kafka_is_taken() -> None:
    config = ServeConfig(LEARNER, labels_topic="labels", pending_max=10, **KAFKA)  # type: ignore[arg-type]
    assert (config.labels_topic, config.pending_max) == ("labels", 10)
