"""The replay buffer: bounded in examples and in nonzeros, first in first out, copying."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from streamlearn import PDM, InvalidParameterError, Perceptron, StateError
from streamlearn._kernels.ring import add_combination
from streamlearn.learn.base import LinearLearner
from streamlearn.replay import ReplayBuffer
from streamlearn.types import Batch

N_FEATURES = 100


@dataclass(frozen=True)
class Example:
    indices: npt.NDArray[np.int32]
    values: npt.NDArray[np.float64]
    label: int


def random_examples(count: int, seed: int, max_len: int = 25) -> list[Example]:
    """Rows of random lengths 0..max_len (about one in six empty), random labels."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        length = 0 if rng.random() < 1 / 6 else int(rng.integers(1, max_len + 1))
        cols = np.sort(rng.choice(N_FEATURES, size=length, replace=False)).astype(np.int32)
        vals = rng.normal(size=length) + np.where(rng.random(length) < 0.5, -2.0, 2.0)
        out.append(Example(cols, vals, int(rng.choice([-1, 1]))))
    return out


def to_batch(examples: list[Example]) -> Batch:
    lengths = [e.indices.shape[0] for e in examples]
    return Batch.from_csr(
        np.concatenate([[0], np.cumsum(lengths)]),
        np.concatenate([e.indices for e in examples] + [np.zeros(0, np.int32)]),
        np.concatenate([e.values for e in examples] + [np.zeros(0)]),
        [e.label for e in examples],
    )


def feed(learner: LinearLearner, examples: list[Example]) -> None:
    batch = to_batch(examples)
    learner.learn((batch.indptr, batch.indices, batch.values), batch.labels)


def assert_batches_equal(actual: Batch, expected: Batch) -> None:
    assert np.array_equal(actual.indptr, expected.indptr)
    assert np.array_equal(actual.indices, expected.indices)
    assert np.array_equal(actual.values, expected.values)
    assert np.array_equal(actual.labels, expected.labels)


class ArenaModel:
    """Where each example lands in an arena of ``size`` cells, written independently.

    An example takes max(nnz, 1) contiguous cells. It goes right after the newest one,
    or at cell 0 when it would run past the end of the arena (or the buffer is empty);
    the oldest examples are dropped while the buffer is full or the target cells overlap
    a stored example. Examples longer than the arena are not stored.
    """

    def __init__(self, max_examples: int, size: int) -> None:
        self.max_examples, self.size = max_examples, size
        self.live: deque[tuple[int, int, int]] = deque()  # (example number, start, cells)
        self.write_pos = 0
        self.evicted = self.unbuffered = self.wraps = 0

    def add(self, number: int, nnz: int) -> None:
        if nnz > self.size:
            self.unbuffered += 1
            return
        cells = max(nnz, 1)
        target = self.write_pos if self.write_pos + cells <= self.size else 0
        while len(self.live) == self.max_examples or self._overlaps(target, cells):
            self.live.popleft()
            self.evicted += 1
        if not self.live:
            target = 0
        if target == 0 and self.write_pos > 0:
            self.wraps += 1
        self.live.append((number, target, cells))
        self.write_pos = target + cells

    def _overlaps(self, start: int, cells: int) -> bool:
        return any(s < start + cells and start < s + c for _, s, c in self.live)

    def numbers(self) -> list[int]:
        return [n for n, _, _ in self.live]

    def positions(self) -> list[int]:
        return [s for _, s, _ in self.live]


def test_capacity_in_examples_evicts_the_oldest_first() -> None:
    examples = random_examples(12, seed=1)
    learner = Perceptron(delta=0.5, buffer_size=5)
    for start in range(0, 12, 3):
        feed(learner, examples[start : start + 3])
        kept = min(start + 3, 5)
        assert len(learner.buffer) == kept
        assert learner.buffer.evicted == start + 3 - kept
    assert_batches_equal(learner.buffer.examples(), to_batch(examples[7:]))
    assert learner.buffer.alpha().shape == (5,)
    assert learner.summary()["buffer_evicted"] == 7


