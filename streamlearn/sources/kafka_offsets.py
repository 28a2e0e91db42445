"""The start and end offsets of partitions, asked of the brokers, with every failure a
:class:`~kafka.errors.KafkaError`.

kafka-python raises ``KeyError`` when the brokers' answer leaves out a partition it
asked about: a topic deleted and created again with fewer partitions (a broker restarted
on memory, say) while the consumer still knew the old ones. That is a broker's answer
like any other refused one, and the callers treat it as one, rather than end the daemon.

>>> from kafka import TopicPartition
>>> class Stale:  # a consumer whose answer misses partition 1, as kafka-python's does
...     def end_offsets(self, partitions, timeout_ms=None):
...         raise KeyError(TopicPartition("t", 1))
>>> try:
...     end_offsets(Stale(), [TopicPartition("t", 0), TopicPartition("t", 1)])
... except KafkaError as error:
...     print("partition=1" in str(error))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaError


def end_offsets(
    consumer: Any, partitions: Sequence[TopicPartition], timeout_ms: int | None = None
) -> dict[TopicPartition, int]:
    """The offset after the last message of each of ``partitions``."""
    return _asked(consumer.end_offsets, partitions, timeout_ms)


def beginning_offsets(
    consumer: Any, partitions: Sequence[TopicPartition], timeout_ms: int | None = None
) -> dict[TopicPartition, int]:
    """The offset of the first message kept of each of ``partitions``."""
    return _asked(consumer.beginning_offsets, partitions, timeout_ms)


def _asked(
    ask: Any, partitions: Sequence[TopicPartition], timeout_ms: int | None
) -> dict[TopicPartition, int]:
    try:
        answer = ask(list(partitions), timeout_ms=timeout_ms)
    except KeyError as missing:
        raise KafkaError(
            f"the brokers' answer holds no offset for {missing.args[0]!r} (the topic "
            "created again with fewer partitions?)"
        ) from None
    return {tp: int(offset) for tp, offset in answer.items()}
