"""A bank's shared buffer starts with few slots and doubles them as examples come (its
rows of signs and slack with them): the bank learns, replays, evicts and restores bit for
bit as with every slot allocated from the start, and a small bank holds little."""

from __future__ import annotations

import numpy as np
import pytest
from bank_samples import multilabel_stream

from streamlearn import PDM, Kozinec, ModelBank, model_from_state
from streamlearn.learn import LinearLearner
from streamlearn.replay.shared import SharedReplayBuffer


def whole_slots(bank: ModelBank) -> ModelBank:
    """``bank`` with every slot of its shared buffer allocated (the layout before slots
    grew)."""
    bank.state.buffer.reserve_slots(bank.state.buffer.max_examples)
    return bank


def assert_same_bank(grown: ModelBank, whole: ModelBank) -> None:
    assert grown.labels_.tolist() == whole.labels_.tolist()
    for value in grown.labels_.tolist():
        ours, theirs = grown.learner(value), whole.learner(value)
        assert np.array_equal(ours.coef_, theirs.coef_)
        assert ours.intercept_ == theirs.intercept_
        assert np.array_equal(ours.alpha_, theirs.alpha_)
        assert np.array_equal(ours.state.scalars, theirs.state.scalars)
        assert np.array_equal(ours.state.stats, theirs.state.stats)
    assert grown.summary() == whole.summary()


@pytest.mark.parametrize(
    "base",
    [
        PDM(eps=0.05, delta=0.5, buffer_size=150),
        PDM(eps=0.05, buffer_size=150),
        Kozinec(eps=0.02, delta=0.4, buffer_size=150),
    ],
    ids=["pdm", "pdm-delta-auto", "kozinec"],
)
def test_a_bank_whose_slots_grow_learns_as_one_with_every_slot(base: LinearLearner) -> None:
    X, label_sets = multilabel_stream(n=600, seed=3)
    grown, whole = ModelBank(base), whole_slots(ModelBank(base))
    assert grown.state.buffer.signs.shape[1] < 150 == whole.state.buffer.signs.shape[1]
    for start in range(0, 600, 45):
        for bank in (grown, whole):
            bank.learn(X[start : start + 45], label_sets[start : start + 45])
            if start % 90 == 0:
                bank.replay(max_passes=2)
        if start == 270:  # a restore unrolls the ring: both go on from their states
            grown = model_from_state(grown.state_dict())  # type: ignore[assignment]
            whole = whole_slots(model_from_state(whole.state_dict()))  # type: ignore[arg-type]
    for bank in (grown, whole):
        bank.flush().replay()
    assert grown.state.buffer.signs.shape[1] == 150 and grown.state.buffer.evicted > 0
    assert grown.state.buffer.evicted == whole.state.buffer.evicted
    assert_same_bank(grown, whole)


def test_a_small_bank_holds_slots_for_what_it_saw() -> None:
    X, label_sets = multilabel_stream(n=30)
    bank = ModelBank(PDM(eps=0.05, delta=0.5)).learn(X, label_sets)
    buffer = bank.state.buffer
    assert buffer.max_examples == 100_000 > buffer.signs.shape[1] == buffer.features.capacity
    assert buffer.allocated_bytes < 50_000
    restored = model_from_state(bank.state_dict())
    assert isinstance(restored, ModelBank)
    assert restored.state.buffer.features.capacity < 100
    assert np.array_equal(restored.decision_function(X), bank.decision_function(X))


def test_growing_moves_each_label_row_with_its_slots() -> None:
    shared = SharedReplayBuffer(max_examples=1000, max_nnz=100)
    shared.add_label(), shared.add_label()
    shared.features.ring[:2] = [60, 10]  # a wrapped ring of 10 examples from slot 60
    live = shared.features.live_slots()
    shared.signs[:2, live] = [[1] * 10, [-1] * 10]
    shared.alphas[:2, live] = np.arange(20.0).reshape(2, 10)
    assert shared.reserve_slots(60) and shared.features.capacity == 128
    assert shared.signs[:2, :10].tolist() == [[1] * 10, [-1] * 10]
    assert shared.alphas[:2, :10].tolist() == np.arange(20.0).reshape(2, 10).tolist()
    assert not shared.alphas[:, 10:].any() and not shared.reserve_slots(1)