@pytest.mark.parametrize(
    ("buffer_nnz", "buffer_size", "count", "seed"),
    [
        (60, 1000, 120, 2),  # arena allocated in full at once
        (61, 7, 150, 3),  # eviction by count and by nonzeros mixed
        (1500, 10_000, 700, 4),  # the arena grows past its first 1024 cells, then wraps
    ],
)
def test_capacity_in_nonzeros_wraps_around(
    buffer_nnz: int, buffer_size: int, count: int, seed: int
) -> None:
    examples = random_examples(count, seed=seed)
    # a few examples longer than the whole arena: learned from, never stored
    for k in (17, 55):
        cols = np.arange(buffer_nnz + 1, dtype=np.int32)
        examples[k] = Example(cols, np.ones(cols.shape[0]), 1)
    model = ArenaModel(buffer_size, buffer_nnz)
    learner = Perceptron(delta=0.5, buffer_size=buffer_size, buffer_nnz=buffer_nnz)
    rng = np.random.default_rng(seed)
    start = 0
    while start < count:
        stop = min(count, start + int(rng.integers(1, 8)))
        feed(learner, examples[start:stop])
        for k in range(start, stop):
            model.add(k, examples[k].indices.shape[0])
        buf = learner.buffer
        assert len(buf) == len(model.live)
        assert buf.evicted == model.evicted
        assert buf.unbuffered == model.unbuffered
        assert buf.arena_idx.shape[0] <= buffer_nnz
        assert buf.nnz == sum(examples[k].indices.shape[0] for k in model.numbers())
        start = stop
    assert model.wraps >= 3
    assert model.unbuffered == 2
    expected = to_batch([examples[k] for k in model.numbers()])
    assert_batches_equal(learner.buffer.examples(), expected)
    assert learner.buffer.state_dict()["positions"].tolist() == model.positions()
    assert learner.buffer.state_dict()["write_pos"] == model.write_pos


def test_example_longer_than_the_arena_is_learned_but_not_stored() -> None:
    learner = Perceptron(delta=0.0, buffer_nnz=10, forget="never")
    long_row = (np.array([0, 12]), np.arange(12), np.arange(1.0, 13.0))
    learner.learn(long_row, [-1])
    assert len(learner.buffer) == 0
    assert learner.buffer.unbuffered == 1
    assert learner.updates == 1.0
    np.testing.assert_array_equal(learner.coef_, -np.arange(1.0, 13.0))
    assert learner.intercept_ == -1.0
    # an example that just fits is stored
    learner.learn((np.array([0, 10]), np.arange(10), np.ones(10)), [1])
    assert len(learner.buffer) == 1
    assert learner.buffer.unbuffered == 1


@pytest.mark.parametrize("delta", [0.5, "auto"])
def test_buffer_copies_its_input(delta: float | str) -> None:
    examples = random_examples(30, seed=5)
    batch = to_batch(examples)
    untouched = PDM(eps=0.1, delta=delta)
    untouched.learn((batch.indptr.copy(), batch.indices.copy(), batch.values.copy()),
                    batch.labels.copy())  # fmt: skip
    indptr, indices, values = batch.indptr.copy(), batch.indices.copy(), batch.values.copy()
    labels = batch.labels.copy()
    learner = PDM(eps=0.1, delta=delta)
    learner.learn((indptr, indices, values), labels)
    values *= -3.0
    indices[:] = 0
    labels[:] = 1
    learner.replay(max_passes=20)
    untouched.replay(max_passes=20)
    assert_batches_equal(learner.buffer.examples(), batch)
    assert np.array_equal(learner.coef_, untouched.coef_)
    assert learner.intercept_ == untouched.intercept_


def test_evicted_examples_stay_in_the_weights_and_the_norm() -> None:
    examples = random_examples(40, seed=6, max_len=10)
    delta = 0.7
    evicting = PDM(eps=0.1, delta=delta, buffer_size=10, forget="never")
    keeping = PDM(eps=0.1, delta=delta, buffer_size=1000, forget="never")
    feed(evicting, examples)
    feed(keeping, examples)
    assert evicting.buffer.evicted == 30
    # the stream pass does not depend on the buffer: same state
    assert np.array_equal(evicting.state.scalars, keeping.state.scalars)
    assert np.array_equal(evicting.coef_, keeping.coef_)
    stream_alpha = keeping.buffer.alpha()
    assert stream_alpha[:30].sum() > 0
    assert_norm_and_weights(evicting, examples, stream_alpha, delta)
    # replay changes only the buffered examples' slack; the evicted ones keep theirs
    evicting.replay(max_passes=30)
    assert evicting.updates > keeping.updates
    alpha = np.concatenate([stream_alpha[:30], evicting.buffer.alpha()])
    assert_norm_and_weights(evicting, examples, alpha, delta)


