"""What the documentation and the deploy files show works: the Python of the README and of
docs/library.md runs, the commands and environment variables they give exist, and the
reference pages name every option.

A renamed option or attribute would otherwise leave the README, docs/, the benchmark
results, the Kafka walk-through, the Dockerfile, docker-compose.yml and the systemd unit
telling users to type something that fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import typer.main
from river import datasets

from streamlearn._kernels._aot import CPU_VARIABLE, JIT_VARIABLE
from streamlearn.cli import app
from streamlearn.group.signing import SECRET_FILE_VARIABLE, SECRET_VARIABLE
from streamlearn.http.auth import TOKEN_FILE_VARIABLE, TOKEN_VARIABLE
from streamlearn.learn.params import COMMON_PARAMS
from streamlearn.sources.kafka import SECURITY_VARIABLES

REPOSITORY = Path(__file__).resolve().parents[2]
DOCUMENTS = [
    "README.md",
    *sorted(str(p.relative_to(REPOSITORY)) for p in (REPOSITORY / "docs").glob("*.md")),
    "benchmarks/README.md",
    "examples/kafka_walkthrough.md",
    "deploy/README.md",
    "deploy/Dockerfile",
    "deploy/docker-compose.yml",
    "deploy/docker-compose.group.yml",
    "deploy/streamlearn.service",
]
#: the pages that describe each command in full (the README only tours them)
REFERENCE = {
    "learn": ["docs/cli.md"],
    "predict": ["docs/cli.md"],
    "eval": ["docs/cli.md"],
    "inspect": ["docs/cli.md"],
    "export": ["docs/cli.md", "docs/export.md"],
    # learner options: cli.md
    "serve": ["docs/operating.md", "docs/cli.md", "docs/group.md", "docs/keyed.md"],
    "warmup": ["docs/cli.md"],
}
#: flags of other tools that the reference pages name (Vowpal Wabbit's ``--passes``)
FOREIGN_FLAGS = {"--passes"}
#: the documents whose Python blocks run, and how many blocks each has at least
RUNNABLE = {"README.md": 3, "docs/library.md": 6, "docs/extending.md": 1, "docs/export.md": 1}
COMMAND = re.compile(
    r"\bstreamlearn (learn|serve|predict|eval|inspect|export|warmup)\b([^|>;&`\n]*)"
)
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


@pytest.mark.parametrize("document", ["docs/algorithms.md", "docs/extending.md"])
def test_the_common_parameters_are_all_named(document: str) -> None:
    """Both pages list every parameter that every learner takes."""
    page = text(document)
    section = page[page.index("ommon parameters") :]
    missing = [p.name for p in COMMON_PARAMS if f"`{p.name}`" not in section]
    assert not missing, f"{document} does not name {missing}"


def test_extending_names_every_member_of_the_source_protocols() -> None:
    from streamlearn.sources import base

    page = text("docs/extending.md")
    section = page[page.index("## Add a source") : page.index("## Add a metric")]
    for protocol in (base.Source, base.SkipsUnreadable, base.GuardsPositions):
        members = {name for name in vars(protocol) if not name.startswith("_")}
        members |= set(getattr(protocol, "__annotations__", {}))
        missing = sorted(m for m in members if f"`{m}`" not in section)
        assert not missing, f"docs/extending.md does not name {protocol.__name__}.{missing}"


def test_the_pages_exist() -> None:
    assert all((REPOSITORY / d).is_file() for d in DOCUMENTS)
    assert {d for pages in REFERENCE.values() for d in pages} <= set(DOCUMENTS)


@pytest.mark.parametrize("documents", [["README.md"], ["docs/cli.md", "docs/operating.md"]])
def test_the_documents_show_every_command(documents: list[str]) -> None:
    """The README's tour and the reference pages each show every command in use."""
    shown = {command for d in documents for command, _ in documented_commands(d)}
    assert shown == set(SUBCOMMANDS)


@pytest.mark.parametrize("page", sorted({d for pages in REFERENCE.values() for d in pages}))
def test_every_flag_of_a_reference_page_is_an_option(page: str) -> None:
    """Prose too: a flag named anywhere on a reference page is an option of some command."""
    known = {o for c in SUBCOMMANDS for o in options(c)} | FOREIGN_FLAGS
    known.update(o for param in ROOT.params for o in (*param.opts, *param.secondary_opts))
    assert sorted(set(FLAG.findall(text(page))) - known) == []


@pytest.mark.parametrize("command", sorted(REFERENCE))
def test_the_reference_names_every_option(command: str) -> None:
    """Each option of a command (``--flag`` or its ``--no-flag``) is named on its pages."""
    pages = " ".join(text(d) for d in REFERENCE[command])
    named = set(FLAG.findall(pages))
    missing = [
        param.opts[0]
        for param in SUBCOMMANDS[command].params
        if any(o.startswith("--") for o in param.opts)
        and not named & {*param.opts, *param.secondary_opts}
    ]
    assert missing == []


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_documented_variable_is_read(document: str) -> None:
    known = {param.envvar for c in SUBCOMMANDS.values() for param in c.params if param.envvar}
    known.update(param.envvar for param in ROOT.params if param.envvar)
    known.update(SECURITY_VARIABLES)
    known.update((TOKEN_VARIABLE, TOKEN_FILE_VARIABLE, SECRET_VARIABLE, SECRET_FILE_VARIABLE))
    known.update((JIT_VARIABLE, CPU_VARIABLE))  # the kernels' (streamlearn._kernels._aot)
    assert sorted(set(VARIABLE.findall(text(document))) - known) == []


def python_blocks(document: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text(document), flags=re.DOTALL)


@pytest.mark.parametrize("document", sorted(RUNNABLE))
def test_the_python_blocks_run(document: str) -> None:
    """Each block runs with the names it leaves to the reader bound to Phishing's rows."""
    rows = list(datasets.Phishing())
    keys = sorted(rows[0][0])
    X = np.array([[x[k] for k in keys] for x, _ in rows])
    y = np.array([1 if label else -1 for _, label in rows])
    blocks = python_blocks(document)
    assert len(blocks) >= RUNNABLE[document]
    for block in blocks:
        names = {"X": X[:1000], "y": y[:1000], "X_test": X[1000:], "y_test": y[1000:]}
        names.update(X_new=X[900:1000], y_new=y[900:1000])
        exec(compile(block, document, "exec"), names)


def test_the_image_build_context_holds_only_what_the_dockerfile_copies() -> None:
    """Without an ignore file the context sent to the builder held the .venv (700 MB)."""
    ignore = (REPOSITORY / "deploy" / "Dockerfile.dockerignore").read_text().splitlines()
    rules = [line.strip() for line in ignore if line.strip() and not line.startswith("#")]
    assert rules[0] == "*"  # everything out, then what is copied back in
    allowed = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    copied = set()
    for line in (REPOSITORY / "deploy" / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            copied.update(part.rstrip("/") for part in line.split()[1:-1])
    assert copied and copied == allowed
