"""``streamlearn serve``: wire a source, the daemon, checkpoints, metrics and signals."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

import numpy as np

from streamlearn import __version__
from streamlearn._kernels import announce_compilation
from streamlearn.checkpoint.store import CheckpointStore
from streamlearn.config import (
    DEFAULT_HTTP_ADDR,
    DEFAULT_HTTP_MAX_BODY,
    DEFAULT_HTTP_NICE,
    DEFAULT_MAX_FEATURES,
    MAX_FEATURES_OPTION,
    ONE_VS_REST_OPTION,
    TAU_POS_KAPPA_OPTION,
    LearnerSpec,
    ModelSpec,
    check_max_features,
    features_holding,
)
from streamlearn.daemon import Daemon, DaemonSettings, FirstLines
from streamlearn.errors import InputError, InvalidParameterError
from streamlearn.group.kinds import member_shares
from streamlearn.group.member import GroupMember, new_member_id
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.signing import secret_from_env
from streamlearn.http.api import Decode, api_handler
from streamlearn.http.auth import check_exposure, token_from_env
from streamlearn.http.live import LiveModel
from streamlearn.http.ops import ops_app
from streamlearn.http.pending import SharedPending
from streamlearn.http.server import HttpServer
from streamlearn.jobs.allocator import keep_freed_memory
from streamlearn.jobs.blas import one_blas_thread
from streamlearn.jobs.sources import (
    ANSWERS_ON_STDOUT,
    BROKER,
    FORMATS,
    KEYS,
    REBALANCES,
    SOURCES,
    needs,
    source_kind,
)
from streamlearn.jobs.systemd import notify as notify_systemd
from streamlearn.keyed.models import KeyedModels
from streamlearn.keyed.models import warm_up as warm_up_keyed
from streamlearn.keyed.settings import KeyedSettings
from streamlearn.learn import LabelledRows, Model
from streamlearn.learn.params import plain_params
from streamlearn.metrics import DaemonMetrics, new_registry
from streamlearn.options import CHECKPOINTS, GROUP, HTTP, INPUT, KAFKA, ONE_VS_REST, command_line
from streamlearn.parse import ParsedRows
from streamlearn.parse.messages import FORMATS as MESSAGE_FORMATS
from streamlearn.parse.messages import MessageDecoder, decode_message
from streamlearn.pending import PendingExamples
from streamlearn.replay import ReplaySchedule
from streamlearn.sources.base import Message, MessageBatch, Rebalances, Sink, Source
from streamlearn.sources.kafka_codecs import (
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_RECORD_BYTES,
    PRODUCER_CODECS,
    codec_of,
)
from streamlearn.sources.kafka_codecs import REASONS as UNREADABLE_REASONS
from streamlearn.sources.log_guard import POLICIES as OFFSET_RESET_POLICIES
from streamlearn.sources.stdout import StdoutSink
from streamlearn.sources.stopping import StopBudget

log = logging.getLogger("streamlearn.serve")

#: the modulus of hashed feature names unless told otherwise (2^20 weights: 8 MB)
DEFAULT_HASH_FEATURES = 1 << 20
#: the largest ``--http-max-body`` (bytes)
MAX_HTTP_MAX_BODY = 1 << 30
#: the largest ``--max-record-bytes`` and ``--max-batch-bytes``
MAX_KAFKA_BYTES = 1 << 31
#: examples predicted with an id kept for their label, and seconds each waits, at most
DEFAULT_PENDING_MAX, DEFAULT_PENDING_TTL = 100_000, 3600.0
#: seconds a poll waits at most when the API learns (a posted example waits one poll)
LEARN_POLL_TIMEOUT = 0.02
#: seconds after its stop budget at which a stop that still runs is cut short
STOP_GRACE = 1.5


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``streamlearn serve`` needs, decided before it starts (each field that an
    option of ``serve`` sets declares it: :mod:`streamlearn.options`)."""

    learner: LearnerSpec
    settings: DaemonSettings = field(default_factory=DaemonSettings)
    source: str = field(
        default="stdin",
        metadata=command_line(
            "Where examples come from.", INPUT, "|".join(SOURCES), choices=tuple(SOURCES)
        ),
    )
    bootstrap_servers: str | None = field(
        default=None, metadata=command_line("Brokers, host:port,host:port.", KAFKA, "HOSTS")
    )
    topic: str | None = field(
        default=None, metadata=command_line("Topic of the examples.", KAFKA, "NAME")
    )
    group: str = field(
        default="streamlearn", metadata=command_line("Consumer group.", KAFKA, "NAME")
    )
    #: Kafka consumer options as ``NAME=VALUE`` texts (``--consumer-option``)
    consumer_options: tuple[str, ...] = field(
        default=(),
        metadata=command_line(
            "Consumer option NAME=VALUE, repeatable.", KAFKA, "K=V", name="consumer-option"
        ),
    )
    predictions_topic: str | None = field(
        default=None, metadata=command_line("Topic of predictions (stdin: stdout).", KAFKA, "NAME")
    )
    dead_letter_topic: str | None = field(
        default=None,
        metadata=command_line("Topic of rejected or unreadable messages.", KAFKA, "NAME"),
    )
    #: a topic of labels for unlabelled keyed messages: key = the message's key, value =
    #: its label (None: none)
    labels_topic: str | None = field(
        default=None,
        metadata=command_line("Labels for keyed unlabelled messages (key = id).", KAFKA, "NAME"),
    )
    #: the codec of the batches written to Kafka (predictions, dead letters, sync and
    #: state records)
    compression: str = field(
        default="none",
        metadata=command_line(
            f"Of what serve writes: {', '.join(PRODUCER_CODECS)}.",
            KAFKA,
            "CODEC",
            choices=PRODUCER_CODECS,
        ),
    )
    #: a Kafka record larger than this (value or key) cannot be read: skipped
    max_record_bytes: int = field(
        default=DEFAULT_MAX_RECORD_BYTES,
        metadata=command_line("Skip larger messages as unreadable.", KAFKA, "N"),
    )
    #: a Kafka record batch whose records decompress to more than this: skipped
    max_batch_bytes: int = field(
        default=DEFAULT_MAX_BATCH_BYTES,
        metadata=command_line("Skip batches that decompress to more.", KAFKA, "N"),
    )
    #: a partition whose log went back behind what was learned: held, or read again
    on_offset_reset: str = field(
        default="wait",
        metadata=command_line(
            "A log that went back: hold it, or relearn it.",
            KAFKA,
            "|".join(OFFSET_RESET_POLICIES),
            choices=OFFSET_RESET_POLICIES,
        ),
    )
    message_format: str = field(
        default="svmlight",
        metadata=command_line(
            f"Messages without a content type: {', '.join(MESSAGE_FORMATS)}.",
            KAFKA,
            "FORMAT",
            name="format",
            choices=MESSAGE_FORMATS,
        ),
    )
    checkpoint_dir: str | None = field(
        default=None,
        metadata=command_line("Directory of checkpoints (none: none).", CHECKPOINTS, "DIR"),
    )
    keep: int = field(default=3, metadata=command_line("Checkpoints to keep.", CHECKPOINTS, "N"))
    metrics_addr: str = field(
        default="127.0.0.1:9108",
        metadata=command_line("Of /metrics, /healthz, /readyz.", HTTP, "HOST:PORT"),
    )
    max_features: int = field(default=DEFAULT_MAX_FEATURES, metadata=MAX_FEATURES_OPTION)
    lines_per_message: int = 1000
    #: one binary learner per label (a :class:`~streamlearn.learn.ModelBank`)
    one_vs_rest: bool = field(default=False, metadata=ONE_VS_REST_OPTION)
    #: PAUM banks: kappa of the per-label margin of positives
    tau_pos_kappa: float | None = field(default=None, metadata=TAU_POS_KAPPA_OPTION)
    #: export a bank's ``streamlearn_label_*`` series (one per label and family)
    per_label_metrics: bool = field(
        default=False,
        metadata=command_line("Per-label series too.", ONE_VS_REST, show_default=False),
    )
    #: HOST:PORT of the HTTP API (/predict, /learn, /model), or None for none
    http_addr: str | None = field(
        default=DEFAULT_HTTP_ADDR,
        metadata=command_line(
            "Of the HTTP API, or off (a token off loopback).", HTTP, "HOST:PORT", off="off"
        ),
    )
    #: whether POST /learn learns (otherwise it answers 403)
    http_learn: bool = field(
        default=False,
        metadata=command_line("Learn what is POSTed to /learn.", HTTP, show_default=False),
    )
    #: examples predicted with an id kept for their label, at most (the oldest evicted)
    pending_max: int = field(
        default=DEFAULT_PENDING_MAX,
        metadata=command_line("Examples predicted with an id kept for a label.", HTTP, "N"),
    )
    #: seconds an example predicted with an id waits for its label, at most
    pending_ttl: float = field(
        default=DEFAULT_PENDING_TTL,
        metadata=command_line("How long one waits for its label.", HTTP, "DURATION", duration=True),
    )
    #: bytes of the largest request body the API reads
    http_max_body: int = field(
        default=DEFAULT_HTTP_MAX_BODY,
        metadata=command_line("Bytes of the largest request body.", HTTP, "N"),
    )
    #: how far below learning the HTTP thread's scheduling priority is (Linux; 0: equal)
    http_nice: int = field(
        default=DEFAULT_HTTP_NICE,
        metadata=command_line("Nice steps of the HTTP thread below learning.", HTTP, "N"),
    )
    #: where examples given by feature name put each name (``crc32(name) % N``); None:
    #: 2^20, or ``max_features`` when it is smaller
    hash_features: int | None = field(
        default=None, metadata=command_line("JSON feature names hash to N indices.", INPUT, "N")
    )
    #: a learning group's sync topic (None: the daemon learns alone)
    sync_topic: str | None = field(
        default=None,
        metadata=command_line("Join the group that syncs on this topic.", GROUP, "NAME"),
    )
    #: when a member of a learning group publishes its share
    sync: SyncPolicy = field(default_factory=SyncPolicy)
    #: this member's id in the learning group (None: a new one, host-pid-random)
    member_id: str | None = field(
        default=None, metadata=command_line("Id in the group (host-pid-random).", GROUP, "ID")
    )
    #: one model per message key (``--model-key``; None: one model)
    keyed: KeyedSettings | None = None

    def __post_init__(self) -> None:
        ModelSpec(self.learner, self.one_vs_rest, self.tau_pos_kappa)  # checks its options
        check_max_features(self.max_features)
        kind = source_kind(self.source)
        if kind.offers(BROKER) and not (self.bootstrap_servers and self.topic):
            raise InvalidParameterError(
                f"--source {self.source} needs --bootstrap-servers and --topic"
            )
        if self.consumer_options and not kind.offers(BROKER):
            raise InvalidParameterError(needs("--consumer-option", BROKER))
        if self.on_offset_reset not in OFFSET_RESET_POLICIES:
            raise InvalidParameterError(
                f"--on-offset-reset must be one of {', '.join(OFFSET_RESET_POLICIES)}, got "
                f"{self.on_offset_reset!r}"
            )
        if self.compression not in PRODUCER_CODECS:
            raise InvalidParameterError(
                f"--compression must be one of {', '.join(PRODUCER_CODECS)}, got "
                f"{self.compression!r}"
            )
        for option, value in (("--max-record-bytes", self.max_record_bytes),
                              ("--max-batch-bytes", self.max_batch_bytes)):  # fmt: skip
            if not 1 <= value <= MAX_KAFKA_BYTES:
                raise InvalidParameterError(
                    f"{option} must be in [1, {MAX_KAFKA_BYTES}] bytes, got {value}"
                )
        self._check_group()
        self._check_keyed()
        self._check_labels_topic()
        self._check_kafka_names()
        if self.message_format not in MESSAGE_FORMATS:
            raise InvalidParameterError(
                f"--format must be one of {', '.join(MESSAGE_FORMATS)}, got {self.message_format!r}"
            )
        _address(self.metrics_addr, "--metrics-addr")
        if self.http_addr is not None:
            _address(self.http_addr, "--http-addr")
        elif self.http_learn:
            raise InvalidParameterError("--http-learn needs an HTTP API (--http-addr)")
        PendingExamples(self.pending_max, self.pending_ttl)  # checks the bounds
        if not 1 <= self.http_max_body <= MAX_HTTP_MAX_BODY:
            raise InvalidParameterError(
                f"--http-max-body must be in [1, {MAX_HTTP_MAX_BODY}] bytes, got "
                f"{self.http_max_body}"
            )
        if not 0 <= self.http_nice <= 19:
            raise InvalidParameterError(f"--http-nice must be in [0, 19], got {self.http_nice}")
        if self.hash_features is not None and not 1 <= self.hash_features <= self.max_features:
            raise InvalidParameterError(
                f"--hash-features must be in [1, --max-features ({self.max_features})], "
                f"got {self.hash_features}"
            )
        if self.message_format != "svmlight" and not kind.offers(FORMATS):
            # standard input is cut into messages at newlines
            raise InvalidParameterError(
                f"{needs(f'--format {self.message_format}', FORMATS)}: --source "
                f"{self.source} is read as svmlight lines"
            )

    def _check_group(self) -> None:
        """A learning group: Kafka, one binary learner (any Delta: with ``auto`` or
        ``first`` the members agree on the largest they settle), its share on the sync
        topic (and its window in ``--checkpoint-dir``, when given)."""
        if self.sync_topic is None:
            if self.member_id is not None:
                raise InvalidParameterError("--member-id needs --sync-topic")
            return
        if not source_kind(self.source).offers(REBALANCES):
            raise InvalidParameterError(needs("--sync-topic", REBALANCES))
        member_shares(self.model.build())  # a model whose shares a group can sum
        if self.http_learn:
            raise InvalidParameterError(
                "a member of a learning group learns from its partitions only: examples "
                "posted to POST /learn belong to no partition, so the group could neither "
                "count them once nor hand them on when the member leaves; drop --http-learn "
                "and produce them to --topic"
            )

    def _check_keyed(self) -> None:
        """Keyed models: Kafka's message keys, models (binary or banks) that learn from
        their first example, their state on the state topic (not in checkpoints)."""
        if self.keyed is None:
            return
        if not source_kind(self.source).offers(KEYS):
            raise InvalidParameterError(
                f"{needs('--model-key', KEYS)}: the models are those of the message keys"
            )
        refused = {
            "--sync-topic": self.sync_topic is not None,
            "--checkpoint-dir": bool(self.checkpoint_dir),
        }
        why = {
            "--sync-topic": "a learning group learns one model for all keys",
            "--checkpoint-dir": "the models' records on the state topic are their checkpoints",
        }
        for option, given in refused.items():
            if given:
                raise InvalidParameterError(f"--model-key: drop {option} ({why[option]})")

    def _check_labels_topic(self) -> None:
        """A labels topic: Kafka (its keys are the ids), one model."""
        if self.labels_topic is None:
            return
        if not source_kind(self.source).offers(BROKER):
            raise InvalidParameterError(needs("--labels-topic", BROKER))
        if self.sync_topic is not None or self.keyed is not None:
            raise InvalidParameterError(
                "--labels-topic joins labels to one model's kept examples: drop "
                + ("--sync-topic" if self.sync_topic is not None else "--model-key")
                + " (a label's example could be on another member, or in another key's model)"
            )

    @property
    def state_topic(self) -> str | None:
        """The keyed models' state topic (None: one model)."""
        if self.keyed is None or self.topic is None:
            return None
        return self.keyed.topic_for(self.group, self.topic)

    def _check_kafka_names(self) -> None:
        """Consumer options and topic names, checked before anything starts (a bad one
        was otherwise found at its first use, in a traceback, and again at every start)."""
        topics = {"--predictions-topic": self.predictions_topic,
                  "--dead-letter-topic": self.dead_letter_topic}  # fmt: skip
        if source_kind(self.source).offers(BROKER):
            topics["--topic"] = self.topic
        if self.sync_topic is not None:
            topics["--sync-topic"] = self.sync_topic
        if self.state_topic is not None:
            topics["--state-topic"] = self.state_topic
        if self.labels_topic is not None:
            topics["--labels-topic"] = self.labels_topic
        named = {option: name for option, name in topics.items() if name}
        if not named and not self.consumer_options:
            return
        if not self.bootstrap_servers:
            raise InvalidParameterError(f"{', '.join(named)} needs --bootstrap-servers")
        from streamlearn.sources.kafka import check_topic_name, consumer_options

        consumer_options(self.consumer_options)
        for option, name in named.items():
            check_topic_name(option, name)

    @property
    def hashed_features(self) -> int:
        """The modulus of hashed feature names."""
        if self.hash_features is not None:
            return self.hash_features
        return min(DEFAULT_HASH_FEATURES, self.max_features)

    @property
    def model(self) -> ModelSpec:
        """What the daemon learns: a learner, or a one-vs-rest bank of them."""
        return ModelSpec(self.learner, self.one_vs_rest, self.tau_pos_kappa)


