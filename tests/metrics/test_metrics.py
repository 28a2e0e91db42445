"""DaemonMetrics in a fresh registry, its exposition under promtool, and the HTTP endpoint."""

from __future__ import annotations

import math
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from services import OpsEndpoint

from streamlearn.learn import PDM, ModelBank
from streamlearn.metrics import REASON_LABELS, DaemonMetrics, new_registry, reason_label
from streamlearn.parse.svmlight import REASONS


def summary(**changes: Any) -> dict[str, Any]:
    """A learner summary as ``LinearLearner.summary()`` gives it, before any update."""
    state: dict[str, Any] = {
        "algorithm": "pdm",
        "examples": 0,
        "updates": 0,
        "update_events": 0,
        "passes": 0,
        "converged": False,
        "margin_achieved": math.nan,
        "margin_upper_bound": math.inf,
        "certified_gap": math.nan,
        "weight_norm": 0.0,
        "buffer_examples": 0,
        "buffer_nnz": 0,
        "buffer_evicted": 0,
    }
    state.update(changes)
    return state


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_counters_by_label(registry: CollectorRegistry) -> None:
    metrics = DaemonMetrics(registry, state=lambda: None)
    metrics.count_examples("learned", 7)
    metrics.count_examples("learned", 3)
    metrics.count_examples("predicted", 2)
    metrics.count_rejected("index above max_features", 4)
    metrics.count_rejected("bad message", 1)
    metrics.count_progressive(correct=9, mistakes=1)
    assert value(registry, "streamlearn_examples_total", outcome="learned") == 10
    assert value(registry, "streamlearn_examples_total", outcome="predicted") == 2
    assert value(registry, "streamlearn_examples_total", outcome="rejected") == 0
    reason = "index_above_max_features"
    assert value(registry, "streamlearn_rejected_lines_total", reason=reason) == 4
    assert value(registry, "streamlearn_rejected_lines_total", reason="bad_message") == 1
    assert value(registry, "streamlearn_progressive_predictions_total", result="correct") == 9
    assert value(registry, "streamlearn_progressive_predictions_total", result="mistake") == 1
    assert value(registry, "streamlearn_progressive_accuracy") == pytest.approx(0.9)


def test_undelivered_messages_are_counted_by_sink(registry: CollectorRegistry) -> None:
    metrics = DaemonMetrics(registry, state=lambda: None)
    name = "streamlearn_undelivered_messages_total"
    assert value(registry, name, sink="predictions") == 0  # there from the start
    metrics.count_undelivered("dead_letters", 2)
    metrics.count_undelivered("dead_letters", 1)
    assert value(registry, name, sink="dead_letters") == 3
    assert value(registry, name, sink="predictions") == 0
    with pytest.raises(ValueError, match="sink"):
        metrics.count_undelivered("elsewhere", 1)


def test_every_reason_label_is_there_from_the_start(registry: CollectorRegistry) -> None:
    DaemonMetrics(registry, state=lambda: None)
    # "bad message", "too many labels", "too many weights", "no key"
    assert len(REASON_LABELS) == len(REASONS) + 4
    for label in REASON_LABELS:
        assert label == label.lower() and " " not in label and "-" not in label
        assert value(registry, "streamlearn_rejected_lines_total", reason=label) == 0
    assert reason_label("not UTF-8") == "not_utf_8"


def test_unknown_outcome_or_reason_is_an_error(registry: CollectorRegistry) -> None:
    metrics = DaemonMetrics(registry, state=lambda: None)
    with pytest.raises(ValueError, match="outcome"):
        metrics.count_examples("skipped", 1)
    with pytest.raises(ValueError, match="reason"):
        metrics.count_rejected("cosmic ray", 1)


def test_state_is_read_at_scrape_time(registry: CollectorRegistry) -> None:
    state = summary()
    metrics = DaemonMetrics(registry, state=lambda: state)
    assert value(registry, "streamlearn_updates_total") == 0
    state = summary(
        examples=500,
        updates=42.5,
        update_events=42,
        passes=3,
        converged=True,
        margin_achieved=0.25,
        margin_upper_bound=0.5,
        certified_gap=0.5,
        weight_norm=2.0,
        buffer_examples=100,
        buffer_nnz=1234,
        active_set_examples={1: 30, 2: 20, 3: 10},
    )
    assert value(registry, "streamlearn_updates_total") == 42
    assert value(registry, "streamlearn_replay_passes_total") == 3
    assert value(registry, "streamlearn_converged") == 1
    assert value(registry, "streamlearn_margin_achieved") == 0.25
    assert value(registry, "streamlearn_margin_upper_bound") == 0.5
    assert value(registry, "streamlearn_certified_gap") == 0.5
    assert value(registry, "streamlearn_weight_norm") == 2.0
    assert value(registry, "streamlearn_buffer_examples") == 100
    assert value(registry, "streamlearn_buffer_nonzeros") == 1234
    assert value(registry, "streamlearn_certificate_examples") == 500
    for level, size in (("1", 30), ("2", 20), ("3", 10)):
        assert value(registry, "streamlearn_active_set_examples", level=level) == size
    body, content_type = metrics.render()
    assert content_type.startswith("text/plain")
    assert b"# TYPE streamlearn_updates_total counter" in body


