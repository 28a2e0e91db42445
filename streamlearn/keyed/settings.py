"""What ``serve --model-key`` is told: the state topic and the memory bound.

>>> settings = KeyedSettings(max_models=100)
>>> settings.topic_for("learners", "examples"), settings.max_model_bytes == 1 << 30
('learners-examples-models', True)
>>> KeyedSettings(max_models=0)
Traceback (most recent call last):
    ...
streamlearn.errors.InvalidParameterError: --max-models must be an integer >= 1, got 0
"""

from __future__ import annotations

from dataclasses import dataclass

from streamlearn.errors import InvalidParameterError
from streamlearn.keyed.models import DEFAULT_MAX_MODEL_BYTES, DEFAULT_MAX_MODELS


@dataclass(frozen=True)
class KeyedSettings:
    """One model per message key (see :mod:`streamlearn.keyed`)."""

    #: the compacted topic the models that leave memory go to (None: GROUP-TOPIC-models)
    state_topic: str | None = None
    #: models held in memory at most
    max_models: int = DEFAULT_MAX_MODELS
    #: bytes of the models held in memory at most (weights and replay buffers)
    max_model_bytes: int = DEFAULT_MAX_MODEL_BYTES
    #: seconds a key's model may go without learning before it is removed, from memory
    #: and from the state topic (None: kept for ever)
    key_ttl: float | None = None

    def __post_init__(self) -> None:
        for option, value in (("--max-models", self.max_models),
                              ("--max-model-bytes", self.max_model_bytes)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidParameterError(f"{option} must be an integer >= 1, got {value!r}")
        ttl = self.key_ttl
        if ttl is not None and not (isinstance(ttl, int | float) and 0 < ttl < float("inf")):
            raise InvalidParameterError(f"--key-ttl must be a duration > 0, got {ttl!r}")

    def topic_for(self, group: str, topic: str) -> str:
        """The state topic of a daemon of consumer group ``group`` reading ``topic``: one
        per group and topic, as Kafka Streams names its changelogs."""
        return self.state_topic or f"{group}-{topic}-models"
