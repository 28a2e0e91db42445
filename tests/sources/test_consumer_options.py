"""``--consumer-option NAME=VALUE``: Kafka consumer options as the daemon's source gets
them (no broker needed: the consumer is created on the first poll)."""

from __future__ import annotations

import pytest

from streamlearn.config import LearnerSpec
from streamlearn.errors import InvalidParameterError
from streamlearn.jobs.serve import ServeConfig, _source
from streamlearn.sources.kafka import KafkaSource, consumer_options


def test_names_in_either_spelling_and_values_of_the_defaults_type() -> None:
    assert consumer_options(
        [
            "session.timeout.ms=6000",
            "heartbeat_interval_ms=1500",
            "fetch-max-wait-ms=100",
            "check.crcs=FALSE",
            "auto.offset.reset=latest",
            "group.instance.id=learner-1",
            "receive.buffer.bytes=1048576",
        ]
    ) == {
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1500,
        "fetch_max_wait_ms": 100,
        "check_crcs": False,
        "auto_offset_reset": "latest",
        "group_instance_id": "learner-1",
        "receive_buffer_bytes": 1048576,
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("session.timeout.ms", "NAME=VALUE"),
        ("=5", "NAME=VALUE"),
        ("session.timeout.ms=soon", "takes an integer"),
        ("check.crcs=yes", "takes true or false"),
        ("no.such.option=1", "unknown or unsettable"),
        ("selector=epoll", "unknown or unsettable"),
        ("group.id=other", "set by streamlearn"),
        ("enable.auto.commit=true", "set by streamlearn"),
        ("bootstrap.servers=elsewhere:9092", "set by streamlearn"),
        ("sasl.plain.password=secret", "from the environment"),
        ("ssl.keyfile=/k.pem", "from the environment"),
        ("security.protocol=SSL", "from the environment"),
        # values the consumer refused only when made, at the first poll, retried forever
        ("session.timeout.ms=-5", "session_timeout_ms takes a value >= 0"),
        ("heartbeat.interval.ms=999999", r"heartbeat.interval.ms \(999999\) must be below"),
        ("session.timeout.ms=2000", r"\(3000\) must be below its session.timeout.ms \(2000\)"),
        ("isolation.level=bogus", "isolation_level takes one of read_uncommitted, read_"),
        ("auto.offset.reset=bogus", "auto_offset_reset takes one of earliest, latest"),
        ("client.dns.lookup=nope", "client_dns_lookup takes one of"),
    ],
)
def test_bad_options_are_refused_by_name(pair: str, message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        consumer_options([pair])


def kafka_config(*options: str) -> ServeConfig:
    return ServeConfig(
        learner=LearnerSpec.from_options("pdm", {"eps": 0.05}),
        source="kafka",
        bootstrap_servers="127.0.0.1:1",
        topic="examples",
        consumer_options=options,
    )


def test_the_daemon_source_gets_them() -> None:
    source = _source(kafka_config("session.timeout.ms=6000", "max.poll.interval.ms=900000"))
    assert isinstance(source, KafkaSource)
    assert source._config["session_timeout_ms"] == 6000
    assert source._config["max_poll_interval_ms"] == 900_000
    assert source._config["enable_auto_commit"] is False
    default = _source(kafka_config())
    assert isinstance(default, KafkaSource)
    assert default._config["session_timeout_ms"] == 10_000


def test_serve_checks_them_before_starting() -> None:
    with pytest.raises(InvalidParameterError, match="unknown or unsettable"):
        kafka_config("no.such.option=1")
    with pytest.raises(InvalidParameterError, match="needs --source kafka"):
        ServeConfig(
            learner=LearnerSpec.from_options("pdm", {}), consumer_options=("check.crcs=true",)
        )


def test_json_is_a_message_format_of_kafka_only() -> None:
    """--format json was listed by --help and documented, but refused as not svmlight or
    msgpack."""
    pdm = LearnerSpec.from_options("pdm", {})
    config = ServeConfig(learner=pdm, source="kafka", bootstrap_servers="127.0.0.1:9",
                         topic="t", message_format="json")  # fmt: skip
    assert config.message_format == "json"
    with pytest.raises(InvalidParameterError, match="--format json needs --source kafka"):
        ServeConfig(learner=pdm, message_format="json")
    with pytest.raises(InvalidParameterError, match="svmlight, msgpack, json"):
        ServeConfig(learner=pdm, message_format="xml")
