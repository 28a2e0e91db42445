"""What the documentation and the deploy files show works: the README's Python runs, and
the commands and environment variables they give exist.

A renamed option or attribute would otherwise leave the README, the Kafka walk-through,
the Dockerfile, docker-compose.yml and the systemd unit telling users to type something
that fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import typer.main
from river import datasets

from streamlearn.cli import app
from streamlearn.sources.kafka import SECURITY_VARIABLES

REPOSITORY = Path(__file__).resolve().parents[2]
DOCUMENTS = [
    "README.md",
    "examples/kafka_walkthrough.md",
    "deploy/README.md",
    "deploy/Dockerfile",
    "deploy/docker-compose.yml",
    "deploy/streamlearn.service",
]
COMMAND = re.compile(r"\bstreamlearn (learn|serve|predict|eval|inspect)\b([^|>;&`\n]*)")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: a variable's name, not a prefix written as ``STREAMLEARN_KAFKA_SASL_*`` or ``..._<OPTION>``
VARIABLE = re.compile(r"\bSTREAMLEARN_[A-Z0-9_]*[A-Z0-9]\b(?![<*])")

ROOT = typer.main.get_command(app)
SUBCOMMANDS = ROOT.commands  # type: ignore[attr-defined]


def text(document: str) -> str:
    """The document with shell line continuations joined."""
    return (REPOSITORY / document).read_text(encoding="utf-8").replace("\\\n", " ")


def options(command: str) -> set[str]:
    names = {"--help", "-h"}
    for param in SUBCOMMANDS[command].params:
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


def documented_commands(document: str) -> list[tuple[str, list[str]]]:
    return [(m.group(1), FLAG.findall(m.group(2))) for m in COMMAND.finditer(text(document))]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_documented_flag_is_an_option_of_its_command(document: str) -> None:
    unknown = [
        (command, flag)
        for command, flags in documented_commands(document)
        for flag in flags
        if flag not in options(command)
    ]
    assert unknown == []


def test_the_documents_show_every_command() -> None:
    shown = {command for d in DOCUMENTS for command, _ in documented_commands(d)}
    assert shown == set(SUBCOMMANDS)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_documented_variable_is_read(document: str) -> None:
    known = {param.envvar for c in SUBCOMMANDS.values() for param in c.params if param.envvar}
    known.update(param.envvar for param in ROOT.params if param.envvar)
    known.update(SECURITY_VARIABLES)
    assert sorted(set(VARIABLE.findall(text(document))) - known) == []


def python_blocks(document: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text(document), flags=re.DOTALL)


def test_the_readme_python_runs() -> None:
    """Each block runs with the names it leaves to the reader bound to Phishing's rows."""
    rows = list(datasets.Phishing())
    keys = sorted(rows[0][0])
    X = np.array([[x[k] for k in keys] for x, _ in rows])
    y = np.array([1 if label else -1 for _, label in rows])
    blocks = python_blocks("README.md")
    assert len(blocks) >= 3
    for block in blocks:
        names = {"X": X[:1000], "y": y[:1000], "X_test": X[1000:], "y_test": y[1000:]}
        names.update(X_new=X[900:1000], y_new=y[900:1000])
        exec(compile(block, "README.md", "exec"), names)
