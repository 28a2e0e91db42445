"""Fixtures of the source tests: one Tansu broker for the module, fresh topic names."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# tests/ has no __init__.py: make tests/services.py importable as the module ``services``
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.append(_TESTS)

from services import Tansu  # noqa: E402


@pytest.fixture(scope="module")
def tansu() -> Iterator[Tansu]:
    """A Tansu broker on a free port, stopped after the module."""
    broker = Tansu()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def topic_name() -> str:
    """A topic name no other test uses."""
    return f"topic-{uuid.uuid4().hex[:12]}"
