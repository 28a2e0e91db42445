"""Kafka as a :class:`Source`: a consumer group member (the sink, a producer, is in
:mod:`streamlearn.sources.kafka_sink`).

With the other ``kafka_*`` modules, the only one that imports kafka-python. Offsets are
never committed automatically: the daemon commits the positions of a checkpoint once it
is on disk, and only those of the partitions assigned to this member. The source keeps
its own position per partition (where :meth:`KafkaSource.seek` put it, then after each
message returned), and on every assignment by the group it seeks each assigned
partition there, so a rebalance or a restart from a checkpoint resumes exactly where the
learner's state ends; partitions it has no position for start from the group's
committed offset, or the earliest one.

A broker outage never raises out of :meth:`KafkaSource.poll`: it returns no message,
:meth:`KafkaSource.ready` turns false, and the client reconnects on later polls. What
no retry would change (options the consumer refuses, no offset to start from under
``auto_offset_reset=none``) raises :class:`InvalidParameterError` instead.

The consumer hands over whole record batches (:mod:`streamlearn.sources.kafka_blocks`),
decoded by a compiled kernel into a :class:`MessageBatch` without a Python object per
message. A poll returns at most ``max_messages`` messages: what a batch holds beyond
that waits in the source for the next poll (and is dropped, to be fetched again, when
its partition is sought or revoked), so positions stay exact per message
(:mod:`streamlearn.sources.kafka_fetched`).

Credentials come from the environment (:func:`security_from_env`), never from flags.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka import (
    ConsumerRebalanceListener,
    KafkaAdminClient,
    KafkaConsumer,
    OffsetAndMetadata,
    TopicPartition,
)
from kafka.admin import NewTopic
from kafka.errors import (
    KafkaConfigurationError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    TopicAlreadyExistsError,
)
from kafka.future import Future
from kafka.util import ensure_valid_topic_name

from streamlearn.errors import InputError, InvalidParameterError
from streamlearn.sources.base import MessageBatch, Positions, RebalanceListener, Unreadable
from streamlearn.sources.kafka_blocks import (
    UnreadableRecords,
    install_block_records,
    install_records_within,
    warm_up,
)
from streamlearn.sources.kafka_codecs import DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_RECORD_BYTES
from streamlearn.sources.kafka_fetched import FetchedMessages, first_offset, unreadable_of
from streamlearn.sources.kafka_health import FAILING_LOG_INTERVAL, PollFailures, answers
from streamlearn.sources.kafka_logging import tame_kafka_logs
from streamlearn.sources.kafka_offsets import beginning_offsets, end_offsets
from streamlearn.sources.log_guard import POLICIES, LogGuard, behind
from streamlearn.sources.stopping import StopBudget
from streamlearn.sources.unreadable import UnreadableLog

log = logging.getLogger(__name__)

#: how long closing the consumer (leaving the group) may take, in milliseconds
CLOSE_TIMEOUT_MS = 5000
#: how long the first contact with the brokers may take, in milliseconds: a poll waits
#: this long while no broker answers (and a stop signal waits for that poll)
BOOTSTRAP_TIMEOUT_MS = 2000
#: seconds a commit waits before it looks whether a stop began (and then waits only for
#: what the stop's deadline leaves)
COMMIT_STEP = 0.5
#: the group session the source keeps unless told otherwise, in milliseconds
SESSION_TIMEOUT_MS = 10000
HEARTBEAT_INTERVAL_MS = 3000
#: the kafka-python options :func:`security_from_env` fills and the clients accept
SECURITY_OPTIONS = (
    "security_protocol",
    "sasl_mechanism",
    "sasl_plain_username",
    "sasl_plain_password",
    "ssl_cafile",
    "ssl_certfile",
    "ssl_keyfile",
)
_ENVIRONMENT = {
    "STREAMLEARN_KAFKA_SECURITY_PROTOCOL": "security_protocol",
    "STREAMLEARN_KAFKA_SASL_MECHANISM": "sasl_mechanism",
    "STREAMLEARN_KAFKA_SASL_USERNAME": "sasl_plain_username",
    "STREAMLEARN_KAFKA_SASL_PASSWORD": "sasl_plain_password",
    "STREAMLEARN_KAFKA_SSL_CAFILE": "ssl_cafile",
    "STREAMLEARN_KAFKA_SSL_CERTFILE": "ssl_certfile",
    "STREAMLEARN_KAFKA_SSL_KEYFILE": "ssl_keyfile",
}
_PASSWORD_FILE = "STREAMLEARN_KAFKA_SASL_PASSWORD_FILE"
#: every environment variable :func:`security_from_env` reads
SECURITY_VARIABLES = (*_ENVIRONMENT, _PASSWORD_FILE)


def security_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """kafka-python security options from ``STREAMLEARN_KAFKA_*`` variables.

    ``STREAMLEARN_KAFKA_SASL_PASSWORD_FILE`` names a file holding the password (its
    trailing newline dropped), as an alternative to ``STREAMLEARN_KAFKA_SASL_PASSWORD``.

    >>> security_from_env({"STREAMLEARN_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    ...                    "STREAMLEARN_KAFKA_SASL_USERNAME": "learner", "HOME": "/root"})
    {'security_protocol': 'SASL_SSL', 'sasl_plain_username': 'learner'}
    """
    options = {key: environ[name] for name, key in _ENVIRONMENT.items() if environ.get(name)}
    password_file = environ.get(_PASSWORD_FILE)
    if password_file:
        if "sasl_plain_password" in options:
            raise InvalidParameterError(
                f"set STREAMLEARN_KAFKA_SASL_PASSWORD or {_PASSWORD_FILE}, not both"
            )
        try:
            text = Path(password_file).read_text(encoding="utf-8")
        except OSError as error:
            raise InputError(f"cannot read {_PASSWORD_FILE} {password_file}: {error}") from error
        options["sasl_plain_password"] = text.rstrip("\r\n")
    return options


#: consumer options the source sets itself, or whose change would break it
_SOURCE_OWNED = ("bootstrap_servers", "group_id", "enable_auto_commit")
#: consumer options that come from the environment only (:func:`security_from_env`)
_SECURITY_PREFIXES = ("sasl_", "ssl_", "security_")
#: consumer options with no scalar default that still take one value
_SCALAR_WITHOUT_DEFAULT = {"group_instance_id": str, "receive_buffer_bytes": int,
                           "send_buffer_bytes": int}  # fmt: skip


def _scalar_options() -> dict[str, type]:
    """KafkaConsumer options that take one plain value, with the type of that value."""
    scalar: dict[str, type] = dict(_SCALAR_WITHOUT_DEFAULT)
    for name, default in KafkaConsumer.DEFAULT_CONFIG.items():
        if isinstance(default, bool | int | float | str):
            scalar[name] = type(default)
    return scalar


def consumer_options(pairs: Sequence[str]) -> dict[str, Any]:
    """KafkaConsumer options from ``NAME=VALUE`` texts (``--consumer-option``).

    Names may be written as Kafka's (``session.timeout.ms``) or as kafka-python's
    (``session_timeout_ms``); values take the type of the option's default. Security
    options come from the environment only (:func:`security_from_env`), and the options
    the source sets itself (brokers, group, auto commit) cannot be changed.

    >>> consumer_options(["session.timeout.ms=6000", "check_crcs=false",
    ...                   "group.instance.id=learner-1"])
    {'session_timeout_ms': 6000, 'check_crcs': False, 'group_instance_id': 'learner-1'}
    """
    scalar = _scalar_options()
    options: dict[str, Any] = {}
    for pair in pairs:
        name, equals, text = pair.partition("=")
        key = name.strip().replace(".", "_").replace("-", "_")
        if not equals or not key:
            raise InvalidParameterError(f"--consumer-option takes NAME=VALUE, got {pair!r}")
        if key in _SOURCE_OWNED:
            raise InvalidParameterError(f"the consumer option {name} is set by streamlearn")
        if key.startswith(_SECURITY_PREFIXES):
            raise InvalidParameterError(
                f"the consumer option {name} comes from the environment (STREAMLEARN_KAFKA_*)"
            )
        if key not in scalar:
            raise InvalidParameterError(f"unknown or unsettable Kafka consumer option {name!r}")
        options[key] = _option_value(name, text.strip(), scalar[key])
    _check_values(options)
    return options


#: consumer options that take one of a few words (kafka-python's own spellings)
_CHOICES = {
    "auto_offset_reset": ("earliest", "latest", "none", "smallest", "largest"),
    "isolation_level": ("read_uncommitted", "read_committed"),
    "client_dns_lookup": ("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
}


def _check_values(options: Mapping[str, Any]) -> None:
    """Refuse values the consumer would refuse only when it is made, at the first poll
    (which the daemon would retry for ever, as if the broker were away)."""
    for key, value in options.items():
        if key in _CHOICES and value not in _CHOICES[key]:
            raise InvalidParameterError(
                f"the consumer option {key} takes one of {', '.join(_CHOICES[key])}, got {value!r}"
            )
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise InvalidParameterError(f"the consumer option {key} takes a value >= 0")
    session = options.get("session_timeout_ms", SESSION_TIMEOUT_MS)
    heartbeat = options.get("heartbeat_interval_ms", HEARTBEAT_INTERVAL_MS)
    if heartbeat >= session:
        raise InvalidParameterError(
            f"the consumer's heartbeat.interval.ms ({heartbeat}) must be below its "
            f"session.timeout.ms ({session})"
        )


def check_topic_name(option: str, name: str) -> None:
    """Refuse a name Kafka does not allow for a topic (ASCII letters, digits, ``.``,
    ``_`` and ``-``, at most 249 of them, not ``.`` or ``..``), naming the option.

    >>> check_topic_name("--topic", "examples.v2")
    >>> check_topic_name("--topic", "bad topic!")
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: --topic: Topic name "bad topic!" is illegal, ...
    """
    try:
        ensure_valid_topic_name(name)
    except (TypeError, ValueError) as error:
        raise InvalidParameterError(f"{option}: {error}") from None


def largest_fetch(options: Mapping[str, Any]) -> int:
    """The most bytes one fetch of a consumer with these options asks for: a producer
    that forwards what it reads (dead letters) must accept messages this large.

    >>> largest_fetch({}), largest_fetch({"fetch_max_bytes": 1 << 20})
    (52428800, 1048576)
    """
    default = KafkaConsumer.DEFAULT_CONFIG
    return max(
        int(options.get("fetch_max_bytes", default["fetch_max_bytes"])),
        int(options.get("max_partition_fetch_bytes", default["max_partition_fetch_bytes"])),
    )


def _option_value(name: str, text: str, kind: type) -> Any:
    try:
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
    except ValueError:
        expected = {bool: "true or false", int: "an integer", float: "a number"}[kind]
        raise InvalidParameterError(
            f"the consumer option {name} takes {expected}, got {text!r}"
        ) from None
    return text


def checked_security(security: Mapping[str, str] | None) -> dict[str, str]:
    """``security`` as client options, refused when it holds an unknown option."""
    options = dict(security or {})
    unknown = sorted(set(options) - set(SECURITY_OPTIONS))
    if unknown:
        raise InvalidParameterError(f"unknown Kafka security options: {', '.join(unknown)}")
    return options


def client_options(
    bootstrap_servers: str | list[str],
    *,
    client_id: str,
    request_timeout_ms: int,
    security: Mapping[str, str] | None,
) -> dict[str, Any]:
    """The options every kafka-python client of one component shares: the brokers, its
    client id, the request time-out and the security options (checked)."""
    return {
        "bootstrap_servers": bootstrap_servers,
        "client_id": client_id,
        "request_timeout_ms": request_timeout_ms,
        **checked_security(security),
    }


#: the largest record a compacted topic of streamlearn's holds (a group member's share, a
#: keyed model with its replay buffer): its writers, readers and the topic allow it
MAX_RECORD_BYTES = 64 << 20


def compacted_topic_reader(options: Mapping[str, Any], *, fetch_max_wait_ms: int) -> KafkaConsumer:
    """A consumer of a compacted topic of records (a group's sync topic, the keyed
    models' state topic) with the client ``options``: it commits nothing, fetches
    records of up to :data:`MAX_RECORD_BYTES`, and the broker holds a fetch at most
    ``fetch_max_wait_ms`` (their readers wait for the topic's end). A batch it cannot
    read (a codec that fails, a decompression bomb, a bad CRC) is logged and skipped
    (:class:`~streamlearn.sources.kafka_blocks.RecordsWithin`): anyone who can write to
    the topic could otherwise stop every reader of it."""
    consumer = KafkaConsumer(
        enable_auto_commit=False, allow_auto_create_topics=False,
        fetch_max_wait_ms=fetch_max_wait_ms,
        fetch_max_bytes=MAX_RECORD_BYTES, max_partition_fetch_bytes=MAX_RECORD_BYTES,
        **options,
    )  # fmt: skip
    install_records_within(consumer, max_batch_bytes=2 * MAX_RECORD_BYTES,
                           max_record_bytes=MAX_RECORD_BYTES,
                           report=_compacted_unreadable)  # fmt: skip
    return consumer


_COMPACTED_UNREADABLE = UnreadableLog(log)


def _compacted_unreadable(tp: TopicPartition, records: UnreadableRecords) -> None:
    """Log (once per reason and minute) a batch a compacted topic's reader skipped."""
    line = _COMPACTED_UNREADABLE.line(unreadable_of(records, tp.partition))
    if line is not None:
        log.error("topic %s %s", tp.topic, line)


def create_compacted_topic(
    options: Mapping[str, Any], topic: str, partitions: int, config: Mapping[str, str]
) -> bool:
    """Create ``topic``, compacted, with ``partitions`` partitions and ``config`` beside
    ``cleanup.policy``; whether this call created it (False: another client did first)."""
    admin = KafkaAdminClient(**options)
    try:
        configs = {"cleanup.policy": "compact", **config}
        admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs)])
        return True
    except TopicAlreadyExistsError:
        return False
    finally:
        admin.close()


class _FinishedJoin(Future):  # type: ignore[misc]
    """A group join attempt that finished while no poll waited for it, handed to the
    next poll as if it were still under way: it settles, with the attempt's outcome,
    as soon as that poll waits for it (see :func:`_keep_finished_joins`)."""

    def __init__(self, attempt: Any) -> None:
        super().__init__()
        self._attempt = attempt

    def add_callback(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        super().add_callback(f, *args, **kwargs)
        return self._settle()

    def add_errback(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        super().add_errback(f, *args, **kwargs)
        return self._settle()

    def _add_cb_eb(self, callback: Any, errback: Any) -> Any:
        super()._add_cb_eb(callback, errback)
        return self._settle()

    def _settle(self) -> Any:
        if not self.is_done:
            if self._attempt.exception is None:
                self.success(self._attempt.value)
            else:
                self.failure(self._attempt.exception)
        return self


def _keep_finished_joins(consumer: Any) -> bool:
    """Make ``consumer`` apply a group join that finished between two polls; whether it
    could.

    kafka-python 3.0 runs each JoinGroup + SyncGroup attempt as a task and hands its
    assignment over only to a poll that is waiting for the task when it finishes. When
    it finishes between two polls (the broker held the JoinGroup for seconds, and the
    poll's timeout ran out meanwhile), the next poll finds the task done and sends a
    new JoinGroup in its place: the assignment is dropped and the rebalance listener
    never runs. A member that waits little in its polls (``poll(0)`` while the daemon
    replays in idle time) then loses every attempt and never gets partitions. Here the
    finished attempt goes to the next poll instead, as the Java client does.
    """
    coordinator: Any = getattr(consumer, "_coordinator", None)
    stock = getattr(coordinator, "join_group_async", None)
    if not hasattr(coordinator, "_join_task") or not inspect.iscoroutinefunction(stock):
        log.warning("kafka-python's group coordinator is not the one expected: a group join "
                    "that finishes between two polls may be dropped and sent again")  # fmt: skip
        return False

    async def join_group_async(timeout_ms: Any = None) -> Any:
        attempt = coordinator._join_task
        if attempt is not None and attempt.is_done:
            coordinator._join_task = _FinishedJoin(attempt)
        return await stock(timeout_ms=timeout_ms)

    coordinator.join_group_async = join_group_async
    return True


class _SeekOnAssign(ConsumerRebalanceListener):  # type: ignore[misc]
    """Seeks newly assigned partitions to the positions the source holds."""

    def __init__(self, source: KafkaSource) -> None:
        self._source = source

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        self._source._on_revoked(revoked)

    def on_partitions_lost(self, lost: list[TopicPartition]) -> None:
        self._source._on_revoked(lost)

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        self._source._on_assigned(assigned)


class KafkaSource:
    """Messages of one topic, read as a member of a consumer group.

    Parameters
    ----------
    bootstrap_servers:
        ``host:port`` of one or more brokers (a list or a comma-separated string).
    topic, group_id:
        What to read, and the consumer group that shares it and keeps the offsets.
    security:
        kafka-python security options (:data:`SECURITY_OPTIONS`), e.g. from
        :func:`security_from_env`.
    request_timeout_ms:
        How long a request may wait for the broker before the client gives up on it.
    bootstrap_timeout_ms:
        How long the first contact with the brokers may take. The consumer is created
        on the first :meth:`poll`; while no broker answers, each poll waits this long
        and returns no message.
    lag_interval:
        Seconds between refreshes of the end offsets used by :meth:`lag` when the
        fetch responses did not tell them.
    prefetch_bytes:
        While fewer message bytes than this wait in the source, every poll also asks
        the consumer for more (which keeps a fetch in flight during learning).
    max_batch_bytes, max_record_bytes:
        A record batch whose records decompress to more bytes than ``max_batch_bytes``,
        and a record whose value or key is larger than ``max_record_bytes``, cannot be
        read: they are skipped and reported by :meth:`unreadable`, as are batches with
        a bad CRC, a codec that fails or records that break the format.
    budget:
        Bounds the waits of :meth:`commit` and :meth:`close` once a stop began.
    on_offset_reset:
        What to do with a partition whose log went back behind the position (see
        :mod:`streamlearn.sources.log_guard`): ``wait`` holds it (not ready, logged) until
        an operator decides, ``earliest`` reads the log again from its start.
    consumer_options:
        More KafkaConsumer options, passed as they are.
    """

    def __init__(
        self,
        bootstrap_servers: str | list[str],
        topic: str,
        group_id: str,
        *,
        security: Mapping[str, str] | None = None,
        client_id: str = "streamlearn",
        session_timeout_ms: int = SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
        request_timeout_ms: int = 30000,
        bootstrap_timeout_ms: int = BOOTSTRAP_TIMEOUT_MS,
        lag_interval: float = 5.0,
        prefetch_bytes: int = 4 << 20,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        budget: StopBudget | None = None,
        on_offset_reset: str = "wait",
        **consumer_options: Any,
    ) -> None:
        if on_offset_reset not in POLICIES:
            raise InvalidParameterError(
                f"--on-offset-reset must be one of {', '.join(POLICIES)}, got {on_offset_reset!r}"
            )
        tame_kafka_logs()
        warm_up()  # compiles, if it must, before a consumer exists to send heartbeats
        self.topic = topic
        self.stream = f"kafka:{topic}"
        self.group_id = group_id
        self.lag_interval = lag_interval
        self._config: dict[str, Any] = {
            "bootstrap_servers": bootstrap_servers,
            "group_id": group_id,
            "client_id": client_id,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            # records of aborted transactions are never learned
            "isolation_level": "read_committed",
            # a topic that does not exist (a typo, a broker that restarted empty) is
            # waited for, never created by asking for its metadata
            "allow_auto_create_topics": False,
            "session_timeout_ms": session_timeout_ms,
            "heartbeat_interval_ms": heartbeat_interval_ms,
            "request_timeout_ms": request_timeout_ms,
            "bootstrap_timeout_ms": bootstrap_timeout_ms,
            **checked_security(security),
            **consumer_options,
        }
        self._consumer: KafkaConsumer | None = None
        self._positions: Positions = {}  # next offset to return, per partition
        self._assigned: set[int] = set()
        #: the offsets this member last committed, while it keeps their partitions
        self._committed: Positions = {}
        self._polls = PollFailures()
        self._end_offsets: Positions = {}
        self._end_offsets_time = -float("inf")
        # fetched, not yet returned: messages, and records skipped between them
        self._fetched = FetchedMessages()
        self._unreadable: list[Unreadable] = []  # skipped up to the position returned
        self.prefetch_bytes = prefetch_bytes
        self.max_batch_bytes = max_batch_bytes
        self.max_record_bytes = max_record_bytes
        self.budget = budget if budget is not None else StopBudget()
        #: records of aborted transactions are skipped unless ``read_uncommitted``
        self.isolation_level: str = self._config["isolation_level"]
        self.on_offset_reset = on_offset_reset
        self._guard = LogGuard()
        self._held: dict[int, str] = {}  # partitions held back, and why
        self._held_logged = -float("inf")
        #: partitions without a position start at their log's start, not the group's
        #: committed offset (after a checkpoint fallback)
        self._others_from_earliest = False
        #: whether the consumer hands over record batches (False: records one by one)
        self.block_records = False
        #: told of the partitions the group assigns (asked where to resume them, before
        #: they are sought) and of those about to be revoked, before they are
        self._listener: RebalanceListener | None = None

    def listen(self, listener: RebalanceListener) -> None:
        """Tell ``listener`` of every assignment and revocation (see
        :class:`~streamlearn.sources.base.Rebalances`)."""
        self._listener = listener

    def _connected_consumer(self) -> Any:
        """The consumer, created (and subscribed) on first use; raises if unreachable."""
        if self._consumer is None:
            consumer = KafkaConsumer.__new__(KafkaConsumer)
            try:
                consumer.__init__(**self._config)
            except KafkaError:
                # the failed constructor already started its IO thread: stop it
                client = getattr(consumer, "_client", None)
                if client is not None:
                    client.close()
                raise
            self.block_records = install_block_records(
                consumer,
                max_batch_bytes=self.max_batch_bytes,
                max_record_bytes=self.max_record_bytes,
            )
            _keep_finished_joins(consumer)
            consumer.subscribe(topics=[self.topic], listener=_SeekOnAssign(self))
            self._consumer = consumer
        return self._consumer

    def _on_revoked(self, revoked: list[TopicPartition]) -> None:
        if self._listener is not None:
            self._listener.partitions_revoking({tp.partition for tp in revoked} & self._assigned)
        self._assigned -= {tp.partition for tp in revoked}
        for tp in revoked:
            self._committed.pop(tp.partition, None)
        self._fetched.drop({tp.partition for tp in revoked})
        log.info("partitions revoked: %s", sorted(tp.partition for tp in revoked))

    def _on_assigned(self, assigned: list[TopicPartition]) -> None:
        consumer = self._consumer
        self._assigned |= {tp.partition for tp in assigned}  # eager or incremental alike
        for tp in assigned:  # another member may have committed meanwhile
            self._committed.pop(tp.partition, None)
        self._fetched.drop({tp.partition for tp in assigned})
        if self._listener is not None:
            starts = self._listener.partitions_assigned({tp.partition for tp in assigned})
            self._positions.update(starts)
        for tp in assigned:
            offset = self._positions.get(tp.partition)
            if consumer is None:
                continue
            if offset is not None:
                consumer.seek(tp, offset)
            elif self._others_from_earliest:
                consumer.seek_to_beginning(tp)
                log.info("partition %d starts at its log's start: the checkpoint resumed "
                         "from holds no position for it", tp.partition)  # fmt: skip
            if tp.partition in self._held:
                consumer.pause(tp)
        log.info(
            "partitions assigned: %s (seeking %s)",
            sorted(self._assigned),
            {p: self._positions[p] for p in sorted(self._assigned) if p in self._positions},
        )

    def poll(self, timeout: float, max_messages: int) -> MessageBatch:
        """Up to ``max_messages`` messages, waiting at most ``timeout`` s; none on a failure."""
        if self._fetched.count < max_messages or self._fetched.bytes < self.prefetch_bytes:
            # polling the consumer also sends the next fetch: keep one in flight while
            # the daemon learns what came, up to prefetch_bytes held here
            wait = 0.0 if self._fetched.count else timeout
            try:
                consumer = self._connected_consumer()
                fetched = consumer.poll(timeout_ms=int(wait * 1000), max_records=max_messages)
                self._queue_all(fetched)
                if fetched:
                    # a poll that waited for data returns it without asking for more: a
                    # second one, that does not wait, sends the next fetch before we learn
                    self._queue_all(consumer.poll(timeout_ms=0, max_records=max_messages))
            except NoOffsetForPartitionError as error:  # no retry would change these
                raise InvalidParameterError(
                    f"the group has no committed offset to start from and the consumer "
                    f"option auto_offset_reset is none: {error}"
                ) from error
            except KafkaConfigurationError as error:
                raise InvalidParameterError(
                    f"the Kafka consumer cannot work with its options: {error}"
                ) from error
            except (KafkaError, OSError) as error:
                self._polls.failed(error, expected=True)
            except Exception as error:  # kafka-python's own faults: logged, retried
                self._polls.failed(error, expected=False)
            else:
                self._polls.worked()
                self._check_log_ends(consumer)
        return self._fetched.take(max_messages, self._positions, self._unreadable)

    def _queue_all(self, fetched: Mapping[Any, list[Any]]) -> None:
        for tp, items in fetched.items():
            self._queue(tp.partition, items)

    def _queue(self, partition: int, items: list[Any]) -> None:
        """Keep what one partition's fetch gave: record blocks, records one by one, and
        records that cannot be read (none of a partition held back, nor, when they come
        from behind its position, of one whose log went back)."""
        if partition in self._held or not items:
            return
        first = first_offset(items[0])
        if behind(first, self._positions.get(partition)):
            self._log_went_back(partition, first)
            return
        self._fetched.add(partition, items)

    def _check_log_ends(self, consumer: Any) -> None:
        """Compare the assigned partitions' log ends with the furthest seen (see
        :class:`LogGuard`); remind, once a minute, of the partitions held back."""
        ends: Positions = {}
        for partition in self._assigned - set(self._held):
            end = consumer.highwater(TopicPartition(self.topic, partition))
            if end is not None:
                ends[partition] = int(end)
        for partition in sorted(self._guard.observe_ends(ends, self._positions, time.monotonic())):
            self._log_went_back(partition, ends[partition])
        now = time.monotonic()
        if self._held and now - self._held_logged >= FAILING_LOG_INTERVAL:
            self._held_logged = now
            for partition, why in sorted(self._held.items()):
                log.error("partition %d is held back: %s", partition, why)

    def _log_went_back(self, partition: int, end: int) -> None:
        """``partition``'s log went back behind the position (its end, or the first
        offset fetched, is ``end``): hold it, or read it again from its start
        (``on_offset_reset``); what was fetched from it is dropped either way."""
        position = self._positions.get(partition)
        tp = TopicPartition(self.topic, partition)
        consumer = self._consumer
        self._fetched.drop({partition})
        if self.on_offset_reset == "earliest":
            log.warning("partition %d: its log went back to %d, behind offset %s learned from "
                        "it (the topic created again, or the broker's storage lost): it is "
                        "read again from its start (--on-offset-reset earliest)",
                        partition, end, position)  # fmt: skip
            self._guard.restart(partition, end)
            start = 0
            if consumer is not None:
                try:  # where the log starts now: the position, as if sought there
                    start = beginning_offsets(consumer, [tp], timeout_ms=5000)[tp]
                except KafkaError as error:
                    log.warning("partition %d: its log's start is unknown (%r): 0", partition,
                                error)  # fmt: skip
                consumer.seek(tp, start)
            self._positions[partition] = start
            return
        self._held[partition] = (
            f"its log went back to {end}, behind offset {position} learned from it (the "
            "topic created again, or the broker's storage lost); nothing is read from it "
            "until the daemon is started again with --on-offset-reset earliest (to learn "
            "the log as it is now from its start) or from another checkpoint"
        )
        log.error("partition %d is held back: %s", partition, self._held[partition])
        if consumer is not None:
            consumer.pause(tp)

    def log_ends(self) -> Positions:
        """The furthest end of each partition's log seen so far."""
        return dict(self._guard.ends)

    def expect(self, log_ends: Positions, *, others_from_earliest: bool) -> None:
        """Resume from a checkpoint that saw these ends (see
        :class:`~streamlearn.sources.base.GuardsPositions`)."""
        self._guard.expect(log_ends)
        self._others_from_earliest = others_from_earliest

    def held(self) -> dict[int, str]:
        """The partitions held back, with why."""
        return dict(self._held)

    def unreadable(self) -> list[Unreadable]:
        """The records skipped as unreadable since the last call, up to the position
        of the last poll."""
        found, self._unreadable = self._unreadable, []
        return found

    def position(self) -> Positions:
        """Per partition, the offset after the last message returned (or sought to)."""
        return dict(self._positions)

    def seek(self, positions: Positions) -> None:
        """Resume these partitions from these offsets, now if assigned, else on assignment."""
        self._positions.update(positions)
        self._fetched.drop(set(positions))
        consumer = self._consumer
        if consumer is None:
            return
        for partition, offset in positions.items():
            if partition in self._assigned:
                try:
                    consumer.seek(TopicPartition(self.topic, partition), offset)
                except KafkaError as error:  # revoked meanwhile: seeks again on assignment
                    log.warning("seek of partition %d failed: %r", partition, error)

    def commit(self, positions: Positions, timeout: float = 10.0) -> None:
        """Commit these offsets of the partitions assigned to this member for the group,
        waiting at most ``timeout`` s.

        The positions of partitions it no longer owns are left out: they are stale once
        another member reads those partitions, and committing them would move the
        group's offsets back. A failure is logged, not raised: the checkpoint holds the
        positions, and the next commit carries them again. Offsets this member has
        committed already are not sent again (the checkpoint of a replay, with no new
        message, would otherwise wait on the broker for nothing).
        """
        owned = {p: offset for p, offset in positions.items() if p in self._assigned}
        if not owned or all(self._committed.get(p) == o for p, o in owned.items()):
            return
        offsets = {
            TopicPartition(self.topic, partition): OffsetAndMetadata(offset, "", -1)
            for partition, offset in owned.items()
        }
        consumer = self._consumer
        if consumer is None:
            return
        # in steps, so that a stop that begins meanwhile (a SIGTERM while the broker does
        # not answer) cuts the wait to what the stop's deadline leaves
        deadline = time.monotonic() + timeout
        while True:
            step = self.budget.cap(min(COMMIT_STEP, deadline - time.monotonic()))
            try:
                consumer.commit(offsets, timeout_ms=max(1, int(step * 1000)))
            except KafkaTimeoutError as error:
                if self.budget.cap(deadline - time.monotonic()) > 0:
                    continue
                log.warning("Kafka commit of %s failed: %r", owned, error)
            except KafkaError as error:
                log.warning("Kafka commit of %s failed: %r", owned, error)
            else:
                self._committed.update(owned)
            return

    def assigned(self) -> set[int]:
        """The partitions the group assigns to this member now."""
        return set(self._assigned)

    def ready(self) -> bool:
        """Whether partitions are assigned, the last poll worked, the group is joined,
        the broker answers its heartbeats and no partition is held back."""
        consumer = self._consumer
        if consumer is None or self._polls.failing or not self._assigned or self._held:
            return False
        coordinator = getattr(consumer, "_coordinator", None)
        if coordinator is None:
            return True
        return not coordinator.coordinator_unknown() and answers(coordinator)

    def exhausted(self) -> bool:
        """Never: a topic can always receive more."""
        return False

    def lag(self) -> Positions:
        """Per assigned partition with a known position, messages not yet returned."""
        consumer = self._consumer
        if consumer is None or not self._assigned:
            return {}
        ends: Positions = {}
        for partition in self._assigned:
            highwater = consumer.highwater(TopicPartition(self.topic, partition))
            if highwater is not None:
                ends[partition] = highwater
        missing = self._assigned - set(ends)
        now = time.monotonic()
        if missing and self.ready() and now - self._end_offsets_time >= self.lag_interval:
            self._end_offsets_time = now
            try:
                answer = end_offsets(
                    consumer, [TopicPartition(self.topic, p) for p in missing], timeout_ms=1000
                )
                self._end_offsets.update({tp.partition: end for tp, end in answer.items()})
            except KafkaError as error:
                log.debug("end offsets failed: %r", error)
        for partition in missing:
            if partition in self._end_offsets:
                ends[partition] = self._end_offsets[partition]
        return {
            p: max(end - self._positions[p], 0) for p, end in ends.items() if p in self._positions
        }

    def close(self) -> None:
        """Leave the group (without committing) and close the connections."""
        if self._consumer is not None:
            timeout_ms = int(self.budget.cap(CLOSE_TIMEOUT_MS / 1000) * 1000)
            try:  # bounded: the group coordinator may be unreachable
                self._consumer.close(autocommit=False, timeout_ms=timeout_ms)
            except KafkaError as error:
                log.warning("Kafka consumer close failed: %r", error)
            self._consumer = None
            self._assigned = set()
            self._committed = {}
            self._fetched.clear()