def run_serve(config: ServeConfig) -> None:
    """Run the daemon until SIGTERM/SIGINT (or the end of standard input)."""
    if keep_freed_memory():
        log.debug("allocator: freed memory is kept for reuse")
    if one_blas_thread():
        log.debug("BLAS: one thread (numpy's dot products on the calling thread)")
    # the API's token guards what changes state on the metrics address too (POST /checkpoint)
    token = token_from_env(os.environ)
    if config.http_addr is not None:
        check_exposure(_address(config.http_addr, "--http-addr")[0], token, "--http-addr")
    # from now on a signal is handled, not fatal (the warm-up can take seconds): systemd
    # may send a reload or a stop
    stopper = _Stopper(StopBudget(), config.settings.stop_timeout)
    previous = stopper.install()
    notify_systemd("READY=1")
    log.info("starting: %s from %s", config.learner.algorithm, config.source)
    try:
        _serve(config, token, stopper)
    finally:
        _restore_signals(previous)


def _serve(config: ServeConfig, token: str | None, stopper: _Stopper) -> None:
    """:func:`run_serve` once the signal handlers are in place."""
    config = _with_member_id(config)
    budget = stopper.budget
    store = (
        CheckpointStore(Path(config.checkpoint_dir), keep=config.keep)
        if config.checkpoint_dir
        else None
    )
    if store is not None:
        store.check_writable()
        store.lock()  # held until the process ends: one daemon writes a directory
    source = _warmed_source(config, budget)
    sink, dead_letters = _sinks(config, budget)

    decoder = _decoder(config, config.max_features)

    def decode(messages: MessageBatch) -> tuple[ParsedRows, FirstLines]:
        return decoder.decode_columns(messages.data, messages.spans)  # the latest decoder

    holder: dict[str, Daemon] = {}
    metrics = DaemonMetrics(
        new_registry(),
        lambda: holder["daemon"].snapshot if holder else None,
        per_label=config.per_label_metrics,
        unreadable_reasons=UNREADABLE_REASONS if source_kind(config.source).offers(BROKER) else (),
    )
    pending = _pending(config)
    live = (
        LiveModel(pending=pending if config.http_learn else None)
        if config.http_addr is not None
        else None
    )
    labels = _labels_source(config, budget)
    settings = config.settings
    if config.http_learn:  # a posted example waits for the next turn: keep turns short
        settings = replace(settings, poll_timeout=min(settings.poll_timeout, LEARN_POLL_TIMEOUT))
    group, sync_topic = _group(config, source, budget)
    keyed, state_topic = _keyed(config, budget)
    daemon = Daemon(
        config.model, source, decode=decode, settings=settings, store=store, sink=sink,
        dead_letters=dead_letters, observer=metrics, live=live, group=group, keyed=keyed,
        budget=budget, pending=pending, labels=labels,
    )  # fmt: skip
    holder["daemon"] = daemon
    if isinstance(source, Rebalances):  # a group's member, keyed models: partitions move
        source.listen(daemon)
    asked = info(daemon.learner)
    metrics.set_info(*asked, version=__version__)
    if store is not None or keyed is not None:  # a daemon that checkpoints
        metrics.set_checkpoint_interval(settings.checkpoint_interval)
    # the daemon takes the signals before its endpoint answers: once it does, a SIGTERM
    # stops the daemon cleanly
    stopper.attach(daemon, lambda: daemon.settled)
    server = HttpServer(nice=config.http_nice)
    try:
        ops = ops_app(metrics, ready=daemon.ready, request_checkpoint=daemon.request_checkpoint,
                      checkpoints=store is not None or keyed is not None, token=token)  # fmt: skip
        port = _bind(partial(server.serve, ops), config.metrics_addr, "metrics")
        log.info("metrics on http://%s:%d/metrics", _address(config.metrics_addr)[0], port)
        daemon.restore()
        _warn_of_other_parameters(asked, info(daemon.learner))
        max_features = features_holding(daemon.learner, config.max_features)
        if max_features > config.max_features:
            log.info("the restored model has %d features: --max-features raised", max_features)
            decoder = _decoder(config, max_features)
        # the restored model's own parameters
        metrics.set_info(*info(daemon.learner), version=__version__)
        daemon.take_snapshot()
        if live is not None and config.http_addr is not None:
            api = api_handler(
                live, _body_decoder(config, max_features), learn=config.http_learn,
                token=token, observer=metrics, max_body=config.http_max_body,
            )  # fmt: skip
            port = _bind(partial(server.serve_handler, api, max_body=config.http_max_body),
                         config.http_addr, "the HTTP API")  # fmt: skip
            log.info("HTTP API on http://%s:%d (learning %s)", _address(config.http_addr)[0],
                     port, "on" if config.http_learn else "off")  # fmt: skip
        started = time.monotonic()
        with announce_compilation(log.info):  # numba's JIT after the warm-up: said too
            daemon.run()
        log.info("%s", _summary(daemon, source, time.monotonic() - started))
    finally:
        server.stop()
        # the sync and state topics last: leaving the consumer group writes to them
        _close_all([source, labels, sink, dead_letters, sync_topic, state_topic])