def test_the_combination_kernel_sums_the_buffered_examples_as_numpy_does() -> None:
    """add_combination, which rebuilds a window's weights, against its numpy twin on a
    buffer that wrapped (by count and by nonzeros) and holds empty examples."""
    examples = random_examples(150, seed=7)
    learner = PDM(eps=0.1, delta=0.5, buffer_size=7, buffer_nnz=61)
    feed(learner, examples)
    buf = learner.buffer
    assert buf.evicted > 100 and len(buf) < 7  # evicted by nonzeros, the arena wrapped
    slots = buf.live_slots()
    coef = np.random.default_rng(8).normal(size=slots.shape[0])
    out = np.full(N_FEATURES, 0.5)
    add_combination(slots, coef, buf.slot_start, buf.slot_len, buf.arena_idx, buf.arena_val, out)
    batch = buf.examples()
    twin = np.full(N_FEATURES, 0.5)
    for i, c in enumerate(coef):
        lo, hi = batch.indptr[i], batch.indptr[i + 1]
        np.add.at(twin, batch.indices[lo:hi], c * batch.values[lo:hi])
    np.testing.assert_allclose(out, twin, rtol=1e-12, atol=1e-12)


def assert_norm_and_weights(
    learner: LinearLearner, examples: list[Example], alpha: npt.NDArray[np.float64], delta: float
) -> None:
    """w = sum alpha_k l_k x_k, beta = sum alpha_k l_k rho, ||a||^2 from w, beta, alpha."""
    w = np.zeros(learner.n_features_in_)
    for a, e in zip(alpha, examples, strict=True):
        w[e.indices] += a * e.label * e.values
    beta = float(sum(a * e.label for a, e in zip(alpha, examples, strict=True)))
    np.testing.assert_allclose(learner.coef_, w, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(learner.intercept_, beta, rtol=1e-12, atol=1e-9)
    assert learner.updates == alpha.sum()
    sqnorm = float(w @ w + beta**2 + delta**2 * (alpha**2).sum())
    np.testing.assert_allclose(learner.state.scalars[1], sqnorm, rtol=1e-10)


@pytest.mark.parametrize(
    ("buffer_size", "buffer_nnz", "cut"),
    [(50, 80, 90), (6, 200, 83), (1, 30, 40)],  # bounded by nonzeros, by count, one slot
)
def test_state_round_trip_of_a_wrapped_buffer_then_more_appends(
    buffer_size: int, buffer_nnz: int, cut: int
) -> None:
    examples = random_examples(200, seed=7)
    original = Perceptron(delta=0.5, buffer_size=buffer_size, buffer_nnz=buffer_nnz)
    feed(original, examples[:cut])
    state = original.buffer.state_dict()
    if buffer_size > 1:  # wrapped at the cut
        assert state["positions"][-1] < state["positions"][0]
    rebuilt = ReplayBuffer.from_state(state)
    for key, value in rebuilt.state_dict().items():
        assert np.array_equal(value, state[key]), key
    restored = Perceptron.from_state(original.state_dict())
    rng = np.random.default_rng(0)
    start = cut
    while start < 200:
        stop = min(200, start + int(rng.integers(1, 9)))
        feed(original, examples[start:stop])
        feed(restored, examples[start:stop])
        a, b = original.buffer.state_dict(), restored.buffer.state_dict()
        for key in a:
            assert np.array_equal(a[key], b[key]), key
        start = stop
    assert original.buffer.evicted > 100
    original.replay(max_passes=5)
    restored.replay(max_passes=5)
    assert np.array_equal(original.coef_, restored.coef_)
    assert np.array_equal(original.buffer.alpha(), restored.buffer.alpha())


def test_empty_buffer() -> None:
    buf = ReplayBuffer(max_examples=3, max_nnz=50)
    assert len(buf) == 0
    assert (buf.nnz, buf.evicted, buf.unbuffered) == (0, 0, 0)
    assert buf.live_slots().shape == (0,)
    assert buf.alpha().shape == (0,)
    empty = buf.examples()
    assert empty.n_examples == 0 and empty.nnz == 0
    again = ReplayBuffer.from_state(buf.state_dict())
    assert len(again) == 0 and again.max_examples == 3 and again.max_nnz == 50


@pytest.mark.parametrize(
    ("max_examples", "max_nnz", "name"), [(0, 10, "buffer_size"), (5, 0, "buffer_nnz")]
)
def test_capacities_must_be_positive(max_examples: int, max_nnz: int, name: str) -> None:
    with pytest.raises(InvalidParameterError, match=name):
        ReplayBuffer(max_examples, max_nnz)


def test_arena_grows_to_twice_what_it_must_hold_up_to_its_capacity() -> None:
    buf = ReplayBuffer(max_examples=10, max_nnz=10_000)
    assert buf.arena_idx.shape[0] == 1024
    small = buf.allocated_bytes
    buf.reserve_for(100)
    assert buf.arena_idx.shape[0] == 1024
    buf.reserve_for(1500)
    assert buf.arena_idx.shape[0] == buf.arena_val.shape[0] == 2 * 1501
    buf.ring[:3] = [0, 1, 2000]  # one example of 2000 cells: moving it frees too little
    buf.slot_len[0] = 2000
    buf.reserve_for(1100)
    assert buf.arena_idx.shape[0] == 2 * 3101
    buf.reserve_for(10**6)
    assert buf.arena_idx.shape[0] == 10_000
    assert buf.allocated_bytes > small


def test_a_long_stream_through_a_small_window_keeps_a_small_arena_and_learns_the_same() -> None:
    """Its examples move to the arena's start instead of the arena growing to its
    capacity; the weights, slack and buffer equal those of an arena allocated whole."""
    examples = random_examples(3000, seed=21)
    moved = Perceptron(delta=0.5, buffer_size=50, buffer_nnz=10**6)
    whole = Perceptron(delta=0.5, buffer_size=50, buffer_nnz=10**6)
    whole.buffer.arena_idx = np.zeros(10**6, dtype=np.int32)
    whole.buffer.arena_val = np.zeros(10**6, dtype=np.float64)
    for start in range(0, len(examples), 100):
        for learner in (moved, whole):
            feed(learner, examples[start : start + 100])
        moved.replay(max_passes=1)
        whole.replay(max_passes=1)
    assert moved.buffer.arena_idx.shape[0] <= 4 * 50 * 26
    assert moved.buffer.evicted == whole.buffer.evicted == 3000 - 50
    assert np.array_equal(moved.coef_, whole.coef_)
    assert np.array_equal(moved.buffer.alpha(), whole.buffer.alpha())
    assert_batches_equal(moved.buffer.examples(), whole.buffer.examples())


def test_from_state_refuses_inconsistent_states() -> None:
    learner = Perceptron(delta=0.5, buffer_size=8, buffer_nnz=100)
    feed(learner, random_examples(6, seed=8, max_len=10))
    state = learner.buffer.state_dict()
    with pytest.raises(StateError, match="capacity"):
        ReplayBuffer.from_state({**state, "max_examples": 3})
    with pytest.raises(StateError, match="positions"):
        ReplayBuffer.from_state({**state, "positions": state["positions"] + 95})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: {**s, "indices": s["indices"] * 0 - 5}, "feature indices must lie in"),
        (
            lambda s: {**s, "indices": s["indices"].astype(np.int64) + 2**31},
            "feature indices must lie in",
        ),
        (lambda s: {**s, "indptr": s["indptr"][::-1].copy()}, "indptr must be offsets"),
        (lambda s: {**s, "values": s["values"][:-1]}, "indptr must be offsets"),
        (lambda s: {**s, "labels": s["labels"] * 3}, "one label of"),
        (lambda s: {**s, "alpha": s["alpha"] * np.nan}, "alpha must be finite"),
        (lambda s: {**s, "sqnorm": s["sqnorm"][:-1]}, "sqnorm must be finite"),
        (lambda s: {**s, "write_pos": s["arena_size"] + 1}, "write position"),
        (lambda s: {**s, "positions": s["positions"] - 10**6}, "positions"),
    ],
)
def test_from_state_refuses_examples_the_kernels_could_not_read(change: Any, message: str) -> None:
    """The kernels index without bounds checks: a state they would read outside its
    arrays from is refused when it is loaded."""
    learner = Perceptron(delta=0.5, buffer_size=8, buffer_nnz=100)
    feed(learner, random_examples(6, seed=8, max_len=10))
    state = learner.buffer.state_dict()
    ReplayBuffer.from_state(state)
    with pytest.raises(StateError, match=message):
        ReplayBuffer.from_state(change(state))


