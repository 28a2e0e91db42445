"""A missing optional dependency names the ``pip install`` that brings it, and is still
a ``ModuleNotFoundError`` for code that catches that."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from streamlearn.errors import MissingExtraError, missing_extra

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
#: a module imported, the module it needs, and what the error says
ADAPTERS = [
    (
        "streamlearn.river",
        "river",
        'streamlearn.river needs river: pip install "streamlearn[river]"',
    ),
    (
        "streamlearn.river.bank",
        "river",
        'streamlearn.river needs river: pip install "streamlearn[river]"',
    ),
    (
        "streamlearn.sklearn",
        "sklearn",
        'streamlearn.sklearn needs scikit-learn: pip install "streamlearn[sklearn]"',
    ),
]
PROBE = """
import sys
sys.modules[{hidden!r}] = None  # what an environment without it gives: ModuleNotFoundError
try:
    import {adapter}
except ModuleNotFoundError as error:
    print(type(error).__name__, error.name, error, sep="|")
"""


@pytest.mark.parametrize(("adapter", "hidden", "said"), ADAPTERS)
def test_a_missing_extra_says_which_install_fixes_it(adapter: str, hidden: str, said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(hidden=hidden, adapter=adapter)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    kind, name, message = done.stdout.strip().split("|")
    assert kind == "MissingExtraError" and name == hidden
    assert message == said


@pytest.mark.parametrize(("package", "extra"), [("river", "river"), ("scikit-learn", "sklearn")])
def test_the_named_extra_exists_and_brings_the_package(package: str, extra: str) -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    assert any(requirement.startswith(package + ">") for requirement in extras[extra])


def test_a_module_missing_inside_an_installed_package_is_not_blamed_on_the_extra() -> None:
    """river installed but broken (one of its own modules missing): the error stands."""
    broken = ModuleNotFoundError("No module named 'river.base'", name="river.base")
    missing_extra(broken, needed_by="streamlearn.river", module="river", package="river",
                  extra="river")  # fmt: skip
    with pytest.raises(MissingExtraError, match=r"streamlearn\[river\]"):
        missing = ModuleNotFoundError("No module named 'river'", name="river")
        missing_extra(missing, needed_by="streamlearn.river", module="river", package="river",
                      extra="river")  # fmt: skip