class _Closes(Protocol):
    def close(self) -> None: ...


def _group(
    config: ServeConfig, source: Source, budget: StopBudget
) -> tuple[Callable[[Model], GroupMember] | None, _Closes | None]:
    """How the daemon becomes a member of its learning group, and the sync topic to close
    at the end (None, None: it learns alone)."""
    if config.sync_topic is None:
        return None, None
    from streamlearn.sources.kafka import security_from_env
    from streamlearn.sources.kafka_sync import SyncTopic

    assert config.bootstrap_servers is not None
    secret = secret_from_env(os.environ)  # checked before any client is made
    transport = SyncTopic(
        config.bootstrap_servers, config.sync_topic, security=security_from_env(os.environ),
        compression=codec_of(config.compression), budget=budget,
        consumer_group=config.group, input_topic=config.topic,
    )  # fmt: skip
    member_id = config.member_id or new_member_id()

    def member(model: Model) -> GroupMember:
        algorithm, params = info(model)
        return GroupMember(
            model, transport, member_id=member_id,
            model={"algorithm": algorithm, "params": params}, policy=config.sync,
            max_features=config.max_features, commit=source.commit,
            consumer_group=transport, takeover_wait=_takeover_wait(config), secret=secret,
        )  # fmt: skip

    return member, transport


