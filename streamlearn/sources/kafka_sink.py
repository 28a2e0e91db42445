"""Kafka as a :class:`~streamlearn.sources.base.Sink`: predictions and dead letters sent
by a producer.

Nothing a message does stops the stream: a message the producer refuses at once (larger
than ``max_request_size``, a topic whose metadata does not come within
``max_block_ms``) or one the broker does not take is kept as an
:class:`~streamlearn.sources.base.Undelivered`, with the input message it answers, for
the daemon to log and count.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

from streamlearn.errors import InputError
from streamlearn.sources.base import Undelivered
from streamlearn.sources.kafka import checked_security
from streamlearn.sources.kafka_logging import keep_long_stalls_only

#: the largest message a producer sends by default: what a consumer fetches at most by
#: default, so that any message read can be forwarded whole as a dead letter
DEFAULT_MAX_REQUEST_SIZE = int(KafkaConsumer.DEFAULT_CONFIG["fetch_max_bytes"])


class KafkaSink:
    """Messages sent to one topic, keyed as given."""

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        topic: str,
        *,
        security: Mapping[str, str] | None = None,
        client_id: str = "streamlearn",
        flush_timeout: float = 30.0,
        max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
        **producer_options: Any,
    ) -> None:
        keep_long_stalls_only()
        self.topic = topic
        self.flush_timeout = flush_timeout
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap_servers,
            client_id=client_id,
            max_request_size=max_request_size,
            **checked_security(security),
            **producer_options,
        )
        # failures come from the producer's I/O thread too
        self._lock = threading.Lock()
        self._failed: list[Undelivered] = []

    def send(self, key: bytes | None, value: bytes, *, origin: tuple[int, int]) -> None:
        """Queue one message; a failure, now or at delivery, goes to :meth:`undelivered`."""
        try:
            future = self._producer.send(self.topic, value=value, key=key)
        except KafkaError as error:  # too large, no metadata in time, closed
            self._fail(origin, error)
            return
        future.add_errback(self._fail, origin)

    def _fail(self, origin: tuple[int, int], error: BaseException) -> None:
        with self._lock:
            self._failed.append(Undelivered(origin[0], origin[1], repr(error)))

    def undelivered(self) -> list[Undelivered]:
        """The messages that failed since the last call."""
        with self._lock:
            failed, self._failed = self._failed, []
        return failed

    def flush(self) -> None:
        """Wait until every queued message is delivered or has failed."""
        try:
            self._producer.flush(timeout=self.flush_timeout)
        except KafkaError as error:
            raise InputError(f"Kafka sink to {self.topic} failed: {error!r}") from error

    def close(self) -> None:
        """Flush and close the connection."""
        try:
            self.flush()
        finally:
            self._producer.close(timeout=self.flush_timeout)
