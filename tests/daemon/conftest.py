"""Fixtures of the daemon tests: a Tansu broker for the module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.append(_TESTS)

from services import Tansu  # noqa: E402


@pytest.fixture(scope="module")
def broker() -> Iterator[Tansu]:
    """A Tansu broker on a free port, stopped after the module."""
    tansu = Tansu()
    try:
        yield tansu
    finally:
        tansu.stop()