def _with_member_id(config: ServeConfig) -> ServeConfig:
    """A learning group's member gets its id before its consumer is made, which names
    it (:func:`_member_consumer`)."""
    if config.sync_topic is None or config.member_id is not None:
        return config
    return replace(config, member_id=new_member_id())


def member_consumer(config: ServeConfig, options: dict[str, Any]) -> dict[str, Any]:
    """The consumer options of a learning group's member: its client id names the
    member, so that the others tell from the consumer group who is in it (unless
    ``--consumer-option client_id`` says otherwise)."""
    if config.sync_topic is not None and config.member_id is not None:
        from streamlearn.sources.kafka_sync import member_client_id

        options.setdefault("client_id", member_client_id(config.member_id))
    return options


def _takeover_wait(config: ServeConfig) -> float:
    """Seconds a starting member waits for a process with its id to leave the consumer
    group: one that crashed leaves when its session times out."""
    from streamlearn.sources.kafka import SESSION_TIMEOUT_MS, consumer_options

    session = consumer_options(config.consumer_options).get("session_timeout_ms")
    return 1.5 * int(session or SESSION_TIMEOUT_MS) / 1000 + 2.0


def _keyed(config: ServeConfig, budget: StopBudget) -> tuple[KeyedModels | None, _Closes | None]:
    """The keyed models and their state topic, to close at the end (None, None: the
    daemon learns one model)."""
    if config.keyed is None:
        return None, None
    from streamlearn.sources.kafka import security_from_env
    from streamlearn.sources.kafka_state import StateTopic

    assert config.bootstrap_servers is not None and config.topic is not None
    assert config.state_topic is not None
    store = StateTopic(config.bootstrap_servers, config.state_topic, input_topic=config.topic,
                       security=security_from_env(os.environ),
                       compression=codec_of(config.compression), budget=budget)  # fmt: skip
    model = config.model
    keyed = KeyedModels(
        model.build, model.restore, store, max_models=config.keyed.max_models,
        max_bytes=config.keyed.max_model_bytes, writer=f"streamlearn {__version__}",
        key_ttl=config.keyed.key_ttl,
    )  # fmt: skip
    log.info("one model per message key: %d in memory at most (%d bytes), the others on "
             "the state topic %s", config.keyed.max_models, config.keyed.max_model_bytes,
             config.state_topic)  # fmt: skip
    return keyed, store


