"""The keys of a poll learned together (one kernel call) give what each key's turn of
its own gives, bit for bit: the same models, answers, rejections, counts, positions and
state records, through spills and restores, messages read again, labels refused,
questions, Delta settling, evictions, replays and learners of several rules."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from keyed_streams import same_state

from streamlearn.keyed import KeyedBatch, KeyedModels, MemoryStates
from streamlearn.learn import LEARNERS, Model, ModelBank, learner_from_state
from streamlearn.learn.base import LinearLearner
from streamlearn.parse.svmlight import SvmlightParser
from streamlearn.replay import ReplaySchedule


def _line(rng: np.random.Generator, key: int) -> bytes:
    """One message's line: mostly a labelled row (binary features for keys divisible by
    three), sometimes a question, a label 0, a label no binary model takes, or a row
    wider than a small buffer holds."""
    width = 20 if rng.random() < 0.04 else int(rng.integers(0, 6))
    features = np.sort(rng.choice(30, size=width, replace=False)) + 1
    values = np.ones(width) if key % 3 == 0 else rng.normal(size=width).round(3)
    text = " ".join(f"{i}:{v:g}" for i, v in zip(features, values, strict=True))
    kind = rng.random()
    if kind < 0.1:
        return text.encode()  # a question
    label = "2" if kind < 0.13 else "0" if kind < 0.18 else rng.choice(["+1", "-1"])
    return f"{label} {text}".encode()


def polls(seed: int, n_polls: int = 14, messages: int = 70, keys: int = 30) -> list[KeyedBatch]:
    """Polls of one line per message; every fourth poll is the one before read again,
    at the same offsets; the rest go on from where the stream stopped."""
    rng = np.random.default_rng(seed)
    out: list[KeyedBatch] = []
    offset = 0
    for number in range(n_polls):
        if number % 4 == 3:
            out.append(out[-1])
            continue
        ids = rng.integers(keys, size=messages)
        names: list[bytes | None] = [b"k%d" % i for i in ids]
        names[int(rng.integers(messages))] = None  # a message without a key
        lines = b"".join(_line(rng, int(i)) + b"\n" for i in ids)
        out.append(KeyedBatch.of(names, SvmlightParser().feed(lines), first=offset))
        offset += messages
    return out


BUILDS: dict[str, Callable[[], Model]] = {
    "pdm, delta auto, large buffer": lambda: LEARNERS["pdm"](),
    "pdm, small buffer and arena": lambda: LEARNERS["pdm"](buffer_size=6, buffer_nnz=12),
    "pdm, delta 1, forget never": lambda: LEARNERS["pdm"](delta=1.0, forget="never", buffer_size=5),
    "paum": lambda: LEARNERS["paum"](buffer_size=9),
    "kozinec": lambda: LEARNERS["kozinec"](buffer_size=7, delta=0.5),
    "perceptron": lambda: LEARNERS["perceptron"](delta="first"),
    "a one-vs-rest bank": lambda: ModelBank(LEARNERS["pdm"](buffer_size=8)),
}


def _restore(state: dict[str, Any]) -> Model:
    if state.get("format") == "bank" or "learners" in state:
        return ModelBank.from_state(state)
    return learner_from_state(state)


def _models(build: Callable[[], Model], together: bool, max_models: int) -> KeyedModels:
    ticks = itertools.count()
    wall = lambda: float(next(ticks))  # noqa: E731 - the same stamps in both runs
    return KeyedModels(build, _restore, MemoryStates(wall=wall), max_models=max_models,
                       wall=wall, together=together)  # fmt: skip


def _held(models: KeyedModels) -> dict[bytes, tuple[Any, ...]]:
    return {
        key: (r.partition, dict(r.positions), r.examples, r.dirty, r.size, r.version,
              r.active_at)
        for key, r in models.resident.items()
    }  # fmt: skip


@pytest.mark.parametrize("name", list(BUILDS))
@pytest.mark.parametrize("max_models", [1000, 9])
def test_learning_together_is_each_key_learning_alone(name: str, max_models: int) -> None:
    build = BUILDS[name]
    alone = _models(build, together=False, max_models=max_models)
    together = _models(build, together=True, max_models=max_models)
    for number, batch in enumerate(polls(seed=len(name) + max_models)):
        schedule = ReplaySchedule(every=7, passes=1) if number == 5 else None
        kwargs = {} if schedule is None else {"schedule": schedule}
        expected = alone.apply(batch, **kwargs)
        got = together.apply(batch, **kwargs)
        assert got == expected, number
        if number % 3 == 2:
            alone.replay(max_passes=1)
            together.replay(max_passes=1)
        assert _held(together) == _held(alone), number
        assert together.summary() == alone.summary(), number
        for key, resident in alone.resident.items():
            other = together.resident.peek(key)
            assert other is not None
            assert same_state(other.model.state_dict(), resident.model.state_dict()), key
    alone.save()
    together.save()
    assert together.store.history == alone.store.history  # type: ignore[attr-defined]


def test_the_keys_of_a_plain_poll_go_together() -> None:
    """A poll of keys whose models learned before, one example each, is one kernel call:
    every model is laid out for it (and none of a bank)."""
    models = _models(lambda: LEARNERS["pdm"](), together=True, max_models=1000)
    names = [b"a", b"b", b"c"]
    rows = b"+1 1:1\n-1 2:1\n+1 3:1\n"
    for first in (0, 3, 6):
        models.apply(KeyedBatch.of(names, SvmlightParser().feed(rows), first=first))
    layouts = models._layouts
    assert all(isinstance(layouts.known(key).learner, LinearLearner) for key in names)  # type: ignore[union-attr]
    assert models.summary()["update_events"] > 0
