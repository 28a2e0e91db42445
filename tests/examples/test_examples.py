"""The scripts of examples/ run as a user runs them, and print what they promise.

(examples/kafka_producer.py needs a broker: tests/sources/test_example_producer.py.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.slow


def run_example(name: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def accuracies(output: str) -> dict[str, dict[str, float]]:
    """{data set: {model: accuracy}} from the tables the river examples print: a line
    without figures names a data set, a row is a name followed by figures."""
    tables: dict[str, dict[str, float]] = {}
    current: dict[str, float] = {}
    for line in output.splitlines():
        row = re.fullmatch(r"((?:river|streamlearn) \S+)\s+([0-9.]+)\s+.*", line)
        if row:
            current[row.group(1)] = float(row.group(2))
        elif line.strip() and not line.startswith("model"):
            current = tables.setdefault(line.split(":")[0].strip(), {})
    return tables


def test_quickstart_certifies_pdm_within_eps() -> None:
    output = run_example("quickstart.py")
    pdm, paum = output.split("PAUM:")
    assert "1000 examples learned" in pdm and "converged True" in pdm
    gap = float(re.search(r"certified gap ([0-9.]+)", pdm).group(1))  # type: ignore[union-attr]
    assert 0.0 <= gap <= 0.01  # the example's eps
    accuracy = float(re.search(r"after replay ([0-9.]+)", pdm).group(1))  # type: ignore[union-attr]
    assert accuracy > 0.8
    assert "converged True" in paum


def test_river_progressive_runs_every_model_on_every_data_set() -> None:
    tables = accuracies(run_example("river_progressive.py"))
    assert set(tables) == {"Phishing", "Bananas", "Hyperplane"}
    for name, table in tables.items():
        assert len(table) == 8, table
        floor = 0.45 if name == "Bananas" else 0.75  # Bananas is not linearly separable
        assert all(floor < accuracy <= 1.0 for accuracy in table.values()), (name, table)


def test_river_multiclass_runs_every_model() -> None:
    tables = accuracies(run_example("river_multiclass.py"))
    (table,) = tables.values()
    assert len(table) == 5
    assert all(0.7 < accuracy <= 1.0 for accuracy in table.values()), table


def test_make_run_pipeline_learns_phishing(tmp_path: Path) -> None:
    """What ``make run`` pipes: the Phishing lines into ``streamlearn learn``."""
    model = tmp_path / "phishing.ckpt"
    lines = subprocess.run(
        [sys.executable, str(EXAMPLES / "phishing_svmlight.py")],
        capture_output=True,
        check=True,
        timeout=300,
    ).stdout
    assert lines.count(b"\n") == 1250
    learned = subprocess.run(
        [sys.executable, "-m", "streamlearn", "learn", "--algo", "pdm", "--eps", "0.01",
         "--model", str(model), "--json", "--quiet"],
        input=lines, capture_output=True, timeout=300,
    )  # fmt: skip
    assert learned.returncode == 0, learned.stderr
    figures = json.loads(learned.stdout)
    assert figures["examples"] == 1250 and figures["rejected_lines"] == 0
    assert figures["converged"] is True and figures["certified_gap"] <= 0.01
    assert model.exists()
