"""The daemon's drift test: a concept that changes mid-poll raises one alarm, logged with
the example it came at and counted; a concept that holds raises none; the test learns a
poll in pieces, which leaves the model exactly as learning it whole."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from memory_source import MemorySource
from test_daemon import SETTINGS, decode

from streamlearn.config import LearnerSpec
from streamlearn.daemon import Daemon

#: examples of each message (a poll of 3 messages holds thousands: pieces matter)
LINES = 2000


def concept(rng: np.random.Generator, n: int, direction: np.ndarray) -> list[str]:
    lines = []
    for _ in range(n):
        x = rng.normal(size=direction.shape[0])
        label = "+1" if x @ direction + rng.normal(scale=0.3) > 0 else "-1"
        lines.append(label + " " + " ".join(f"{i + 1}:{v:.5f}" for i, v in enumerate(x)))
    return lines


def stream(changes: bool, seed: int = 3) -> list[bytes]:
    """12,000 examples of one linear concept; with ``changes``, the concept turns to
    another one at example 7,000 (in the middle of a message)."""
    rng = np.random.default_rng(seed)
    first = rng.normal(size=8)
    lines = concept(rng, 7000, first)
    lines += concept(rng, 5000, -first if changes else first)
    return [("\n".join(lines[i : i + LINES]) + "\n").encode() for i in range(0, 12000, LINES)]


class DriftObserver:
    def __init__(self) -> None:
        self.detections = 0
        self.statistics: list[float] = []

    def observe_drift(self, statistic: float, detected: bool) -> None:
        self.statistics.append(statistic)
        self.detections += detected

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def run(values: list[bytes], **settings: Any) -> tuple[Daemon, DriftObserver]:
    observer = DriftObserver()
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": 1.0})
    daemon = Daemon(spec, MemorySource({0: values}), decode=decode,
                    settings=replace(SETTINGS, **settings), observer=observer)  # fmt: skip
    daemon.run()
    return daemon, observer


def test_a_changed_concept_is_an_alarm_soon_after_and_a_steady_one_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="streamlearn.daemon"):
        _, steady = run(stream(changes=False))
        assert steady.detections == 0 and "drift" not in caplog.text
        _, changed = run(stream(changes=True))
    assert changed.detections == 1
    at = [int(n) for n in re.findall(r"drift at example (\d+)", caplog.text)]
    assert len(at) == 1 and 7000 < at[0] <= 7000 + 1500, caplog.text


def test_learning_in_pieces_leaves_the_model_as_learning_whole_polls() -> None:
    watched, _ = run(stream(changes=True))
    unwatched, observer = run(stream(changes=True), drift_threshold=0.0)
    assert observer.statistics == []  # no test, nothing reported
    assert same(watched.learner.state_dict(), unwatched.learner.state_dict())
    assert watched.stream_examples == unwatched.stream_examples == 12000


def same(a: Any, b: Any) -> bool:
    """Whether two states are equal, bit for bit (NaN equal to NaN)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return bool(a == b)