def test_slots_that_grow_learn_what_slots_allocated_whole_learn() -> None:
    """A buffer starts with a few slots and doubles them up to its capacity, unrolling
    its ring: the weights, slack, examples and evictions equal those of a buffer whose
    slots were allocated whole, through evictions by count, a replay and a restore."""
    examples = random_examples(1200, seed=23)
    grown = PDM(eps=0.1, delta=0.5, buffer_size=300, buffer_nnz=10**6)
    whole = PDM(eps=0.1, delta=0.5, buffer_size=300, buffer_nnz=10**6)
    whole.state.buffer = ReplayBuffer(300, 10**6, grow_slots=False)
    assert grown.buffer.capacity < 300 == whole.buffer.capacity
    for start in range(0, len(examples), 70):
        for learner in (grown, whole):
            feed(learner, examples[start : start + 70])
            learner.replay(max_passes=1)
    assert grown.buffer.capacity == 300 and grown.buffer.evicted == whole.buffer.evicted == 900
    assert np.array_equal(grown.coef_, whole.coef_)
    assert np.array_equal(grown.buffer.alpha(), whole.buffer.alpha())
    assert_batches_equal(grown.buffer.examples(), whole.buffer.examples())
    restored = ReplayBuffer.from_state(whole.buffer.state_dict())
    assert restored.capacity == 300 and np.array_equal(restored.alpha(), whole.buffer.alpha())
    small = ReplayBuffer.from_state(PDM(delta=0.5).learn(np.eye(3), [1, -1, 1]).buffer.state_dict())
    assert small.capacity < 100 and len(small) == 3


