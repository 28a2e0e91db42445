"""Runs of keys taken together in one loop (``TogetherPoll.wait_run``) give what each
key's turn of its own gives, bit for bit, at the edges of the loop: models over the
byte bound from the start (every key spills the others), a bound on models that every
new key reaches, and polls of several partitions (each key waits in turn)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from keyed_streams import same_state

from streamlearn.keyed import KeyedBatch, KeyedModels, MemoryStates
from streamlearn.learn import LEARNERS, learner_from_state
from streamlearn.parse.svmlight import SvmlightParser


def _polls(
    seed: int, keys: int, partitions: int, n_polls: int = 12, messages: int = 30
) -> list[KeyedBatch]:
    """Polls of one labelled line per message over ``keys`` keys; with several
    ``partitions`` the messages of a poll go round them."""
    rng = np.random.default_rng(seed)
    out = []
    for number in range(n_polls):
        ids = rng.integers(keys, size=messages)
        lines = b"".join(
            b"%+d %d:%.3f %d:1\n" % (rng.choice([-1, 1]), 1 + i % 7, rng.normal(), 9 + i % 3)
            for i in ids
        )
        rows = SvmlightParser().feed(lines)
        batch = KeyedBatch.of([b"k%d" % i for i in ids], rows, first=number * messages)
        if partitions > 1:
            spread = (np.arange(messages) % partitions).astype(np.int32)
            batch = KeyedBatch(batch.keys, spread, batch.offsets, batch.first_lines,
                               batch.labelled, batch.questions)  # fmt: skip
        out.append(batch)
    return out


def _models(together: bool, max_models: int, max_bytes: int) -> KeyedModels:
    ticks = itertools.count()
    wall = lambda: float(next(ticks))  # noqa: E731 - the same stamps in both runs
    return KeyedModels(lambda: LEARNERS["pdm"](), learner_from_state, MemoryStates(wall=wall),
                       max_models=max_models, max_bytes=max_bytes, wall=wall,
                       together=together)  # fmt: skip


def _held(models: KeyedModels) -> list[tuple[Any, ...]]:
    return [
        (key, r.partition, dict(r.positions), r.examples, r.dirty, r.size, r.version,
         r.active_at)
        for key, r in models.resident.items()
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("keys", "max_models", "max_bytes", "partitions"),
    [(12, 1000, 1 << 30, 1), (7, 6, 1 << 30, 1), (12, 1000, 40_000, 1), (12, 1000, 1, 1),
     (12, 1000, 1 << 30, 3), (7, 4, 1 << 30, 2)],
)  # fmt: skip
def test_runs_of_keys_together_are_each_key_alone(
    keys: int, max_models: int, max_bytes: int, partitions: int
) -> None:
    alone = _models(False, max_models, max_bytes)
    together = _models(True, max_models, max_bytes)
    for number, batch in enumerate(_polls(keys + max_models, keys, partitions)):
        assert together.apply(batch) == alone.apply(batch), number
        assert _held(together) == _held(alone), number  # the LRU order too
        assert together.summary() == alone.summary(), number
        for key, resident in alone.resident.items():
            other = together.resident.peek(key)
            assert other is not None
            assert same_state(other.model.state_dict(), resident.model.state_dict()), key
    alone.save()
    together.save()
    assert together.store.history == alone.store.history  # type: ignore[attr-defined]
