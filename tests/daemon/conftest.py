"""Fixtures of the daemon tests: a Tansu broker for the module, and no daemon process
outliving its test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.append(_TESTS)

from serve_process import Serve  # noqa: E402
from services import Tansu  # noqa: E402


@pytest.fixture(scope="module")
def broker() -> Iterator[Tansu]:
    """A Tansu broker on a free port, stopped after the module."""
    tansu = Tansu()
    try:
        yield tansu
    finally:
        tansu.stop()


@pytest.fixture(autouse=True)
def no_daemon_left_running() -> Iterator[None]:
    """Kill every ``streamlearn serve`` a test started and left running, even when the
    test failed (a failed wait, a failed assertion)."""
    try:
        yield
    finally:
        Serve.kill_all()