def test_nan_and_inf_state_values_give_valid_exposition(registry: CollectorRegistry) -> None:
    metrics = DaemonMetrics(registry, state=lambda: summary(weight_norm=None))
    body, _ = metrics.render()
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert math.isnan(families["streamlearn_margin_achieved"].samples[0].value)
    assert math.isnan(families["streamlearn_certified_gap"].samples[0].value)
    assert families["streamlearn_margin_upper_bound"].samples[0].value == math.inf
    assert math.isnan(families["streamlearn_weight_norm"].samples[0].value)
    assert math.isnan(families["streamlearn_progressive_accuracy"].samples[0].value)
    assert "streamlearn_active_set_examples" not in families


def test_no_learner_yet_means_no_state_metrics(registry: CollectorRegistry) -> None:
    DaemonMetrics(registry, state=lambda: None)
    assert value(registry, "streamlearn_updates_total") is None
    assert value(registry, "streamlearn_margin_achieved") is None
    assert value(registry, "streamlearn_ready") == 0
    assert value(registry, "streamlearn_last_checkpoint_timestamp_seconds") is None


def test_checkpoints_lag_ready_and_info(registry: CollectorRegistry) -> None:
    clock = Clock(1000.0)
    metrics = DaemonMetrics(registry, state=lambda: None, clock=clock)
    metrics.observe_checkpoint(0.2, 4096, when=990.0)
    metrics.observe_learn_batch(0.003)
    assert value(registry, "streamlearn_checkpoints_total") == 1
    assert value(registry, "streamlearn_checkpoint_duration_seconds_count") == 1
    assert value(registry, "streamlearn_checkpoint_size_bytes") == 4096
    # a timestamp, as Prometheus practice has it (the age is time() - it, in PromQL)
    assert value(registry, "streamlearn_last_checkpoint_timestamp_seconds") == 990
    assert value(registry, "streamlearn_learn_batch_duration_seconds_count") == 1
    assert value(registry, "streamlearn_learn_batch_duration_seconds_bucket", le="0.005") == 1
    assert value(registry, "streamlearn_learn_batch_duration_seconds_bucket", le="0.0025") == 0
    metrics.observe_learn_batch(0.00003)  # a small poll: every one fell in the lowest bucket
    assert value(registry, "streamlearn_learn_batch_duration_seconds_bucket", le="2.5e-05") == 0
    assert value(registry, "streamlearn_learn_batch_duration_seconds_bucket", le="5e-05") == 1

    metrics.set_lag({0: 5, 1: 0})
    assert value(registry, "streamlearn_consumer_lag_messages", partition="0") == 5
    metrics.set_lag({1: 2})  # after a rebalance partition 0 is gone
    assert value(registry, "streamlearn_consumer_lag_messages", partition="0") is None
    assert value(registry, "streamlearn_consumer_lag_messages", partition="1") == 2

    metrics.set_ready(True)
    assert value(registry, "streamlearn_ready") == 1
    metrics.set_info("pdm", {"eps": 0.01, "delta": "auto"}, version="1.2.3")
    info = {"algorithm": "pdm", "params": "delta=auto,eps=0.01", "version": "1.2.3"}
    assert value(registry, "streamlearn_info", **info) == 1


def full_exposition(registry: CollectorRegistry) -> bytes:
    clock = Clock(2000.0)
    state = summary(updates=5, active_set_examples={"1": 3, "2": 2, "3": 1})
    metrics = DaemonMetrics(registry, state=lambda: state, clock=clock)
    metrics.count_examples("learned", 3)
    metrics.count_rejected("not UTF-8", 2)
    metrics.count_progressive(2, 1)
    metrics.observe_learn_batch(0.01)
    metrics.observe_checkpoint(0.1, 100, when=1990.0)
    metrics.count_undelivered("predictions", 1)
    metrics.set_lag({0: 3})
    metrics.set_ready(True)
    metrics.set_info("paum", {"tau": 1.0, "eta": 0.5}, version="test")
    return metrics.render()[0]


def test_promtool_finds_no_problems(registry: CollectorRegistry) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (make install installs the prometheus package)")
    body = full_exposition(registry)
    result = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=30
    )
    problems = (result.stdout + result.stderr).decode()
    assert result.returncode == 0, problems
    assert problems.strip() == ""


