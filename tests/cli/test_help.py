"""``--help`` reads at 80 columns, and docs/cli.md says what the help leaves out.

At 80 columns ``serve --help`` was 646 lines with 15 option names cut (``--bootstrap-serv…``):
the ``[env var: STREAMLEARN_CHECKPOINT_MIN_INTERVAL]`` of every option was one word wider
than the help column could shrink to, so rich cut the names instead.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from streamlearn.cli import app

REPOSITORY = Path(__file__).resolve().parents[2]
ROOT = typer.main.get_command(app)
COMMANDS: dict[str, Any] = ROOT.commands  # type: ignore[attr-defined]
WIDTH = 80


def long_names(command: Any) -> list[str]:
    """Every ``--name`` of the command's options, the ``--no-name`` of flags too."""
    names = [o for p in command.params for o in (*p.opts, *p.secondary_opts)]
    return [name for name in names if name.startswith("--")]


def rendered_help(argv: list[str], columns: int = WIDTH) -> str:
    result = CliRunner().invoke(app, [*argv, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_the_help_fits_80_columns_with_every_option_name_whole(command: str) -> None:
    text = rendered_help([command] if command else [])
    wide = [line for line in text.splitlines() if len(line) > WIDTH]
    assert wide == []
    names = long_names(COMMANDS[command] if command else ROOT)
    # whole: not followed by more of a name, nor by rich's ellipsis for a cut one
    cut = [n for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w…-])", text)]
    assert cut == []
    assert "…" not in text


def test_serve_help_is_a_few_screens_at_80_columns() -> None:
    """One short line of help an option: 646 lines before the panels, fewer than 200 now."""
    assert len(rendered_help(["serve"]).splitlines()) < 200
    assert len(rendered_help(["learn"]).splitlines()) < 100


def test_the_variables_are_stated_once_not_per_option() -> None:
    text = rendered_help(["serve"])
    assert "env var" not in text
    assert text.count("STREAMLEARN_<OPTION>") == 1


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_option_has_one_short_line_of_help(command: str) -> None:
    """At most 60 characters (``--algo`` lists the algorithms' names)."""
    options = [p for p in COMMANDS[command].params if p.param_type_name == "option"]
    assert options
    long = [(p.opts[0], p.help) for p in options if len(p.help) > 60 and p.name != "algo"]
    assert long == []


# -- docs/cli.md holds what the help no longer says -----------------------------------------


def tables(section: str) -> dict[str, list[list[str]]]:
    """Each ``### heading`` of a docs/cli.md section: the cells of its table's rows."""
    text = (REPOSITORY / "docs" / "cli.md").read_text(encoding="utf-8")
    start = text.index(f"\n{section}\n")
    end = text.find("\n## ", start + 1)
    found: dict[str, list[list[str]]] = {}
    heading = ""
    for line in text[start : end if end > 0 else None].splitlines():
        if line.startswith("### "):
            heading = line[4:]
        elif line.startswith("| `-"):
            found.setdefault(heading, []).append([c.strip() for c in line.strip("|").split("|")])
    return found


def flags(cell: str) -> set[str]:
    return set(re.findall(r"`(--?[a-z][a-z0-9-]*)`", cell))


LEARNER_OPTIONS = {n for row in tables("## learn")["Learner options"] for n in flags(row[0])}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_docs_cli_md_has_a_row_for_every_option(command: str) -> None:
    """The reference tables name exactly the command's options (--config, --help aside):
    a new option without a row, or a row for an option gone, fails."""
    reference = tables("## Options by command")
    documented = set()
    for heading, rows in reference.items():
        for row in rows:
            shared = heading.startswith("Options of predict")
            if heading == f"Options of {command}" or (shared and command in row[1]):
                documented |= flags(row[0])
    if command in ("learn", "serve"):
        documented |= LEARNER_OPTIONS
    params = [p for p in COMMANDS[command].params if p.name != "config"]
    expected = {o for p in params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}
    assert documented == expected


def test_docs_cli_md_says_at_least_what_the_help_says() -> None:
    """Each option's row is no shorter than its line of help: the long text moved to the
    page, it was not lost on the way."""
    reference = tables("## Options by command")
    learner = {n: row[-1] for row in tables("## learn")["Learner options"] for n in flags(row[0])}
    short = []
    for command, group in COMMANDS.items():
        meaning = dict(learner) if command in ("learn", "serve") else {}
        for heading, rows in reference.items():
            if heading == f"Options of {command}" or heading.startswith("Options of predict"):
                meaning.update((n, row[-1]) for row in rows for n in flags(row[0]))
        short += [
            (command, name, p.help)
            for p in group.params
            for name in p.opts
            if name in meaning and len(meaning[name]) < len(p.help or "")
        ]
    assert short == []
    serve = {n: row[-1] for row in reference["Options of serve"] for n in flags(row[0])}
    assert "STREAMLEARN_HTTP_TOKEN" in serve["--http-addr"]
    assert "session.timeout.ms" in serve["--consumer-option"]
