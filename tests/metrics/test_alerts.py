"""The alerting rules of deploy/prometheus: promtool checks them and runs their unit
tests (each rule fires on the history it is about, and not on its near miss), and every
rule has such a test."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not installed (make install installs the prometheus package)")
    return found


def alerts() -> list[dict[str, Any]]:
    document = yaml.safe_load((RULES / "alerts.yml").read_text())
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_finds_the_rules_well_formed() -> None:
    done = subprocess.run([promtool(), "check", "rules", str(RULES / "alerts.yml")],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in done.stdout


def test_the_rules_pass_their_unit_tests() -> None:
    done = subprocess.run([promtool(), "test", "rules", "alerts_test.yml"], cwd=RULES,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_rule_is_tested_firing_and_quiet() -> None:
    tests = yaml.safe_load((RULES / "alerts_test.yml").read_text())["tests"]
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in tests:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert len(names) >= 10
    assert names - firing == set() and names - quiet == set()


def test_every_rule_says_what_to_look_at() -> None:
    for rule in alerts():
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]
        assert re.match(r"^Streamlearn[A-Z]\w+$", rule["alert"])
