"""A real Prometheus scrapes the HTTP endpoint, and every dashboard query returns data."""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from services import OpsEndpoint

from streamlearn.metrics import DaemonMetrics
from streamlearn.sources.kafka_codecs import REASONS as UNREADABLE_REASONS

pytestmark = pytest.mark.prometheus

DASHBOARD = Path(__file__).parents[2] / "deploy/grafana/dashboards/streamlearn.json"
#: values for Grafana's variables, so that the queries run as PromQL
VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "1h",
    "${instance}": ".*",
    "$instance": ".*",
}
STARTUP_SECONDS = 30
QUERY_SECONDS = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, condition: Callable[[], Any], seconds: float) -> Any:
    """Poll ``condition`` until it returns something true, or fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            result = condition()
        except OSError:
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.25)


def api(base: str, path: str, **params: str) -> Any:
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"
    with urllib.request.urlopen(url, timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = []
    for panel in dashboard["panels"]:
        for nested in [panel, *panel.get("panels", [])]:
            expressions += [t["expr"] for t in nested.get("targets", []) if t.get("expr")]
    return expressions


def as_promql(expression: str) -> str:
    for variable, value in VARIABLES.items():
        expression = expression.replace(variable, value)
    assert "$" not in expression, f"unknown Grafana variable in {expression}"
    return expression


@pytest.fixture
def endpoint() -> Iterator[OpsEndpoint]:
    """The daemon's endpoint over a fake one-vs-rest bank exporting its per-label series
    (so that every panel has data), with some events counted."""
    registry = CollectorRegistry()
    state: dict[str, Any] = {
        "updates": 0,
        "passes": 0,
        "converged": False,
        "margin_achieved": math.nan,
        "margin_upper_bound": math.inf,
        "certified_gap": math.nan,
        "weight_norm": 0.0,
        "buffer_examples": 0,
        "buffer_nnz": 0,
    }
    metrics = DaemonMetrics(registry, state=lambda: state, per_label=True,
                            unreadable_reasons=UNREADABLE_REASONS)  # fmt: skip
    endpoint = OpsEndpoint(
        "127.0.0.1", 0, metrics=metrics, ready=lambda: True, request_checkpoint=lambda: None
    ).start()
    state = {
        "updates": 120,
        "passes": 4,
        "converged": True,
        "buffer_examples": 500,
        "buffer_nnz": 7000,
        "per_label": [
            {
                "label": 1,
                "updates": 70,
                "positives": 200,
                "margin_achieved": 0.21,
                "margin_upper_bound": 0.25,
                "certified_gap": 0.16,
                "weight_norm": 3.5,
                "active_set_examples": {1: 60, 2: 25, 3: 8},
            },
            {
                "label": 2,
                "updates": 50,
                "positives": 300,
                "margin_achieved": 0.3,
                "margin_upper_bound": 0.32,
                "certified_gap": 0.06,
                "weight_norm": 2.5,
                "active_set_examples": {1: 40, 2: 10, 3: 2},
            },
        ],
    }
    state["group"] = {  # a learning group's member, so that its panels have data too
        "members": ["a", "b"],
        "margin": 0.2,
        "margin_upper_bound": 0.25,
        "records_written": 3,
        "records_read": 5,
        "records_refused": 0,
        "bytes_written": 3000,
        "bytes_read": 5000,
    }
    metrics.set_info("pdm", {"eps": 0.01}, version="test")
    metrics.set_ready(True)
    metrics.count_examples("learned", 500)
    metrics.count_rejected("bad token", 3)
    metrics.count_progressive(450, 50)
    metrics.observe_learn_batch(0.004)
    metrics.observe_checkpoint(0.05, 20_000, when=time.time())
    metrics.set_lag({0: 12, 1: 0})
    metrics.count_unreadable("codec failed")
    metrics.count_skipped("null value", 2)
    metrics.set_stalled(0)
    yield endpoint
    endpoint.stop()


@pytest.fixture
def prometheus(tmp_path: Path, endpoint: OpsEndpoint) -> Iterator[str]:
    """A real Prometheus scraping the endpoint every second; its base URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (make install installs the Debian package)")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n"
        "  scrape_interval: 1s\n"
        "  evaluation_interval: 1s\n"
        "scrape_configs:\n"
        "  - job_name: streamlearn\n"
        "    static_configs:\n"
        f"      - targets: ['127.0.0.1:{endpoint.port}']\n"
    )
    log = (tmp_path / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_prometheus_scrapes_and_dashboard_queries_return_data(prometheus: str) -> None:
    def target_up() -> bool:
        targets = api(prometheus, "/api/v1/targets")["activeTargets"]
        return any(t["health"] == "up" for t in targets)

    wait_for("the scrape target to be up", target_up, STARTUP_SECONDS)

    expressions = dashboard_expressions()
    assert len(expressions) >= 9
    for expression in expressions:
        query = as_promql(expression)

        def answered(query: str = query) -> list[Any]:
            return list(api(prometheus, "/api/v1/query", query=query)["result"])

        result = wait_for(f"data from {query}", answered, QUERY_SECONDS)
        assert result, query


def test_dashboard_is_well_formed() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert 36 <= dashboard["schemaVersion"] <= 41
    titles = " ".join(panel["title"].lower() for panel in dashboard["panels"])
    for word in ("throughput", "update", "margin", "gap", "accuracy", "buffer", "checkpoint"):
        assert word in titles
    for word in ("lag", "rejected", "replaying"):
        assert word in titles
    names = set(re.findall(r"streamlearn_[a-z_]+", " ".join(dashboard_expressions())))
    assert {"streamlearn_margin_achieved", "streamlearn_margin_upper_bound"} <= names
    assert {"streamlearn_certified_gap", "streamlearn_replay_seconds_total"} <= names
    assert {"streamlearn_label_certified_gap", "streamlearn_label_updates_total"} <= names
    nested = [panel for row in dashboard["panels"] for panel in row.get("panels", [])]
    ids = [panel["id"] for panel in [*dashboard["panels"], *nested]]
    assert len(ids) == len(set(ids))
