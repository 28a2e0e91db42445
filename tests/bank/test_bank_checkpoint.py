"""A bank's checkpoint: ``state_to_write`` lends the buffer's signs and slack instead of
copying them, gives the bytes ``state_dict`` gives, and a bank restored from it goes on
bit for bit; writing it and restoring it cost little beyond the bank itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bank_samples import multilabel_stream
from memory import peak_allocated

from streamlearn import PAUM, PDM, ModelBank, PDMSucc, model_from_state
from streamlearn.checkpoint.codec import encode, encode_pieces
from streamlearn.checkpoint.store import CheckpointStore, read_checkpoint, write_checkpoint
from streamlearn.errors import CheckpointError
from streamlearn.learn import LinearLearner
from streamlearn.learn.bank import state_to_write
from streamlearn.replay.shared import RingColumns, SharedReplayBuffer


def banks() -> dict[str, ModelBank]:
    X, label_sets = multilabel_stream()
    wrapped = ModelBank(PDM(eps=0.05, delta=0.5, buffer_size=70)).learn(X, label_sets)
    assert wrapped.buffer.features.live_slots()[0] != 0 and wrapped.buffer.evicted
    part = ModelBank(PAUM(delta=0.5), tau_pos_kappa=2.0).learn(X[:50], label_sets[:50])
    pending = ModelBank(PDMSucc(eps=0.02)).learn(X[:150], label_sets[:150])  # delta='auto'
    declared = ModelBank(PDM(delta=1.0))
    declared.declare_labels(np.arange(3))
    return {"wrapped": wrapped.replay(max_passes=2), "not full": part, "pending": pending,
            "declared, nothing learned": declared, "empty": ModelBank(PDM())}  # fmt: skip


BANKS = banks()


@pytest.mark.parametrize("name", list(BANKS))
def test_state_to_write_gives_the_bytes_of_state_dict(name: str) -> None:
    bank = BANKS[name]
    lent, copied = bank.state_to_write(), bank.state_dict()
    assert isinstance(lent["buffer"]["alphas"], RingColumns)
    assert isinstance(copied["buffer"]["alphas"], np.ndarray)
    assert encode(lent, created=1.0) == encode(copied, created=1.0)


@pytest.mark.parametrize("name", ["wrapped", "not full", "pending"])
def test_a_bank_restored_from_what_it_wrote_goes_on_bit_for_bit(name: str, tmp_path: Path) -> None:
    X, label_sets = multilabel_stream()
    bank = ModelBank.from_state(BANKS[name].state_dict())
    write_checkpoint(tmp_path / "c", {"learner": state_to_write(bank)})
    restored = model_from_state(read_checkpoint(tmp_path / "c").payload["learner"])
    assert isinstance(restored, ModelBank)
    assert encode(restored.state_dict(), created=0) == encode(bank.state_dict(), created=0)
    for model in (bank, restored):
        model.learn(X[100:], label_sets[100:]).replay(max_passes=3)
        model.learn(X[:40], [[9], *label_sets[1:40]])  # a new label after the restore
    assert encode(restored.state_dict(), created=0) == encode(bank.state_dict(), created=0)
    np.testing.assert_array_equal(restored.decision_function(X), bank.decision_function(X))


def test_state_to_write_of_a_single_learner_is_its_state_dict() -> None:
    X, label_sets = multilabel_stream()
    learner = PDM(delta=0.5).learn(X, np.where([1 in s for s in label_sets], 1, -1))
    assert isinstance(learner, LinearLearner)
    assert encode(state_to_write(learner), created=0) == encode(learner.state_dict(), created=0)


def test_a_bank_that_learns_before_its_state_is_written_fails_the_write(tmp_path: Path) -> None:
    X, label_sets = multilabel_stream()
    bank = ModelBank.from_state(BANKS["wrapped"].state_dict())
    store = CheckpointStore(tmp_path)
    encoded = encode_pieces({"learner": bank.state_to_write()}, created=0.0)
    bank.learn(X[:5], label_sets[:5])
    with pytest.raises(CheckpointError, match="changed while the checkpoint was written"):
        list(encoded.chunks())
    store.write({"learner": bank.state_to_write()})  # written at once, as the daemon does
    latest = store.latest()
    assert latest is not None
    restored = ModelBank.from_state(latest[1].payload["learner"])
    np.testing.assert_array_equal(restored.decision_function(X), bank.decision_function(X))


# -- memory ---------------------------------------------------------------------------------


def large_bank(labels: int = 400, window: int = 5000) -> ModelBank:
    """A bank whose buffer's signs and slack (9 bytes per label and slot) dwarf the rest,
    its ring full and wrapped, as in a long stream."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(window + 1234, 8))
    bank = ModelBank(PDM(eps=0.1, delta=1.0, buffer_size=window))
    bank.declare_labels(np.arange(labels))
    bank.learn(X, rng.integers(0, labels, size=X.shape[0]).astype(float))
    assert bank.buffer.features.live_slots()[0] != 0
    return bank


LARGE = large_bank()
ROWS_BYTES = 400 * 5000 * 9


def test_a_checkpoint_of_a_bank_copies_none_of_its_largest_arrays(tmp_path: Path) -> None:
    """The state and its write together, as the daemon checkpoints: a small fraction of
    the signs and slack (before, ``state_dict()`` copied them all, twice for a moment)."""
    path = tmp_path / "c"
    peak, _ = peak_allocated(lambda: write_checkpoint(path, {"learner": state_to_write(LARGE)}))
    assert peak < ROWS_BYTES / 8, f"{peak / ROWS_BYTES:.2f}x the signs and slack"
    restored = ModelBank.from_state(read_checkpoint(path).payload["learner"])
    assert encode(restored.state_dict(), created=0) == encode(LARGE.state_dict(), created=0)


def test_a_restore_allocates_the_largest_arrays_once(tmp_path: Path) -> None:
    """``from_state`` of a checkpoint read: the rows once, as many as the labels (before,
    add_label doubled them from one row, a copy each time, to 512 rows here), and no
    learner keeps the empty buffer of a window's size it starts with (before, 400 of
    them stayed: over 3x the rows)."""
    write_checkpoint(tmp_path / "c", {"learner": LARGE.state_dict()})
    state = read_checkpoint(tmp_path / "c").payload["learner"]
    peak, _ = peak_allocated(lambda: SharedReplayBuffer.from_state(state["buffer"]))
    assert peak < 1.1 * ROWS_BYTES, f"buffer: {peak / ROWS_BYTES:.2f}x the signs and slack"
    peak, _ = peak_allocated(lambda: ModelBank.from_state(state))
    assert peak < 1.25 * ROWS_BYTES, f"bank: {peak / ROWS_BYTES:.2f}x the signs and slack"
    restored = ModelBank.from_state(state)
    assert restored.buffer.signs.shape == restored.buffer.alphas.shape == (400, 5000)
    assert encode(restored.state_dict(), created=0) == encode(LARGE.state_dict(), created=0)
