"""Prometheus metrics of the daemon: event counters, and state gauges read at scrape time.

The daemon loop counts what the stages return (``count_examples``, ``count_rejected``,
...); gauges that describe the learner (margin, buffer, convergence) are read from the
``state`` callable only when Prometheus scrapes, like prometheus_client's gc collector.
Only this module imports prometheus_client.

>>> from prometheus_client import CollectorRegistry
>>> metrics = DaemonMetrics(CollectorRegistry(), state=lambda: {"update_events": 3})
>>> metrics.count_examples("learned", 5)
>>> body, content_type = metrics.render()
>>> b"streamlearn_updates_total 3.0" in body, b'outcome="learned"} 5.0' in body
(True, True)
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from streamlearn.learn.labelsets import TOO_MANY_LABELS, TOO_MANY_WEIGHTS
from streamlearn.parse.messages import NO_KEY
from streamlearn.parse.svmlight import REASONS

OUTCOMES = ("learned", "predicted", "rejected")
#: the sinks whose undelivered messages are counted
SINKS = ("predictions", "dead_letters")
#: why a message without an example was skipped (``streamlearn_skipped_messages_total``)
SKIPPED = ("null value", "empty value")
#: reason of an undecodable message (Kafka), beside the parser's reasons for a line
BAD_MESSAGE = "bad message"
#: the seconds buckets of one learn call on a batch (a few examples to a large poll)
LEARN_BUCKETS = (
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
)  # fmt: skip
#: the seconds buckets of writing one checkpoint (small models to large replay buffers)
CHECKPOINT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
ACTIVE_SET_LEVELS = ("1", "2", "3")
#: the seconds buckets of one HTTP request (one example to a large batch)
HTTP_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5)
#: the HTTP API's endpoints, and what a request to none of them counts as
HTTP_ENDPOINTS = ("/predict", "/learn", "/model", "/model/weights", "/openapi.json", "other")


def new_registry() -> CollectorRegistry:
    """A fresh registry with the standard process, platform and Python GC collectors.

    The daemon uses it instead of the global default registry, so nothing registered
    by an imported library leaks into its exposition (tests use a bare registry).
    """
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def reason_label(reason: str) -> str:
    """The snake-case label value of a rejection reason.

    >>> reason_label("index above max_features"), reason_label("not UTF-8")
    ('index_above_max_features', 'not_utf_8')
    """
    return re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_")


REASON_LABELS = tuple(
    reason_label(r) for r in (*REASONS, BAD_MESSAGE, TOO_MANY_LABELS, TOO_MANY_WEIGHTS, NO_KEY)
)


def _number(value: Any) -> float:
    """A state value as a float sample: missing or unreadable values become NaN."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


@dataclass(frozen=True)
class ScrapeFacts:
    """What the daemon's metrics hold between scrapes, read at once (under their lock)."""

    ready: bool
    info: tuple[str, str, str] | None
    lag: dict[int, int]
    correct: int
    mistakes: int
    last_checkpoint: float | None
    now: float
    state: Mapping[str, Any] | None
    per_label: bool
    #: the certified gap the learner aims at (PDM's eps), when it has one
    target_gap: float | None = None
    #: seconds between two checkpoints while the model changes (--checkpoint-interval)
    checkpoint_interval: float | None = None


