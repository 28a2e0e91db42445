"""The table of docs/operating.md that says what each mode of ``serve`` takes (one model,
a learning group, keyed models) says what ``serve`` does: every "yes" is accepted, every
"no" refused before anything starts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from streamlearn.cli import _keyed_settings
from streamlearn.config import LearnerSpec
from streamlearn.errors import InvalidParameterError
from streamlearn.jobs.serve import ServeConfig
from streamlearn.keyed.settings import KeyedSettings

PAGE = Path(__file__).resolve().parents[2] / "docs" / "operating.md"
KAFKA = {"source": "kafka", "bootstrap_servers": "127.0.0.1:9092", "topic": "examples"}
MODES = ("one model", "learning group", "keyed models")
#: each row's option as ServeConfig arguments (the learner's parameters under "learner")
ROWS: dict[str, dict[str, Any]] = {
    "--source stdin": {"source": "stdin"},
    "--one-vs-rest": {"one_vs_rest": True},
    "--delta auto": {"learner": {"delta": "auto"}},
    "--checkpoint-dir": {"checkpoint_dir": "/tmp/streamlearn-modes"},
    "--http-learn": {"http_learn": True, "http_addr": "127.0.0.1:0"},
    "--forget never": {"learner": {"forget": "never"}},
    "--algo kozinec": {"algorithm": "kozinec"},
    "--key-ttl": {"key_ttl": 3600.0},
}


def table() -> dict[str, list[str]]:
    """The rows of the table: option -> the cell of each mode."""
    rows: dict[str, list[str]] = {}
    for line in PAGE.read_text().splitlines():
        found = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if found and found.group(1) in ROWS:
            rows[found.group(1)] = [cell.strip() for cell in found.group(2).split("|")]
    return rows


def configure(mode: str, row: dict[str, Any]) -> None:
    """Check ``row``'s option in ``mode`` as ``serve`` does; raises its refusal."""
    options = {**KAFKA, **{k: v for k, v in row.items() if k not in ("learner", "algorithm")}}
    params = {"delta": 1.0, **row.get("learner", {})}
    learner = LearnerSpec(row.get("algorithm", "pdm"), params)
    key_ttl = options.pop("key_ttl", None)
    if mode == "keyed models":
        options["keyed"] = KeyedSettings(key_ttl=key_ttl)
    else:
        _keyed_settings(False, None, None, None, key_ttl)  # the command line's own check
    if mode == "learning group":
        options["sync_topic"] = "sync"
    ServeConfig(learner, **options)


def test_the_table_has_every_row_and_mode() -> None:
    rows = table()
    assert sorted(rows) == sorted(ROWS)
    assert all(len(cells) == len(MODES) for cells in rows.values())


@pytest.mark.parametrize("option", sorted(ROWS))
@pytest.mark.parametrize("mode", MODES)
def test_each_cell_says_what_serve_does(option: str, mode: str) -> None:
    cell = table()[option][MODES.index(mode)]
    assert cell.startswith(("yes", "no:")), cell
    if cell.startswith("yes"):
        configure(mode, ROWS[option])
    else:
        with pytest.raises(InvalidParameterError):
            configure(mode, ROWS[option])
