"""Streams of river dicts for the river adapter tests, and the engine twin of an adapter."""

from __future__ import annotations

import functools
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from river import datasets

from streamlearn.learn import LinearLearner
from streamlearn.learn.inputs import as_batch
from streamlearn.learn.state import unpacked_weights
from streamlearn.river import LearnerClassifier, stable_hash
from streamlearn.river.options import replay_schedule

Stream = list[tuple[dict[Hashable, Any], Any]]

#: the shared data folder beside the repository (../shared/data)
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
A9A = SHARED_DATA / "adult" / "a9a.train"
#: parameters for learners that have no default for one of them
REQUIRED = {"pfm": {"beta": 0.01}}


@functools.cache
def phishing() -> Stream:
    """river's bundled Phishing: 1250 dicts of 9 features, bool labels."""
    return list(datasets.Phishing())


@functools.cache
def _a9a(limit: int) -> Stream:
    stream: Stream = []
    with A9A.open() as lines:
        for line, _ in zip(lines, range(limit), strict=False):
            label, *features = line.split()
            x: dict[Hashable, Any] = {
                int(token.split(":")[0]): float(token.split(":")[1]) for token in features
            }
            stream.append((x, float(label) > 0))
    return stream


def a9a(limit: int = 3000) -> Stream:
    """The first ``limit`` rows of Adult (a9a.train) as ``{feature index: value}`` dicts."""
    if not A9A.is_file():
        pytest.skip(f"shared data set missing: {A9A} (build it with ../shared/datasets/build.py)")
    return _a9a(limit)


def required(adapter_class: type[LearnerClassifier]) -> dict[str, Any]:
    return dict(REQUIRED.get(adapter_class.learner_class.algorithm, {}))


def engine_twin(model: LearnerClassifier, stream: Stream) -> LinearLearner:
    """The engine learner fed the same examples as ``model`` through its batch path: the
    model's own feature indices (or hashes) and label signs, zeros left out, on the
    model's replay schedule."""
    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    labels: list[float] = []
    for x, y in stream:
        for key, value in x.items():
            if value == 0:
                continue
            if model.n_features is None:
                indices.append(int(model._index[key]))
            else:
                indices.append(stable_hash(key) % model.n_features)
            values.append(float(value))
        indptr.append(len(indices))
        labels.append(model._signs[y])
    learner = model.learner_class(**model._learner_params())
    batch = as_batch((np.array(indptr), np.array(indices, dtype=np.int64), np.array(values)),
                     np.array(labels))  # fmt: skip
    schedule = replay_schedule(
        model.replay_every, model.replay_passes, learner.state.buffer.max_examples
    )
    learner.learn_on_schedule(batch, schedule, 0)
    return learner


def assert_same_learner(ours: LinearLearner, theirs: LinearLearner) -> None:
    """Bit-identical weights, scalars, counters and buffer (the arena's allocated size aside,
    which depends only on how the arrivals were chunked)."""
    a, b = ours.state_dict(), theirs.state_dict()
    for key in ("weights", "scalars", "stats"):
        np.testing.assert_array_equal(unpacked(a, key), unpacked(b, key), err_msg=key)
    for key in ("examples_seen", "passes", "converged", "delta_value", "window_seen"):
        assert a[key] == b[key] or (a[key] != a[key] and b[key] != b[key]), key
    for key in ("indptr", "indices", "values", "labels", "alpha", "sqnorm", "positions"):
        np.testing.assert_array_equal(a["buffer"][key], b["buffer"][key], err_msg=key)
    for key in ("write_pos", "evicted", "unbuffered"):
        assert a["buffer"][key] == b["buffer"][key], key
    for key in ("indptr", "indices", "values", "labels"):
        np.testing.assert_array_equal(a["pending"][key], b["pending"][key], err_msg=key)
    assert a["extra"] == b["extra"]


def unpacked(state: dict[str, Any], key: str) -> Any:
    """``state[key]``, with the weights as one array (a state may store their nonzeros)."""
    return unpacked_weights(state[key]) if key == "weights" else state[key]
