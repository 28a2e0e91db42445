"""A clone is enough: the shell commands of the README's tour run as written in a folder
holding only the repository's examples/ (no ``../shared`` beside it), and the Kafka
walk-through's data come from a script of examples/ too.

The commands that start a daemon (``serve``) or need a broker are left to the daemon and
Kafka tests; ``warmup`` to the CLI's.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
#: what a user reads and types from
DOCUMENTS = [
    "README.md",
    *sorted(str(p.relative_to(REPOSITORY)) for p in (REPOSITORY / "docs").glob("*.md")),
    "examples/kafka_walkthrough.md",
    "deploy/README.md",
    *sorted(str(p.relative_to(REPOSITORY)) for p in (REPOSITORY / "examples").glob("*.py")),
]
#: commands not run here: they start a daemon, a broker or a build, or compile kernels
NOT_HERE = re.compile(r"^(make |docker |streamlearn (serve|warmup)\b|.*kafka_producer\.py)")
#: ``streamlearn`` and ``python`` as in an activated .venv
PRELUDE = f"""set -euo pipefail
python() {{ {sys.executable!r} "$@"; }}
streamlearn() {{ {sys.executable!r} -m streamlearn "$@"; }}
"""

pytestmark = pytest.mark.slow


def shell_blocks(document: str) -> list[list[str]]:
    """The commands of each fenced block without a language, continuations joined."""
    text = (REPOSITORY / document).read_text(encoding="utf-8").replace("\\\n", " ")
    blocks: list[list[str]] = []
    block: list[str] | None = None  # inside a block without a language
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            block = [] if fenced and line == "```" else None
            if block is not None:
                blocks.append(block)
        elif block is not None and line.strip():
            block.append(line.strip())
    return blocks


def clone(tmp_path: Path) -> Path:
    """A folder laid out as a clone's root, with nothing beside it."""
    root = tmp_path / "clone"
    root.mkdir()
    (root / "examples").symlink_to(REPOSITORY / "examples")
    assert not (root.parent / "shared").exists()
    return root


def run(commands: list[str], where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", PRELUDE + "\n".join(commands)],
        cwd=where, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


#: the page of the benchmarks, which measure the real data sets of ``../shared/data``
BENCHMARK_PAGE = "docs/figures.md"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_document_reads_data_a_clone_lacks(document: str) -> None:
    text = (REPOSITORY / document).read_text(encoding="utf-8")
    assert document == BENCHMARK_PAGE or "shared/data" not in text
    assert not re.search(r"path/to/\S*\.(train|test|svm)\b|\$A9A\b", text)


def test_the_readme_tour_runs_in_a_clone(tmp_path: Path) -> None:
    commands = [
        line
        for block in shell_blocks("README.md")
        for line in block
        if re.match(r"(python examples/|streamlearn |cat |head )", line)
        and not NOT_HERE.match(line)
    ]
    ran = {m.group(1) for line in commands for m in re.finditer(r"streamlearn (\w+)", line)}
    assert ran == {"learn", "predict", "eval", "inspect", "export"}, commands
    root = clone(tmp_path)
    done = run(commands, root)
    assert done.returncode == 0, done.stderr[-3000:]
    # what the commands promise: models, one score per test line, figures of each model
    assert all((root / name).is_file() for name in ("m.ckpt", "p.ckpt", "m2.ckpt", "s.ckpt"))
    assert json.loads((root / "m.json").read_text())["format"] == "streamlearn-linear"
    assert (root / "scores.txt").read_text().count("\n") == 16281
    assert re.search(r"^accuracy\s+0\.[89]", done.stdout, flags=re.MULTILINE), done.stdout
    assert re.search(r"^macro_f1\s+0\.\d", done.stdout, flags=re.MULTILINE), done.stdout


def test_the_kafka_walkthrough_makes_the_files_it_streams(tmp_path: Path) -> None:
    """Its first block writes the two files the later steps send, as large as it says
    (326 messages of 100 lines hold 32561)."""
    first, *later = shell_blocks("examples/kafka_walkthrough.md")
    made = [line for line in first if line.startswith("python examples/")]
    root = clone(tmp_path)
    done = run(made, root)
    assert done.returncode == 0, done.stderr
    read = {m for block in later for line in block for m in re.findall(r"\badult\.\w+", line)}
    assert read == {"adult.train", "adult.test"}
    train = (root / "adult.train").read_text().splitlines()
    assert len(train) == 32561 and -(-len(train) // 100) == 326
    assert len((root / "adult.test").read_text().splitlines()) == 16281
    assert train != (root / "adult.test").read_text().splitlines()[: len(train)]