def _summary(daemon: Daemon, source: Source, seconds: float) -> str:
    """The line the daemon ends with: why, what it learned, the certificate."""
    snapshot = daemon.snapshot or {}
    why = "end of input" if source.exhausted() else "stopped"
    keyed = snapshot.get("keyed")
    if keyed is not None:
        return (
            f"{why}: {daemon.stream_examples} examples learned in {seconds:.1f} s by the "
            f"models of the keys; {keyed['resident']} in memory, {keyed['stored']} on the "
            f"state topic ({keyed['spilled']} spilled, {keyed['restored']} restored)"
        )
    gap = snapshot.get("certified_gap", snapshot.get("worst_certified_gap"))
    shown = f"{gap:.4g}" if isinstance(gap, float) else "none"
    return (
        f"{why}: {daemon.stream_examples} examples learned in {seconds:.1f} s; window of "
        f"{snapshot.get('buffer_examples', 0)} examples, certified gap {shown}, converged "
        f"{snapshot.get('converged')}"
    )


def _bind(serve: Callable[[str, int], int], address: str, what: str) -> int:
    """``serve(host, port)`` of ``address`` (the bound port); an address that cannot be
    bound is an input error."""
    host, port = _address(address)
    try:
        return serve(host, port)
    except OSError as exc:  # in use, no such host...
        raise InputError(f"cannot serve {what} on {host}:{port}: {exc}") from exc