def test_every_name_has_the_prefix_and_counters_end_in_total(
    registry: CollectorRegistry,
) -> None:
    body = full_exposition(registry)
    for family in text_string_to_metric_families(body.decode()):
        assert family.name.startswith("streamlearn_")
        for sample in family.samples:
            if family.type == "counter" and not sample.name.endswith("_created"):
                assert sample.name.endswith("_total")


# -- the HTTP endpoint ------------------------------------------------------------------


class Flags:
    def __init__(self) -> None:
        self.ready = False
        self.checkpoints = 0

    def is_ready(self) -> bool:
        return self.ready

    def request_checkpoint(self) -> None:
        self.checkpoints += 1


@pytest.fixture
def served(registry: CollectorRegistry) -> Iterator[tuple[OpsEndpoint, Flags]]:
    metrics = DaemonMetrics(registry, state=lambda: summary(updates=11, update_events=11))
    metrics.count_examples("learned", 2)
    flags = Flags()
    endpoint = OpsEndpoint(
        "127.0.0.1",
        0,
        metrics=metrics,
        ready=flags.is_ready,
        request_checkpoint=flags.request_checkpoint,
    ).start()
    yield endpoint, flags
    endpoint.stop()


def fetch(endpoint: OpsEndpoint, path: str, method: str = "GET") -> tuple[int, str, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{endpoint.port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_metrics_endpoint_serves_the_exposition(
    served: tuple[OpsEndpoint, Flags], capfd: pytest.CaptureFixture[str]
) -> None:
    endpoint, _ = served
    assert endpoint.port > 0
    status, content_type, body = fetch(endpoint, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain; version=")
    assert b"streamlearn_updates_total 11.0" in body
    assert b'streamlearn_examples_total{outcome="learned"} 2.0' in body
    assert capfd.readouterr().err == ""  # no access log per request


def test_health_and_readiness(served: tuple[OpsEndpoint, Flags]) -> None:
    endpoint, flags = served
    assert fetch(endpoint, "/healthz")[::2] == (200, b"ok\n")
    assert fetch(endpoint, "/readyz")[0] == 503
    flags.ready = True
    assert fetch(endpoint, "/readyz")[0] == 200
    assert fetch(endpoint, "/nowhere")[0] == 404


def test_post_checkpoint_requests_one(served: tuple[OpsEndpoint, Flags]) -> None:
    endpoint, flags = served
    assert fetch(endpoint, "/checkpoint", method="POST")[0] == 202
    assert flags.checkpoints == 1
    assert fetch(endpoint, "/elsewhere", method="POST")[0] == 404


def test_stop_releases_the_port(registry: CollectorRegistry) -> None:
    metrics = DaemonMetrics(registry, state=lambda: None)
    endpoint = OpsEndpoint(
        "127.0.0.1", 0, metrics=metrics, ready=lambda: True, request_checkpoint=lambda: None
    )
    endpoint.start()
    port = endpoint.port
    endpoint.stop()
    endpoint.stop()  # twice is harmless
    again = OpsEndpoint(
        "127.0.0.1", port, metrics=metrics, ready=lambda: True, request_checkpoint=lambda: None
    ).start()
    assert again.port == port
    again.stop()


def test_new_registry_has_the_standard_collectors_and_passes_promtool() -> None:
    registry = new_registry()
    metrics = DaemonMetrics(registry, state=lambda: summary())
    body, _ = metrics.render()
    assert b"python_info{" in body
    assert b"streamlearn_margin_achieved NaN" in body
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (make install installs the prometheus package)")
    result = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=30
    )
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result


def bank_summary() -> dict[str, Any]:
    """The summary of a real three-label bank after a little learning and one replay."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = np.argmax(X[:, :3], axis=1).astype(float) + 1.0  # labels 1, 2, 3
    bank = ModelBank(PDM(eps=0.1, delta=1.0)).learn(X, y).replay(max_passes=1)
    return bank.summary()


def test_a_bank_is_read_through_its_worst_label(registry: CollectorRegistry) -> None:
    state = bank_summary()
    DaemonMetrics(registry, state=lambda: state)
    labels = state["per_label"]
    worst = max(labels, key=lambda figures: figures["certified_gap"])
    assert value(registry, "streamlearn_labels") == 3
    assert value(registry, "streamlearn_certified_gap") == worst["certified_gap"]
    assert value(registry, "streamlearn_margin_achieved") == worst["margin_achieved"]
    assert value(registry, "streamlearn_margin_upper_bound") == worst["margin_upper_bound"]
    assert value(registry, "streamlearn_updates_total") == state["update_events"]
    norm = math.sqrt(sum(figures["weight_norm"] ** 2 for figures in labels))
    assert value(registry, "streamlearn_weight_norm") == pytest.approx(norm)
    level1 = sum(figures["active_set_examples"][1] for figures in labels)
    assert level1 > 0
    assert value(registry, "streamlearn_active_set_examples", level="1") == level1
    # per-label series only when asked for
    assert value(registry, "streamlearn_label_certified_gap", label="1") is None


def test_per_label_metrics_are_opt_in(registry: CollectorRegistry) -> None:
    state = bank_summary()
    DaemonMetrics(registry, state=lambda: state, per_label=True)
    for figures in state["per_label"]:
        label = str(int(figures["label"]))
        assert (
            value(registry, "streamlearn_label_certified_gap", label=label)
            == (figures["certified_gap"])
        )
        assert (
            value(registry, "streamlearn_label_updates_total", label=label) == (figures["updates"])
        )
        assert (
            value(registry, "streamlearn_label_positive_examples", label=label)
            == (figures["positives"])
        )


def test_promtool_accepts_a_bank_with_per_label_metrics(registry: CollectorRegistry) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (make install installs the prometheus package)")
    state = bank_summary()
    body, _ = DaemonMetrics(registry, state=lambda: state, per_label=True).render()
    result = subprocess.run(
        [promtool, "check", "metrics"], input=body, capture_output=True, timeout=30
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_post_checkpoint_without_a_directory_says_there_is_nothing_to_write(
    registry: CollectorRegistry,
) -> None:
    flags = Flags()
    endpoint = OpsEndpoint("127.0.0.1", 0, metrics=DaemonMetrics(registry, state=lambda: None),
                           ready=flags.is_ready, request_checkpoint=flags.request_checkpoint,
                           checkpoints=False).start()  # fmt: skip
    try:
        status, _, body = fetch(endpoint, "/checkpoint", method="POST")
    finally:
        endpoint.stop()
    assert status == 409 and b"--checkpoint-dir" in body and flags.checkpoints == 0


def test_keyed_models_export_counts_and_no_series_per_key(registry: CollectorRegistry) -> None:
    keyed = {"resident": 3, "resident_bytes": 4096, "max_models": 10, "max_bytes": 1 << 20,
             "stored": 250, "created": 40, "restored": 12, "spilled": 15, "expired": 3,
             "skipped_examples": 7, "records_written": 30, "bytes_written": 9000,
             "bytes_read": 3000, "unwritten": 0}  # fmt: skip
    state = {"update_events": 9, "passes": 2, "converged": False, "buffer_examples": 60,
             "keyed": keyed}  # fmt: skip
    DaemonMetrics(registry, state=lambda: state)
    assert value(registry, "streamlearn_keyed_models_resident") == 3
    assert value(registry, "streamlearn_keyed_models_stored") == 250
    assert value(registry, "streamlearn_keyed_resident_bytes") == 4096
    assert value(registry, "streamlearn_keyed_max_resident_bytes") == 1 << 20
    assert value(registry, "streamlearn_keyed_models_total", event="restored") == 12
    assert value(registry, "streamlearn_keyed_models_total", event="spilled") == 15
    assert value(registry, "streamlearn_keyed_models_total", event="expired") == 3
    assert value(registry, "streamlearn_keyed_skipped_examples_total") == 7
    assert value(registry, "streamlearn_keyed_state_bytes_total", direction="read") == 3000
    assert value(registry, "streamlearn_updates_total") == 9
    promtool = shutil.which("promtool")
    if promtool is not None:
        body = DaemonMetrics(CollectorRegistry(), state=lambda: state).render()[0]
        result = subprocess.run([promtool, "check", "metrics"], input=body,
                                capture_output=True, timeout=30)  # fmt: skip
        assert result.returncode == 0 and not (result.stdout + result.stderr).strip()


def test_what_the_alerts_compare_with_is_exported_when_there_is_one(
    registry: CollectorRegistry,
) -> None:
    """eps is the certified gap a learner aims at (none for a learner without one), the
    checkpoint interval is there only once the daemon says it checkpoints."""
    metrics = DaemonMetrics(registry, state=lambda: None)
    metrics.set_info("perceptron", {"rho": 1.0}, version="test")
    assert value(registry, "streamlearn_target_certified_gap") is None
    assert value(registry, "streamlearn_checkpoint_interval_seconds") is None
    metrics.set_info("pdm", {"eps": 0.05, "multiple_updates": True}, version="test")
    metrics.set_checkpoint_interval(30.0)
    assert value(registry, "streamlearn_target_certified_gap") == 0.05
    assert value(registry, "streamlearn_checkpoint_interval_seconds") == 30.0
