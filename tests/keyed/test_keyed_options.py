"""What ``serve --model-key`` refuses before anything starts (a usage error that says
why), and what it takes."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from streamlearn.cli import app
from streamlearn.config import LearnerSpec
from streamlearn.errors import InvalidParameterError
from streamlearn.jobs.serve import ServeConfig
from streamlearn.keyed.settings import KeyedSettings

KAFKA = {"source": "kafka", "bootstrap_servers": "127.0.0.1:9092", "topic": "examples"}


@pytest.mark.parametrize(
    ("params", "options", "says"),
    [
        ({"delta": 1.0}, {"source": "stdin"}, "--source kafka"),
        ({"delta": 1.0}, {**KAFKA, "sync_topic": "sync"}, "drop --sync-topic"),
        ({"delta": 1.0}, {**KAFKA, "checkpoint_dir": "/tmp/x"}, "drop --checkpoint-dir"),
        ({"delta": 1.0}, {**KAFKA, "group": "a group"}, "--state-topic"),
    ],
)
def test_keyed_models_that_cannot_work_are_refused(
    params: dict[str, object], options: dict[str, object], says: str
) -> None:
    with pytest.raises(InvalidParameterError, match=says):
        ServeConfig(LearnerSpec("pdm", params), keyed=KeyedSettings(), **options)  # type: ignore[arg-type]


def test_keyed_models_with_what_they_need_are_taken() -> None:
    config = ServeConfig(LearnerSpec("pdm", {"delta": "first"}), keyed=KeyedSettings(),
                         group="learners", **KAFKA)  # type: ignore[arg-type]  # fmt: skip
    assert config.state_topic == "learners-examples-models"
    named = ServeConfig(LearnerSpec("paum", {"delta": 0.5}), **KAFKA,  # type: ignore[arg-type]
                        keyed=KeyedSettings(state_topic="models", max_models=5))  # fmt: skip
    assert named.state_topic == "models" and named.keyed is not None
    assert named.keyed.max_models == 5
    with pytest.raises(InvalidParameterError, match="--key-ttl must be a duration > 0"):
        KeyedSettings(key_ttl=-1.0)
    assert KeyedSettings(key_ttl=604800.0).key_ttl == 604800.0
    assert ServeConfig(LearnerSpec("pdm"), **KAFKA).state_topic is None  # type: ignore[arg-type]
    taught = ServeConfig(LearnerSpec("pdm"), keyed=KeyedSettings(), http_learn=True,  # type: ignore[arg-type]
                         http_addr="127.0.0.1:0", **KAFKA)  # fmt: skip
    assert taught.http_learn  # POST /learn?key=K teaches K's model
    auto = ServeConfig(LearnerSpec("pdm"), keyed=KeyedSettings(), **KAFKA)  # type: ignore[arg-type]
    assert auto.learner.params.get("delta", "auto") == "auto"  # each key settles its own
    banks = ServeConfig(LearnerSpec("pdm"), keyed=KeyedSettings(), one_vs_rest=True, **KAFKA)  # type: ignore[arg-type]
    assert banks.one_vs_rest  # each key's model is a one-vs-rest bank


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--state-topic", "models"], "--state-topic needs --model-key"),
        (["--max-models", "5", "--max-model-bytes", "9"], "--max-models, --max-model-bytes needs"),
        (["--model-key", "--max-models", "0", "--delta", "1"], "--max-models must be"),
        (["--model-key", "--delta", "1"], "--model-key needs --source kafka"),
        (["--key-ttl", "7d"], "--key-ttl needs --model-key"),
    ],
)
def test_the_command_line_refuses_keyed_options_alone(arguments: list[str], says: str) -> None:
    result = CliRunner().invoke(app, ["serve", *arguments])
    assert result.exit_code == 1  # refused before anything starts
    assert says in result.output