def _pending(config: ServeConfig) -> SharedPending | None:
    """Where examples predicted with an id wait for their label: with --http-learn (a
    label is learned as a posted example is) or --labels-topic, by a daemon of one
    model."""
    wanted = config.http_learn or config.labels_topic is not None
    if not wanted or config.keyed is not None or config.sync_topic is not None:
        return None
    return SharedPending(PendingExamples(config.pending_max, config.pending_ttl))


def _labels_source(config: ServeConfig, budget: StopBudget) -> Source | None:
    """The consumer of ``--labels-topic`` (in a consumer group of its own: the daemon's
    with ``-labels``), or None."""
    if config.labels_topic is None:
        return None
    from streamlearn.sources.kafka import KafkaSource, consumer_options, security_from_env

    assert config.bootstrap_servers is not None
    return KafkaSource(
        config.bootstrap_servers, config.labels_topic, f"{config.group}-labels",
        security=security_from_env(os.environ), budget=budget,
        **consumer_options(config.consumer_options),
    )  # fmt: skip


def _body_decoder(config: ServeConfig, max_features: int) -> Decode:
    """The HTTP API's decoder of request bodies (its own: the daemon's decodes on another
    thread)."""
    return MessageDecoder(max_features=max_features, hash_features=config.hashed_features).decode_as


