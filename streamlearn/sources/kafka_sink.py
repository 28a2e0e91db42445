"""Kafka as a :class:`~streamlearn.sources.base.Sink`: predictions and dead letters sent
by a producer.

Nothing a message does stops the stream: a message the producer refuses at once (larger
than ``max_request_size``, a topic whose metadata does not come within
``max_block_ms``) or one the broker does not take is kept as an
:class:`~streamlearn.sources.base.Undelivered`, with the input message it answers, for
the daemon to log and count.

Nothing waits without a bound either: :meth:`KafkaSink.flush` gives up after its
timeout and says how many messages are still on their way (the daemon then does not
checkpoint past them), and :meth:`KafkaSink.close` never waits for a broker that has
stopped answering.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

from streamlearn.sources.base import Undelivered
from streamlearn.sources.headers import Header
from streamlearn.sources.kafka import checked_security
from streamlearn.sources.kafka_logging import tame_kafka_logs
from streamlearn.sources.stopping import StopBudget

log = logging.getLogger(__name__)

#: the largest message a producer sends by default: what a consumer fetches at most by
#: default, so that any message read can be forwarded whole as a dead letter
DEFAULT_MAX_REQUEST_SIZE = int(KafkaConsumer.DEFAULT_CONFIG["fetch_max_bytes"])
#: how long a send may wait for the topic's metadata (kafka-python's default, 60 s, held
#: the daemon's loop for a minute at the first prediction of a broker outage)
DEFAULT_MAX_BLOCK_MS = 5000


class KafkaSink:
    """Messages sent to one topic, keyed as given.

    ``close_timeout`` bounds how long :meth:`close` waits for messages still on their
    way, and ``budget`` every wait once a stop began; ``compression`` is the codec of
    the batches it writes (none, gzip, snappy, lz4 or zstd); other options go to the
    ``KafkaProducer``.
    """

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        topic: str,
        *,
        security: Mapping[str, str] | None = None,
        client_id: str = "streamlearn",
        close_timeout: float = 5.0,
        max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
        max_block_ms: int = DEFAULT_MAX_BLOCK_MS,
        compression: str | None = None,
        budget: StopBudget | None = None,
        **producer_options: Any,
    ) -> None:
        tame_kafka_logs()
        self.topic = topic
        self.close_timeout = close_timeout
        self.budget = budget if budget is not None else StopBudget()
        self._producer = KafkaProducer(
            bootstrap_servers=bootstrap_servers,
            client_id=client_id,
            max_request_size=max_request_size,
            max_block_ms=max_block_ms,
            compression_type=compression,
            **checked_security(security),
            **producer_options,
        )
        # deliveries are reported on the producer's I/O thread
        self._lock = threading.Lock()
        self._failed: list[Undelivered] = []
        self._on_their_way = 0
        self._stalled = False  # the last flush timed out
        self._learn_partitions()

    def _learn_partitions(self) -> None:
        """Fetch the topic's metadata now: a send waits for it when it is missing, which
        during an outage would hold the daemon at its first prediction."""
        try:
            self._producer.partitions_for(self.topic)
        except KafkaError as error:
            log.warning("no metadata yet for topic %s (%r): asked again at the first send",
                        self.topic, error)  # fmt: skip

    def send(
        self,
        key: bytes | None,
        value: bytes | None,
        *,
        origin: tuple[int, int],
        headers: Sequence[Header] = (),
    ) -> None:
        """Queue one message; a failure, now or at delivery, goes to :meth:`undelivered`.

        kafka-python sends no null header value (it goes as an empty one), and no record
        whose key and value are both null (its value goes empty).
        """
        if key is None and value is None:
            value = b""
        pairs = [(name, b"" if content is None else content) for name, content in headers]
        try:
            future = self._producer.send(self.topic, value=value, key=key, headers=pairs)
        except KafkaError as error:  # too large, no metadata in time, closed
            self._fail(origin, error)
            return
        with self._lock:
            self._on_their_way += 1
        future.add_callback(self._delivered)
        future.add_errback(self._not_delivered, origin)

    def _delivered(self, metadata: Any) -> None:
        with self._lock:
            self._on_their_way -= 1

    def _not_delivered(self, origin: tuple[int, int], error: BaseException) -> None:
        with self._lock:
            self._on_their_way -= 1
        self._fail(origin, error)

    def _fail(self, origin: tuple[int, int], error: BaseException) -> None:
        with self._lock:
            self._failed.append(Undelivered(origin[0], origin[1], repr(error)))

    def undelivered(self) -> list[Undelivered]:
        """The messages that failed since the last call."""
        with self._lock:
            failed, self._failed = self._failed, []
        return failed

    def flush(self, timeout: float) -> int:
        """Wait at most ``timeout`` seconds until every message sent is delivered or has
        failed; return how many are still on their way (0: none)."""
        with contextlib.suppress(KafkaError):  # a timeout: the count below tells
            self._producer.flush(timeout=self.budget.cap(timeout))
        with self._lock:
            on_their_way = self._on_their_way
        self._stalled = on_their_way > 0
        return on_their_way

    def close(self) -> None:
        """Wait up to ``close_timeout`` for the messages on their way (not at all when
        the last flush timed out: the broker is not answering), drop the rest (logged)
        and close the connection. Never raises."""
        on_their_way = self.flush(0.0 if self._stalled else self.budget.cap(self.close_timeout))
        if on_their_way:
            log.warning("%d messages to %s were still on their way at close: dropped",
                        on_their_way, self.topic)  # fmt: skip
        try:
            timeout = 0.0 if on_their_way else self.budget.cap(self.close_timeout)
            self._producer.close(timeout=timeout)
        except KafkaError:
            self._force_close()

    def _force_close(self) -> None:
        """Close a producer whose messages are still on their way, without waiting.

        kafka-python's close flushes first and, on a timeout, raises without closing;
        its finalizer would then try again and print tracebacks at exit. Its I/O thread
        (a daemon thread, which may itself wait for the broker for a while) is told to
        fail what is left, and the producer is marked closed.
        """
        sender = getattr(self._producer, "_sender", None)
        if sender is not None:
            sender.force_close()
        self._producer._closed = True
