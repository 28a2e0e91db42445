"""The alerting rules against a real Prometheus scraping a real daemon: a learning
group's member on a real broker (Tansu), with a checkpoint directory and its HTTP API,
the mode that exports the most series. Every rule evaluates without error, and every
series a rule reads (metric and label values) is one the daemon exports: a renamed
metric or label would leave an alert that can never fire."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
import yaml
from group_process import Member, positions, records
from services import Prometheus, Tansu, wait_for
from test_serve_kafka import svmlight_messages

pytestmark = [pytest.mark.kafka, pytest.mark.prometheus]

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"
#: a series a rule reads, with its equality matchers (``=~`` ones, such as 5xx codes,
#: match only once such an event happened)
SELECTOR = re.compile(r"\b(up|streamlearn_[a-z_]+)\b(?:\{([^}]*)\})?")
#: what only another mode exports, and why it is absent here
OTHER_MODES = {"streamlearn_keyed_models_total": "keyed models only (serve --model-key)"}


def selectors() -> set[str]:
    """The series the rules read, as queries (equality matchers only)."""
    document = yaml.safe_load(RULES.read_text())
    found = set()
    for group in document["groups"]:
        for rule in group["rules"]:
            for name, matchers in SELECTOR.findall(rule["expr"]):
                if name in OTHER_MODES:
                    continue
                kept = [m.strip() for m in matchers.split(",") if re.match(r"\s*\w+=\"", m)]
                found.add(name + ("{" + ",".join(kept) + "}" if kept else ""))
    return found


def test_every_alert_evaluates_on_what_a_real_daemon_exports(broker: Tansu, tmp_path: Path) -> None:
    topic, sync = f"t-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    for i, value in enumerate(svmlight_messages(40, 20, seed=3)):
        broker.produce(topic, [value], partition=i % 2)
    member = Member(broker, topic, sync, f"g-{uuid.uuid4().hex[:8]}", tmp_path,
                    "--checkpoint-dir", str(tmp_path / "checkpoints"),
                    "--checkpoint-interval", "1")  # fmt: skip
    try:
        member.wait(lambda: positions(records(broker, sync)) == broker.end_offsets(topic),
                    "every partition learned")  # fmt: skip
        member.predict(b"1:0.5 3:-1.2\n")  # the HTTP API's counters
        member.wait(lambda: list((tmp_path / "checkpoints").glob("*.ckpt")), "a checkpoint")
        prometheus_dir = tmp_path / "prometheus"
        prometheus_dir.mkdir()
        with Prometheus(str(prometheus_dir), [f"127.0.0.1:{member.metrics_port}"],
                        [str(RULES)]) as prometheus:  # fmt: skip

            def evaluated() -> list[dict[str, str]] | None:
                try:
                    groups = prometheus.api("/api/v1/rules")["groups"]
                except OSError:
                    return None
                rules = [rule for group in groups for rule in group["rules"]]
                done = all(rule.get("health") != "unknown" for rule in rules)
                return rules if rules and done else None

            rules = wait_for(evaluated, timeout=60, interval=0.5, what="the rules evaluated")
            assert len(rules) >= 10
            assert [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"] == []
            for query in sorted(selectors()):
                wait_for(lambda query=query: prometheus.query(query), timeout=30,
                         interval=0.5, what=f"a series of {query}")  # fmt: skip
    finally:
        assert member.stop() == 0, member.log_tail()