def _allocated_whole(learner: LinearLearner) -> LinearLearner:
    """``learner`` with a buffer laid out as one allocated whole (every slot, the
    arena at its capacity): the layout before buffers grew."""
    held = learner.state.buffer
    buf = ReplayBuffer(held.max_examples, held.max_nnz, grow_slots=False)
    buf.arena_idx = np.zeros(held.max_nnz, dtype=np.int32)
    buf.arena_val = np.zeros(held.max_nnz, dtype=np.float64)
    learner.state.buffer = buf
    return learner


def test_fractional_slack_sums_the_same_whatever_the_layout_and_after_a_restore() -> None:
    """Kozinec's slack counts are fractions and its step reads ||a||^2, recomputed from
    sum alpha_k^2: summed where the ring wraps, that sum rounded differently when the
    slots grew (they wrapped at 64 while whole ones did not) and after a restore (which
    unrolls the ring); it is summed oldest first now, and the models stay equal."""
    from streamlearn import Kozinec

    rng = np.random.default_rng(0)
    X = np.zeros((600, 40))
    for i in range(600):
        X[i, rng.choice(40, size=2, replace=False)] = rng.normal(size=2) + 2 * np.sign(
            rng.normal(size=2)
        )
    y = rng.choice([-1, 1], size=600)
    params = {"delta": 0.5, "buffer_size": 257, "buffer_nnz": 100}  # nonzeros evict
    grown, whole = Kozinec(**params), _allocated_whole(Kozinec(**params))
    for i in range(0, 600, 3):
        for learner in (grown, whole):
            learner.learn(X[i : i + 3], y[i : i + 3])
            if i % 30 == 0:
                learner.replay(max_passes=2)
        if i == 300:
            restored = Kozinec.from_state(grown.state_dict())
            grown = restored  # type: ignore[assignment]
    assert whole.buffer.evicted == grown.buffer.evicted > 400
    assert np.array_equal(grown.coef_, whole.coef_)
    assert np.array_equal(grown.buffer.alpha(), whole.buffer.alpha())


def test_the_same_examples_give_the_same_state_in_batches_of_any_size() -> None:
    """Where the arena holds its examples depends on the batches that brought them
    (when it moved them), not what is learned: a state gives the layout as if the
    oldest example sat at the start, so that it is the same however they came."""
    examples = random_examples(900, seed=31)
    states = []
    for size in (7, 50, 300):
        learner = PDM(eps=0.1, delta=0.5, buffer_size=80, buffer_nnz=10**6)
        for start in range(0, len(examples), size):
            feed(learner, examples[start : start + size])
        states.append(learner.buffer.state_dict())
    for other in states[1:]:
        assert other.keys() == states[0].keys()
        for name, value in states[0].items():
            assert np.array_equal(np.asarray(other[name]), np.asarray(value)), name
