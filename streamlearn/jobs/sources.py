"""The sources ``serve`` reads, by name: what each offers the modes and options, and how
it is made.

A mode or an option that needs something of its source asks for a capability, never
for a source by name: a learning group needs partitions that a consumer group hands
over, keyed models need message keys. :func:`needs` names the sources that have it in
the refusal.

>>> source_kind("kafka").offers(KEYS), source_kind("stdin").offers(KEYS)
(True, False)
>>> needs("--model-key", KEYS)
'--model-key needs --source kafka'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamlearn.errors import InvalidParameterError
from streamlearn.sources.base import Source
from streamlearn.sources.stdin import StdinSource
from streamlearn.sources.stopping import StopBudget

if TYPE_CHECKING:
    from streamlearn.jobs.serve import ServeConfig

#: messages carry keys (keyed models)
KEYS = "keys"
#: a consumer group hands partitions over between processes (learning groups)
REBALANCES = "rebalances"
#: messages of any ``--format`` (standard input is svmlight lines)
FORMATS = "formats"
#: a broker: consumer options, topics, unreadable record batches skipped and counted
BROKER = "broker"
#: answers go to standard output when no predictions topic is given
ANSWERS_ON_STDOUT = "answers on stdout"


@dataclass(frozen=True)
class SourceKind:
    """A source by name: what it offers (capabilities above), and its factory."""

    name: str
    capabilities: frozenset[str]
    make: Callable[[ServeConfig, StopBudget | None], Source]

    def offers(self, capability: str) -> bool:
        """Whether the source has ``capability``."""
        return capability in self.capabilities


def _stdin(config: ServeConfig, budget: StopBudget | None) -> Source:
    del budget  # standard input waits on no broker
    return StdinSource(sys.stdin.buffer, lines_per_message=config.lines_per_message)


def _kafka(config: ServeConfig, budget: StopBudget | None) -> Source:
    from streamlearn.jobs.serve import member_consumer
    from streamlearn.sources.kafka import KafkaSource, consumer_options, security_from_env

    assert config.bootstrap_servers is not None and config.topic is not None
    return KafkaSource(
        config.bootstrap_servers,
        config.topic,
        config.group,
        security=security_from_env(os.environ),
        max_batch_bytes=config.max_batch_bytes,
        max_record_bytes=config.max_record_bytes,
        budget=budget,
        on_offset_reset=config.on_offset_reset,
        **member_consumer(config, consumer_options(config.consumer_options)),
    )


#: the sources of ``--source``
SOURCES: dict[str, SourceKind] = {
    "stdin": SourceKind("stdin", frozenset({ANSWERS_ON_STDOUT}), _stdin),
    "kafka": SourceKind("kafka", frozenset({KEYS, REBALANCES, FORMATS, BROKER}), _kafka),
}


def source_kind(name: str) -> SourceKind:
    """The source called ``name``; :class:`InvalidParameterError` naming the others."""
    kind = SOURCES.get(name)
    if kind is None:
        raise InvalidParameterError(f"--source must be {' or '.join(SOURCES)}, got {name!r}")
    return kind


def needs(option: str, capability: str) -> str:
    """The refusal of ``option`` with a source that lacks ``capability``."""
    having = [name for name, kind in SOURCES.items() if kind.offers(capability)]
    return f"{option} needs --source {' or '.join(having)}"