class _StateCollector(Collector):
    """Reads the learner summary and the daemon's latest facts when Prometheus scrapes."""

    def __init__(self, metrics: DaemonMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        facts = self._metrics.facts()
        yield _gauge(
            "streamlearn_ready", "1 when the daemon serves and learns, else 0.", facts.ready
        )
        if facts.info is not None:
            family = GaugeMetricFamily(
                "streamlearn_info",
                "The learner's algorithm and parameters, and streamlearn's version (value 1).",
                labels=["algorithm", "params", "version"],
            )
            family.add_metric(list(facts.info), 1.0)
            yield family
        seen = facts.correct + facts.mistakes
        yield _gauge(
            "streamlearn_progressive_accuracy",
            "Fraction of progressive predictions (predict before learn) that were correct, "
            "since the daemon started (a window: the rates of progressive_predictions_total).",
            facts.correct / seen if seen else math.nan,
        )
        if facts.last_checkpoint is not None:
            yield _gauge(
                "streamlearn_last_checkpoint_timestamp_seconds",
                "When the last checkpoint was written, in seconds since the epoch.",
                facts.last_checkpoint,
            )
        if facts.target_gap is not None:
            yield _gauge(
                "streamlearn_target_certified_gap",
                "The certified gap the learner's replay aims at (its eps).",
                facts.target_gap,
            )
        if facts.checkpoint_interval is not None:
            yield _gauge(
                "streamlearn_checkpoint_interval_seconds",
                "Seconds between two checkpoints while the model changes (--checkpoint-interval).",
                facts.checkpoint_interval,
            )
        if facts.lag:
            family = GaugeMetricFamily(
                "streamlearn_consumer_lag_messages",
                "Messages between the consumer position and the end of each partition.",
                labels=["partition"],
            )
            for partition, messages in sorted(facts.lag.items()):
                family.add_metric([str(partition)], float(messages))
            yield family
        if facts.state is not None:
            yield from _state_metrics(facts.state, facts.per_label)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _state_metrics(state: Mapping[str, Any], per_label: bool = False) -> Iterator[Metric]:
    """The families read from a learner summary; NaN stands for a value not known yet.

    A one-vs-rest bank's summary (with a ``per_label`` list) is read through
    :func:`bank_view`, plus ``streamlearn_labels`` and, when ``per_label``, the
    ``streamlearn_label_*`` families.
    """
    pending = state.get("pending")
    if isinstance(pending, Mapping):
        yield from _pending_metrics(pending)
    labels = state.get("per_label")
    if isinstance(labels, list):
        yield _gauge(
            "streamlearn_labels",
            "Labels the one-vs-rest bank has a learner for.",
            float(len(labels)),
        )
        if per_label:
            yield from _label_metrics(labels)
        state = bank_view(state)
    yield CounterMetricFamily(
        "streamlearn_updates",
        "Update events of the weight vector (a multiple update counts once).",
        value=_number(state.get("update_events", 0)),
    )
    yield CounterMetricFamily(
        "streamlearn_replay_passes",
        "Full replay passes over the buffer.",
        value=_number(state.get("passes", 0)),
    )
    gauges = (
        ("converged", "1 when the last full pass over the buffer made no update, else 0."),
        ("margin_achieved", "Margin of (w, b) on the buffer, with the best slack coordinates."),
        ("margin_upper_bound", "Upper bound on the maximum margin of the buffer."),
        ("certified_gap", "1 - margin_achieved / margin_upper_bound: relative margin gap."),
        ("weight_norm", "Euclidean norm of the weight vector."),
        ("buffer_examples", "Examples held in the replay buffer."),
        ("buffer_nonzeros", "Nonzero feature values held in the replay buffer."),
        ("certificate_examples", "Examples learned when the margins and the gap were last taken."),
    )
    keys = {"buffer_nonzeros": "buffer_nnz", "certificate_examples": "examples"}
    for name, documentation in gauges:
        yield _gauge(f"streamlearn_{name}", documentation, _number(state.get(keys.get(name, name))))
    group = state.get("group")
    if isinstance(group, Mapping):
        yield from _group_metrics(group)
    keyed = state.get("keyed")
    if isinstance(keyed, Mapping):
        yield from _keyed_metrics(keyed)
    active = state.get("active_set_examples")
    if isinstance(active, Mapping):
        family = GaugeMetricFamily(
            "streamlearn_active_set_examples",
            "Examples in each nested active set of the current replay pass.",
            labels=["level"],
        )
        for level in ACTIVE_SET_LEVELS:
            value = active.get(level, active.get(int(level)))
            if value is not None:
                family.add_metric([level], _number(value))
        yield family


def _pending_metrics(pending: Mapping[str, Any]) -> Iterator[Metric]:
    """The families of the examples predicted with an id that wait for their label
    (:mod:`streamlearn.pending`)."""
    yield _gauge(
        "streamlearn_pending_examples",
        "Examples predicted with an id that wait for their label (--pending-max at most).",
        _number(pending.get("examples")),
    )
    for name, documentation in (
        ("joined", "Examples learned with the label posted for their id."),
        ("expired", "Examples that waited --pending-ttl for their label, and went."),
        ("evicted", "Examples that went unlabelled to make room (--pending-max)."),
    ):
        yield CounterMetricFamily(
            f"streamlearn_pending_{name}", documentation, value=_number(pending.get(name, 0))
        )
    family = CounterMetricFamily(
        "streamlearn_pending_refused_labels",
        "Labels by id that found no example, by reason: unknown id, expired, evicted, "
        "already labelled.",
        labels=["reason"],
    )
    refused = pending.get("refused")
    for reason, count in refused.items() if isinstance(refused, Mapping) else ():
        family.add_metric([reason_label(str(reason))], _number(count))
    yield family


def _group_metrics(group: Mapping[str, Any]) -> Iterator[Metric]:
    """A learning group member's families (see :mod:`streamlearn.group`)."""
    yield _gauge(
        "streamlearn_group_members",
        "Members whose share is in the learning group's model (this one included).",
        float(len(group.get("members", ()))),
    )
    for name, documentation in (
        ("margin", "Smallest margin of the group's model on a member's own window."),
        ("margin_upper_bound", "Upper bound on the maximum margin of the union of the windows."),
    ):
        yield _gauge(f"streamlearn_group_{name}", documentation, _number(group.get(name)))
    records = CounterMetricFamily(
        "streamlearn_group_sync_records",
        "Records of the sync topic: written by this member, read, refused as unusable, "
        "not written (the broker did not take them; tried again), and deferred (asked "
        "for while publishing had used its share of the time).",
        labels=["direction"],
    )
    sizes = CounterMetricFamily(
        "streamlearn_group_sync_bytes",
        "Bytes of record values written to and read from the sync topic.",
        labels=["direction"],
    )
    for direction in ("written", "read"):
        records.add_metric([direction], _number(group.get(f"records_{direction}", 0)))
        sizes.add_metric([direction], _number(group.get(f"bytes_{direction}", 0)))
    records.add_metric(["refused"], _number(group.get("records_refused", 0)))
    records.add_metric(["failed"], _number(group.get("records_failed", 0)))
    records.add_metric(["deferred"], _number(group.get("records_deferred", 0)))
    yield records
    yield sizes


def _keyed_metrics(keyed: Mapping[str, Any]) -> Iterator[Metric]:
    """The families of a daemon that learns one model per key (see
    :mod:`streamlearn.keyed`): counts over the keys, never one series per key."""
    for name, key, documentation in (
        ("models_resident", "resident", "Keyed models held in memory."),
        ("models_stored", "stored",
         "Keys with a model on the state topic in this daemon's partitions."),
        ("resident_bytes", "resident_bytes", "Bytes of the keyed models held in memory."),
        ("max_models", "max_models", "Keyed models held in memory at most (--max-models)."),
        ("max_resident_bytes", "max_bytes",
         "Bytes of the keyed models held in memory at most (--max-model-bytes)."),
        ("records_unwritten", "unwritten",
         "Model records the broker has not acknowledged yet (written again until it does)."),
    ):  # fmt: skip
        yield _gauge(f"streamlearn_keyed_{name}", documentation, _number(keyed.get(key)))
    moves = CounterMetricFamily(
        "streamlearn_keyed_models",
        "Keyed models created (a new key), spilled from memory to the state topic, "
        "restored from it, records of it refused (the key then starts a new model), and "
        "models removed after --key-ttl without learning.",
        labels=["event"],
    )
    for event in ("created", "spilled", "restored", "refused", "expired"):
        moves.add_metric([event], _number(keyed.get(event, 0)))
    yield moves
    yield CounterMetricFamily(
        "streamlearn_keyed_skipped_examples",
        "Examples read again (after a restart or a rebalance) that their model had learned.",
        value=_number(keyed.get("skipped_examples", 0)),
    )
    yield CounterMetricFamily(
        "streamlearn_keyed_state_records_written",
        "Model records written to the state topic.",
        value=_number(keyed.get("records_written", 0)),
    )
    sizes = CounterMetricFamily(
        "streamlearn_keyed_state_bytes",
        "Bytes of model records written to and read from the state topic.",
        labels=["direction"],
    )
    for direction in ("written", "read"):
        sizes.add_metric([direction], _number(keyed.get(f"bytes_{direction}", 0)))
    yield sizes


def bank_view(state: Mapping[str, Any]) -> dict[str, Any]:
    """A bank's summary read as one learner's: the figures of its worst label.

    The margin achieved, its upper bound and the certified gap are those of the label
    whose certified gap is largest (a gap not known yet counts as the largest), so the
    three belong together; the weight norm is that of all labels' weights together and
    the active sets add up over the labels' last replay passes. Counts, buffer figures
    and convergence are the bank's own.

    >>> view = bank_view({"updates": 9, "per_label": [
    ...     {"certified_gap": 0.1, "margin_achieved": 2.0, "margin_upper_bound": 3.0,
    ...      "weight_norm": 3.0, "active_set_examples": {1: 5, 2: 2, 3: 1}},
    ...     {"certified_gap": 0.3, "margin_achieved": 1.0, "margin_upper_bound": 4.0,
    ...      "weight_norm": 4.0, "active_set_examples": {1: 1, 2: 1, 3: 0}}]})
    >>> view["margin_achieved"], view["weight_norm"], view["active_set_examples"], view["updates"]
    (1.0, 5.0, {1: 6, 2: 3, 3: 1}, 9)
    """
    labels = [figures for figures in state.get("per_label", ()) if isinstance(figures, Mapping)]
    view = {key: value for key, value in state.items() if key != "per_label"}
    if not labels:
        return view

    def gap(figures: Mapping[str, Any]) -> float:
        value = _number(figures.get("certified_gap"))
        return math.inf if math.isnan(value) else value

    worst = max(labels, key=gap)
    for key in ("margin_achieved", "margin_upper_bound", "certified_gap"):
        view[key] = worst.get(key)
    view["weight_norm"] = math.sqrt(sum(_number(f.get("weight_norm")) ** 2 for f in labels))
    sizes: dict[int, int] = {}
    for figures in labels:
        active = figures.get("active_set_examples")
        if isinstance(active, Mapping):
            for level, size in active.items():
                sizes[int(level)] = sizes.get(int(level), 0) + int(size)
    if sizes:
        view["active_set_examples"] = sizes
    return view


def _label_text(value: Any) -> str:
    """A label as a metric label value: integral numbers without a decimal point.

    >>> _label_text(3.0), _label_text(-1.0), _label_text(0.5)
    ('3', '-1', '0.5')
    """
    number = _number(value)
    if math.isfinite(number) and number == int(number):
        return str(int(number))
    return str(value)


def _label_metrics(labels: list[Any]) -> Iterator[Metric]:
    """Per-label families of a bank (opt-in: one series per label and family)."""
    families = (
        (GaugeMetricFamily, "margin_achieved", "Margin achieved on the buffer, per label."),
        (GaugeMetricFamily, "certified_gap", "Certified relative margin gap, per label."),
        (GaugeMetricFamily, "positive_examples", "Examples seen with the label, per label."),
        (CounterMetricFamily, "updates", "Updates of the label's weight vector, per label."),
    )
    keys = {"positive_examples": "positives"}
    for family_type, name, documentation in families:
        family = family_type(f"streamlearn_label_{name}", documentation, labels=["label"])
        for figures in labels:
            if isinstance(figures, Mapping):
                value = _number(figures.get(keys.get(name, name)))
                family.add_metric([_label_text(figures.get("label"))], value)
        yield family


class DaemonMetrics:
    """The daemon's metrics in an injected registry.

    ``state`` returns the current learner summary (see ``LinearLearner.summary``) or
    None before there is a learner. It is called from the HTTP thread at scrape time,
    so it must be cheap and thread-safe: return a dict the loop stored after its last
    batch rather than compute a summary from arrays the loop is mutating. An optional
    ``active_set_examples`` entry maps levels 1, 2, 3 to their sizes. A one-vs-rest
    bank's summary is read through :func:`bank_view`; ``per_label=True`` also exports
    its ``streamlearn_label_*`` families, one series per label (off by default, to keep
    the number of series low).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        state: Callable[[], Mapping[str, Any] | None],
        *,
        clock: Callable[[], float] = time.time,
        per_label: bool = False,
        unreadable_reasons: Sequence[str] = (),
    ) -> None:
        self._registry = registry
        self._per_label = per_label
        self._state = state
        self._clock = clock
        self._lock = threading.Lock()
        self._ready = False
        self._info: tuple[str, str, str] | None = None
        self._lag: dict[int, int] = {}
        self._correct = 0
        self._mistakes = 0
        self._last_checkpoint: float | None = None
        self._target_gap: float | None = None
        self._checkpoint_interval: float | None = None
        self._examples = Counter(
            "streamlearn_examples",
            "Examples by outcome: learned, predicted, or rejected before learning.",
            ["outcome"],
            registry=registry,
        )
        self._rejected = Counter(
            "streamlearn_rejected_lines",
            "Input lines or messages rejected, by reason.",
            ["reason"],
            registry=registry,
        )
        self._progressive = Counter(
            "streamlearn_progressive_predictions",
            "Predictions made on each example before learning it, by result.",
            ["result"],
            registry=registry,
        )
        self._learn_seconds = Histogram(
            "streamlearn_learn_batch_duration_seconds",
            "Seconds spent learning one batch.",
            buckets=LEARN_BUCKETS,
            registry=registry,
        )
        self._replay_seconds = Counter(
            "streamlearn_replay_seconds",
            "Seconds spent in replay passes (its rate is the share of time replaying).",
            registry=registry,
        )
        self._define_operations(registry)
        self._http_children: dict[tuple[str, int], tuple[Any, Any]] = {}
        # every label value shows up from the start, so rate() has a zero to start from
        for sink in SINKS:
            self._undelivered.labels(sink=sink)
        for outcome in OUTCOMES:
            self._examples.labels(outcome=outcome)
        for reason in REASON_LABELS:
            self._rejected.labels(reason=reason)
        for result in ("correct", "mistake"):
            self._progressive.labels(result=result)
        for reason in unreadable_reasons:
            self._unreadable.labels(reason=reason_label(reason))
        for reason in SKIPPED:
            self._skipped.labels(reason=reason_label(reason))
        registry.register(_StateCollector(self))

    def _define_operations(self, registry: CollectorRegistry) -> None:
        """The families of the daemon's operation: checkpoints, deliveries, the HTTP API,
        what the source skips or holds, drift."""
        self._checkpoints = Counter(
            "streamlearn_checkpoints", "Checkpoints written.", registry=registry
        )
        self._checkpoint_seconds = Histogram(
            "streamlearn_checkpoint_duration_seconds",
            "Seconds spent encoding and writing one checkpoint.",
            buckets=CHECKPOINT_BUCKETS,
            registry=registry,
        )
        self._checkpoint_bytes = Gauge(
            "streamlearn_checkpoint_size_bytes",
            "Size of the last checkpoint written.",
            registry=registry,
        )
        self._undelivered = Counter(
            "streamlearn_undelivered_messages",
            "Predictions and dead letters that could not be delivered, by sink.",
            ["sink"],
            registry=registry,
        )
        self._http_requests = Counter(
            "streamlearn_http_requests",
            "Requests to the HTTP API, by endpoint and status code.",
            ["endpoint", "code"],
            registry=registry,
        )
        self._http_seconds = Histogram(
            "streamlearn_http_request_duration_seconds",
            "Seconds from a request's head to its answer, by endpoint.",
            ["endpoint"],
            buckets=HTTP_BUCKETS,
            registry=registry,
        )
        self._unreadable = Counter(
            "streamlearn_unreadable",
            "Record batches (or single records) skipped because they cannot be read, by reason.",
            ["reason"],
            registry=registry,
        )
        self._skipped = Counter(
            "streamlearn_skipped_messages",
            "Messages that hold no example, skipped: null values (tombstones) and empty ones.",
            ["reason"],
            registry=registry,
        )
        self._stalled = Gauge(
            "streamlearn_stalled_partitions",
            "Partitions with messages waiting whose position has not moved for --stall-timeout.",
            registry=registry,
        )
        self._drift_detections = Counter(
            "streamlearn_drift_detections",
            "Rises of the progressive error the Page-Hinkley test found (concept drift).",
            registry=registry,
        )
        self._drift_statistic = Gauge(
            "streamlearn_drift_statistic",
            "The Page-Hinkley statistic of the progressive error: how far its cumulative "
            "sum stands above its lowest point (an alarm above --drift-threshold).",
            registry=registry,
        )
        self._held = Gauge(
            "streamlearn_held_partitions",
            "Partitions held back because their log went back behind what was learned "
            "from them (--on-offset-reset wait).",
            registry=registry,
        )

    def count_examples(self, outcome: str, n: int) -> None:
        """Count ``n`` examples as "learned", "predicted" or "rejected"."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        self._examples.labels(outcome=outcome).inc(n)

    def count_rejected(self, reason: str, n: int = 1) -> None:
        """Count ``n`` rejected lines; ``reason`` is a parser reason, "bad message", a
        bank's "too many labels" or "too many weights", or "no key" (keyed models)."""
        label = reason_label(reason)
        if label not in REASON_LABELS:
            raise ValueError(f"unknown rejection reason {reason!r}")
        self._rejected.labels(reason=label).inc(n)

    def count_progressive(self, correct: int, mistakes: int) -> None:
        """Count progressive predictions (made before learning each example)."""
        self._progressive.labels(result="correct").inc(correct)
        self._progressive.labels(result="mistake").inc(mistakes)
        with self._lock:
            self._correct += correct
            self._mistakes += mistakes

    def observe_learn_batch(self, seconds: float) -> None:
        """Record the duration of one learn call."""
        self._learn_seconds.observe(seconds)

    def observe_replay(self, seconds: float) -> None:
        """A replay pass took ``seconds``."""
        self._replay_seconds.inc(seconds)

    def observe_drift(self, statistic: float, detected: bool) -> None:
        """The drift test's statistic after a batch, and whether it alarmed."""
        self._drift_statistic.set(statistic)
        if detected:
            self._drift_detections.inc()

    def observe_checkpoint(self, seconds: float, size_bytes: int, when: float) -> None:
        """Record a checkpoint written at ``when`` (seconds since the epoch)."""
        self._checkpoints.inc()
        self._checkpoint_seconds.observe(seconds)
        self._checkpoint_bytes.set(size_bytes)
        with self._lock:
            self._last_checkpoint = when

    def count_unreadable(self, reason: str, n: int = 1) -> None:
        """Count ``n`` record batches or records skipped as unreadable for ``reason``."""
        self._unreadable.labels(reason=reason_label(reason)).inc(n)

    def count_skipped(self, reason: str, n: int) -> None:
        """Count ``n`` messages without an example (``SKIPPED``: "null value", "empty value")."""
        if reason not in SKIPPED:
            raise ValueError(f"reason must be one of {SKIPPED}, got {reason!r}")
        self._skipped.labels(reason=reason_label(reason)).inc(n)

    def set_stalled(self, partitions: int) -> None:
        """Say how many partitions make no progress."""
        self._stalled.set(partitions)

    def set_held(self, partitions: int) -> None:
        """Say how many partitions are held back (their log went back)."""
        self._held.set(partitions)

    def count_undelivered(self, sink: str, n: int) -> None:
        """Count ``n`` messages a sink ("predictions" or "dead_letters") could not deliver."""
        if sink not in SINKS:
            raise ValueError(f"sink must be one of {SINKS}, got {sink!r}")
        self._undelivered.labels(sink=sink).inc(n)

    def observe_http(self, endpoint: str, status: int, seconds: float) -> None:
        """An HTTP API request to ``endpoint`` was answered with ``status`` in ``seconds``
        (an endpoint the API does not have counts as "other")."""
        children = self._http_children.get((endpoint, status))
        if children is None:
            label = endpoint if endpoint in HTTP_ENDPOINTS else "other"
            children = (
                self._http_requests.labels(endpoint=label, code=str(status)),
                self._http_seconds.labels(endpoint=label),
            )
            if len(self._http_children) < 1000:  # status codes are few: a bound all the same
                self._http_children[endpoint, status] = children
        counter, histogram = children
        counter.inc()
        histogram.observe(seconds)

    def set_lag(self, lag: Mapping[int, int]) -> None:
        """Replace the consumer lag of every assigned partition (messages)."""
        with self._lock:
            self._lag = dict(lag)

    def set_ready(self, ready: bool) -> None:
        """Say whether the daemon is ready (model loaded, source assigned)."""
        with self._lock:
            self._ready = bool(ready)

    def set_info(self, algorithm: str, params: Mapping[str, Any], version: str) -> None:
        """Describe the learner (its algorithm and its parameters as "k=v,..." sorted) and
        the streamlearn version that runs it."""
        text = ",".join(f"{key}={params[key]}" for key in sorted(params))
        eps = params.get("eps")
        target = float(eps) if isinstance(eps, int | float) and not isinstance(eps, bool) else None
        with self._lock:
            self._info = (algorithm, text, version)
            self._target_gap = target if target is not None and math.isfinite(target) else None

    def set_checkpoint_interval(self, seconds: float) -> None:
        """Say how often the daemon checkpoints while its model changes (exported, so
        that an alert can tell a checkpoint overdue)."""
        with self._lock:
            self._checkpoint_interval = seconds

    def facts(self) -> ScrapeFacts:
        """What a scrape reports beside the counters: readiness, the learner's info, lag,
        progressive counts, the last checkpoint's time, and the learner's summary."""
        with self._lock:
            held = (self._ready, self._info, dict(self._lag), self._correct, self._mistakes,
                    self._last_checkpoint)  # fmt: skip
            target, interval = self._target_gap, self._checkpoint_interval
        return ScrapeFacts(*held, now=self._clock(), state=self._state(), per_label=self._per_label,
                           target_gap=target, checkpoint_interval=interval)  # fmt: skip

    def render(self) -> tuple[bytes, str]:
        """The text exposition of the registry, and its content type."""
        return generate_latest(self._registry), CONTENT_TYPE_LATEST
