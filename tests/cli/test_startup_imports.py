"""The commands that work on files import what they use, not the daemon's libraries.

``learn`` on one line must start within 3x ``python -c "import numpy"``
(benchmarks/bench_startup.py): the command line imports the daemon, HTTP, group,
Kafka, Prometheus, river and scikit-learn modules only in the commands that use them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: what ``learn``, ``predict``, ``eval`` and ``inspect`` must not import
UNUSED = (
    "aiohttp",
    "kafka",
    "prometheus_client",
    "river",
    "rich",  # typer imports it only to print help or an error; the progress bar needs a tty
    "sklearn",
    "threadpoolctl",
    "tomllib",  # only with --config
    "streamlearn.daemon",
    "streamlearn.group",
    "streamlearn.http",
    "streamlearn.jobs.serve",
    "streamlearn.jobs.warmup",
    "streamlearn.keyed",
    "streamlearn.metrics",
    "streamlearn.river",
    "streamlearn.sklearn",
    "streamlearn.sources.kafka",
)

RUN_COMMANDS_AND_LIST_MODULES = """
import json, sys
from streamlearn.cli import main

def run(*argv):
    sys.argv = ["streamlearn", *argv]
    try:
        main()
    except SystemExit as exit:
        assert not exit.code, (argv, exit.code)

model, data, listing = sys.argv[1:4]
seen = {}
run("learn", "--quiet", "--json", "--model", model, data)
seen["learn"] = sorted(sys.modules)
run("predict", "--model", model, data)
run("eval", "--model", model, "--json", data)
run("inspect", "--json", model)
seen["predict, eval, inspect"] = sorted(sys.modules)
with open(listing, "w") as out:
    json.dump(seen, out)
"""


def unused_imported(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == u or m.startswith(u + ".") for u in UNUSED)]


def test_learn_predict_eval_inspect_import_none_of_the_daemons_libraries(
    tmp_path: Path,
) -> None:
    data = tmp_path / "one.svm"
    data.write_text("+1 1:0.5 7:1\n")
    listing = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN_COMMANDS_AND_LIST_MODULES,
         str(tmp_path / "m.ckpt"), str(data), str(listing)],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(listing.read_text())
    assert "streamlearn.cli" in seen["learn"] and "numpy" in seen["learn"]
    assert {command: unused_imported(modules) for command, modules in seen.items()} == {
        "learn": [],
        "predict, eval, inspect": [],
    }


def test_the_check_would_see_a_daemon_import() -> None:
    """The listing is of this process's modules, the prefixes as meant."""
    assert unused_imported(["streamlearn.http.api", "kafka", "streamlearn.learn"]) == [
        "streamlearn.http.api",
        "kafka",
    ]