def _warn_of_other_parameters(
    asked: tuple[str, dict[str, Any]], restored: tuple[str, dict[str, Any]]
) -> None:
    """Say when the restored model's algorithm or parameters are not the command line's:
    the model goes on with its own, and the options given are not used."""
    (algorithm, params), (held_algorithm, held) = asked, restored
    if algorithm != held_algorithm:
        log.warning("the checkpoint holds a %s model: it goes on as %s, not as %s (--algo)",
                    held_algorithm, held_algorithm, algorithm)  # fmt: skip
        return
    differ = sorted(
        name for name in params.keys() | held.keys() if params.get(name) != held.get(name)
    )
    if differ:
        shown = ", ".join(
            f"{name}={held.get(name)!r} (asked {params.get(name)!r})" for name in differ
        )
        log.warning("the checkpoint's model goes on with its own parameters: %s", shown)


def _close_all(parts: list[_Closes | None]) -> None:
    """Close each part, whatever the others do: a failure to close is logged, so that
    it neither leaves the rest open nor hides the error that ended the run."""
    for part in parts:
        if part is None:
            continue
        try:
            part.close()
        except Exception as exc:
            log.error("closing %s failed: %r", type(part).__name__, exc)


def _decoder(config: ServeConfig, max_features: int) -> MessageDecoder:
    return MessageDecoder(
        default_format=config.message_format,
        max_features=max_features,
        hash_features=config.hashed_features,
    )


def info(model: Model) -> tuple[str, dict[str, Any]]:
    """The algorithm and parameters that ``streamlearn_info`` shows; a bank's say
    ``one_vs_rest=True`` (and its ``tau_pos_kappa`` when set).

    >>> bank = ModelSpec(LearnerSpec("pdm", {"eps": 0.1}), one_vs_rest=True).build()
    >>> info(bank)[1]["one_vs_rest"]
    True
    """
    return model.algorithm, plain_params(model.get_params())


def warm_up(spec: LearnerSpec | ModelSpec) -> None:
    """Run every kernel once on a tiny problem, so the first real example is not slow."""
    model = spec if isinstance(spec, ModelSpec) else ModelSpec(spec)
    # a buffer of one: the second example evicts the first, which the replay takes out
    params = {**model.learner.params, "delta": 0.1, "buffer_size": 1}
    learner_spec = LearnerSpec(model.learner.algorithm, params)
    X = (np.array([0, 1, 2]), np.array([0, 1], dtype=np.int32), np.array([1.0, -1.0]))
    built = ModelSpec(learner_spec, model.one_vs_rest, model.tau_pos_kappa).build()
    labels = (np.array([0, 1, 2]), np.array([1.0, -1.0]))
    if model.one_vs_rest:
        labels = (np.array([0, 1, 3]), np.array([1.0, 1.0, 2.0]))
    built.learn_on_schedule(LabelledRows(*X, *labels), ReplaySchedule(every=1), 0)
    built.replay(max_passes=2)
    built.summary()
    built.answers(X)
    built.predictor().answer_json(X)  # the HTTP API's answers: compiled before /readyz
    tiny = ModelSpec(learner_spec, model.one_vs_rest, model.tau_pos_kappa)
    warm_up_keyed(tiny.build, tiny.restore)  # serve --model-key: keys learned together
    decode_message(b"+1 1:1\n", {}, default_format="svmlight")
    warm = MessageBatch.from_messages([Message(b"+1 1:1\n"), Message(b"-1 2:1")])
    MessageDecoder().decode_columns(warm.data, warm.spans)


def _warmed_source(config: ServeConfig, budget: StopBudget | None = None) -> Source:
    """The source, once the kernels the daemon runs are compiled (or loaded): the
    learner's and the decoder's here, the record-batch decoder by a Kafka source as it
    is made. Says so when it compiles: a first run spends seconds on it, which would
    otherwise fall in the stream (with Kafka, while the consumer's heartbeats wait for
    the GIL)."""
    with announce_compilation(log.info):
        warm_up(config.model)
        source = _source(config, budget)
    return source


def _source(config: ServeConfig, budget: StopBudget | None = None) -> Source:
    return source_kind(config.source).make(config, budget)


