"""What ``serve`` refuses of a learning group before anything starts (exit 1, a line
that says why)."""

from __future__ import annotations

import pytest

from streamlearn.config import LearnerSpec
from streamlearn.errors import InvalidParameterError
from streamlearn.jobs.serve import ServeConfig

KAFKA = {"source": "kafka", "bootstrap_servers": "127.0.0.1:9092", "topic": "examples"}


@pytest.mark.parametrize(
    ("params", "options", "says"),
    [
        ({"delta": 1.0}, {"source": "stdin"}, "--source kafka"),
        ({"delta": 1.0, "forget": "never"}, {**KAFKA, "one_vs_rest": True}, "window semantics"),
        ({"delta": 1.0}, {**KAFKA, "sync_topic": "bad name!"}, "--sync-topic"),
        ({"delta": 1.0}, {**KAFKA, "http_learn": True}, "drop --http-learn"),
    ],
)
def test_a_group_that_cannot_work_is_refused(
    params: dict[str, object], options: dict[str, object], says: str
) -> None:
    config = {"sync_topic": "sync", **options}
    with pytest.raises(InvalidParameterError, match=says):
        ServeConfig(LearnerSpec("pdm", params), **config)  # type: ignore[arg-type]


def test_a_member_id_needs_a_group() -> None:
    with pytest.raises(InvalidParameterError, match="--member-id needs --sync-topic"):
        ServeConfig(LearnerSpec("pdm", {"delta": 1.0}), member_id="a", **KAFKA)  # type: ignore[arg-type]


def test_a_group_with_what_it_needs_is_taken() -> None:
    config = ServeConfig(LearnerSpec("pdm", {"delta": 1.0}), sync_topic="sync", **KAFKA)  # type: ignore[arg-type]
    assert config.sync.mode == "dynamic"
    kept = ServeConfig(LearnerSpec("pdm", {"delta": 1.0}), sync_topic="sync",  # type: ignore[arg-type]
                       checkpoint_dir="/tmp/x", **KAFKA)  # fmt: skip
    assert kept.checkpoint_dir  # a member's window survives its restarts
    for delta in ({"delta": "auto"}, {"delta": "first"}, {}):  # the members agree on one
        assert ServeConfig(LearnerSpec("pdm", delta), sync_topic="sync", **KAFKA).sync_topic  # type: ignore[arg-type]


def test_a_group_learns_a_one_vs_rest_bank() -> None:
    """Members exchange a bank's shares label by label, as they exchange one model's."""
    config = ServeConfig(LearnerSpec("pdm", {"delta": 1.0}), sync_topic="sync",  # type: ignore[arg-type]
                         one_vs_rest=True, **KAFKA)  # fmt: skip
    assert config.sync_topic and config.one_vs_rest
