"""The river adapters learn exactly what the engine learns from the same examples."""

from __future__ import annotations

import numpy as np
import pytest
from river_adapter_streams import a9a, assert_same_learner, engine_twin, phishing, required

from streamlearn.river import ADAPTERS, LearnerClassifier, PAUMClassifier, PDMClassifier

ALL = sorted(ADAPTERS.items())


def _run(model: LearnerClassifier, stream: list, progressive: bool) -> int:
    """learn_one over the stream (after predict_one when ``progressive``); mistakes."""
    mistakes = 0
    for x, y in stream:
        if progressive:
            mistakes += model.predict_one(x) != y
        model.learn_one(x, y)
    return mistakes


@pytest.mark.parametrize("progressive", [False, True], ids=["learn", "progressive"])
@pytest.mark.parametrize("delta", ["auto", 1.0])
@pytest.mark.parametrize(("name", "adapter"), ALL, ids=[name for name, _ in ALL])
def test_phishing_weights_equal_the_engine(
    name: str, adapter: type[LearnerClassifier], delta: object, progressive: bool
) -> None:
    # a small buffer, so that eviction by count and by nonzeros is part of the comparison
    model = adapter(delta=delta, buffer_size=700, buffer_nnz=3000, **required(adapter))
    _run(model, phishing(), progressive)
    twin = engine_twin(model, phishing())
    assert_same_learner(model.learner, twin)
    assert model.learner.buffer.evicted > 0
    assert model.learner.updates > 0


@pytest.mark.parametrize("name", ["pdm", "paum", "kozinec", "pdm-succ"])
def test_adult_weights_equal_the_engine(name: str) -> None:
    adapter = ADAPTERS[name]
    stream = a9a(3000)
    model = adapter(**required(adapter))
    _run(model, stream, progressive=True)
    assert_same_learner(model.learner, engine_twin(model, stream))


def test_progressive_mistakes_match_a_plain_loop() -> None:
    """predict_one before learn_one (the deferred path) gives the predictions that a
    model which only learned the examples before gives."""
    stream = phishing()[:300]
    progressive = PDMClassifier(delta=1.0)
    learner_only = PDMClassifier(delta=1.0)
    for x, y in stream:
        expected = learner_only.predict_proba_one(x)
        learner_only.learn_one(x, y)
        learner_only.predict_one({})  # a predict of another example in between
        assert progressive.predict_proba_one(x) == expected
        progressive.learn_one(x, y)
    assert_same_learner(progressive.learner, learner_only.learner)


@pytest.mark.parametrize("every", [1, 97, 400])
def test_replay_every_matches_the_engine_schedule(every: int) -> None:
    model = PDMClassifier(eps=0.05, delta=1.0, replay_every=every, replay_passes=2)
    stream = phishing()[:800]
    _run(model, stream, progressive=True)
    twin = engine_twin(model, stream)
    assert model.learner.summary()["passes"] > 0
    assert_same_learner(model.learner, twin)


def test_replay_during_the_auto_delta_window_matches_the_engine() -> None:
    """A replay before the first 1000 examples fixes Delta early, as in the engine."""
    model = PAUMClassifier(replay_every=300)
    stream = phishing()
    _run(model, stream, progressive=False)
    twin = engine_twin(model, stream)
    assert model.learner.delta_ is not None
    assert_same_learner(model.learner, twin)


def test_auto_replays_on_the_growing_schedule_as_the_engine_does() -> None:
    """'auto': a replay after 1000, 2000, 3000 and 4500 examples (half the count is
    below 1000 until 2000), each one pass, the same as the engine's."""
    model = PDMClassifier(eps=0.05, delta=1.0, replay_every="auto")
    stream = phishing() * 4
    _run(model, stream, progressive=True)
    assert model.learner.summary()["passes"] == 4
    assert_same_learner(model.learner, engine_twin(model, stream))


def test_no_replay_with_replay_every_none() -> None:
    model = PDMClassifier(delta=1.0, replay_every=None)
    _run(model, phishing(), progressive=False)
    assert model.summary()["passes"] == 0


def test_replay_on_demand_converges() -> None:
    model = PDMClassifier(eps=0.1, delta=1.0)
    _run(model, phishing(), progressive=False)
    model.replay()
    assert model.summary()["converged"]
    assert_same_learner(model.learner, engine_twin(model, phishing()).replay())


def test_hashing_matches_the_engine_with_collisions() -> None:
    model = PDMClassifier(delta=1.0, n_features=4)  # 9 names into 4 indices: collisions
    _run(model, phishing(), progressive=True)
    assert model.learner.n_features_in_ <= 4
    assert_same_learner(model.learner, engine_twin(model, phishing()))


def test_unsorted_keys_and_zeros_are_canonicalized() -> None:
    """Key order does not matter and zero values are absent values."""
    stream = phishing()[:400]
    reversed_keys = [(dict(reversed(list(x.items()))), y) for x, y in stream]
    no_zeros = [({k: v for k, v in x.items() if v != 0}, y) for x, y in stream]
    models = [PDMClassifier(delta=1.0) for _ in range(3)]
    for model, data in zip(models, (stream, reversed_keys, no_zeros), strict=True):
        _run(model, data, progressive=True)
    reference = models[0].weights
    for model in models[1:]:
        assert model.weights == {k: reference[k] for k in model.weights}
        assert model.intercept == models[0].intercept


@pytest.mark.parametrize("progressive", [False, True], ids=["learn", "progressive"])
@pytest.mark.parametrize("buffer_nnz", [300, 4000])
def test_long_examples_grow_the_workspace(buffer_nnz: int, progressive: bool) -> None:
    """Examples far longer than the first workspace (64 entries), unsorted indices, and
    (with ``buffer_nnz=300``) examples too long for the buffer: learned, never stored,
    whether learned at once or after a prediction."""
    rng = np.random.default_rng(0)
    stream = []
    for _ in range(60):
        keys = rng.choice(5000, size=int(rng.integers(1, 400)), replace=False)
        stream.append(({int(k): float(rng.normal()) for k in keys}, bool(rng.random() < 0.5)))
    model = PDMClassifier(delta=1.0, buffer_nnz=buffer_nnz)
    _run(model, stream, progressive=progressive)
    assert_same_learner(model.learner, engine_twin(model, stream))
    assert (model.learner.buffer.unbuffered > 0) == (buffer_nnz == 300)