def _sinks(
    config: ServeConfig, budget: StopBudget | None = None
) -> tuple[Sink | None, Sink | None]:
    if source_kind(config.source).offers(ANSWERS_ON_STDOUT) and config.predictions_topic is None:
        return StdoutSink(), None
    if config.bootstrap_servers is None:
        return None, None
    from streamlearn.sources.kafka import consumer_options, largest_fetch, security_from_env
    from streamlearn.sources.kafka_sink import KafkaSink

    bootstrap = config.bootstrap_servers
    security = security_from_env(os.environ)
    # a dead letter is a message the consumer fetched, forwarded whole: the producer
    # takes messages as large as the consumer fetches
    largest = largest_fetch(consumer_options(config.consumer_options))

    def sink(topic: str | None) -> Sink | None:
        if not topic:
            return None
        return KafkaSink(bootstrap, topic, security=security, max_request_size=largest,
                         compression=codec_of(config.compression), budget=budget)  # fmt: skip

    return sink(config.predictions_topic), sink(config.dead_letter_topic)


class _Signalled(Protocol):
    """What the signal handlers call: the daemon, once it exists."""

    def request_stop(self) -> None: ...
    def request_checkpoint(self) -> None: ...


class _Stopper:
    """What SIGTERM, SIGINT and SIGHUP do, from the start of ``serve`` to its end.

    The first SIGTERM or SIGINT asks for a stop: the daemon finishes its batch, writes
    its last checkpoint and exits within ``seconds`` (every wait on a broker takes the
    time left, :class:`StopBudget`); a watchdog ends the process :data:`STOP_GRACE`
    seconds later if it still runs. A second one exits at once, without a checkpoint,
    with the conventional status (128 + the signal's number). SIGHUP asks for a
    checkpoint. Requests that come before the daemon exists (the warm-up can take
    seconds) are handed to it once it does.
    """

    def __init__(self, budget: StopBudget, seconds: float) -> None:
        self.budget = budget
        self.seconds = seconds
        self.target: _Signalled | None = None
        self.stop_requested = False
        self.checkpoint_requested = False
        #: whether exiting now would lose nothing (asked by the watchdog)
        self.settled: Callable[[], bool] = lambda: True

    def attach(self, target: _Signalled, settled: Callable[[], bool]) -> None:
        """From now on ``target`` gets the requests (those received before too)."""
        self.target, self.settled = target, settled
        if self.checkpoint_requested:
            target.request_checkpoint()
        if self.stop_requested:
            target.request_stop()

    def on_stop(self, signum: int, frame: FrameType | None) -> None:
        if self.stop_requested:
            log.warning("signal %d again: exiting now, without a checkpoint", signum)
            _exit_now(128 + signum)
        self.stop_requested = True
        self.budget.begin(self.seconds)
        doing = "still starting" if self.target is None else "finishing the batch"
        log.info("signal %d: %s, then checkpoint and exit (within %g s)", signum, doing,
                 self.seconds)  # fmt: skip
        watchdog = threading.Timer(self.seconds + STOP_GRACE, self._overdue)
        watchdog.daemon = True
        watchdog.start()
        if self.target is not None:
            self.target.request_stop()

    def on_checkpoint(self, signum: int, frame: FrameType | None) -> None:
        self.checkpoint_requested = True
        if self.target is not None:
            self.target.request_checkpoint()

    def _overdue(self) -> None:
        """The stop took longer than its budget: end the process now (a broker or a
        disk that does not answer holds it)."""
        settled = self.settled()
        state = (
            "its last checkpoint is written"
            if settled
            else "before its last checkpoint: the next start resumes from the one before"
        )
        log.error("the stop took longer than %g s: exiting now (%s)",
                  self.seconds + STOP_GRACE, state)  # fmt: skip
        _exit_now(0 if settled else 1)

    def install(self) -> dict[int, Any]:
        """Handle the signals; returns the handlers they replace."""
        handlers = {signal.SIGTERM: self.on_stop, signal.SIGINT: self.on_stop,
                    signal.SIGHUP: self.on_checkpoint}  # fmt: skip
        return {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}


def _exit_now(code: int) -> None:
    """End the process at once with ``code``, the log written out first."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):  # a closed stream: nothing more to write
            handler.flush()
    sys.stderr.flush()
    os._exit(code)


def _restore_signals(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _address(text: str, option: str = "--metrics-addr") -> tuple[str, int]:
    """HOST and PORT of ``text`` (``[::1]:9109`` for an IPv6 host)."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidParameterError(
            f"{option} must be HOST:PORT with a port in [0, 65535], got {text!r}"
        )
    return host.removeprefix("[").removesuffix("]"), int(port)
