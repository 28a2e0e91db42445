"""Keyed models over an in-memory state topic: each key learns and answers alone, the
memory bound spills and restores models without changing them, a message read again is
not learned twice, and what a daemon writes is what the next one takes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keyed_streams import FEATURES, batches, keyed_lines, same_state

from streamlearn.errors import CheckpointError, UnknownKeyError
from streamlearn.keyed import KeyedBatch, KeyedModels, MemoryStates, decode_record
from streamlearn.keyed.records import ModelRecord, encode_record
from streamlearn.learn import PDM, learner_from_state
from streamlearn.parse.svmlight import SvmlightParser
from streamlearn.replay import ReplaySchedule

SCHEDULE = ReplaySchedule(every=20, passes=1)


def keyed(
    store: MemoryStates, max_models: int = 1000, max_bytes: int = 1 << 30, buffer_size: int = 60
) -> KeyedModels:
    return KeyedModels(
        lambda: PDM(delta=1.0, eps=0.1, buffer_size=buffer_size),
        PDM.from_state,
        store,
        max_models=max_models,
        max_bytes=max_bytes,
    )


def run(models: KeyedModels, pairs: list[tuple[bytes, bytes]], per_batch: int = 25) -> int:
    learned = 0
    for batch in batches(pairs, per_batch):
        learned += models.apply(batch, schedule=SCHEDULE).learned
    return learned


def final_states(models: KeyedModels) -> dict[bytes, dict]:
    """Every key's model as it stands: in memory, or its latest record."""
    models.save()
    states = {}
    for key, value in models.store._latest.items():  # type: ignore[attr-defined]
        states[key] = decode_record(value, key).state
    return states


def questions(keys: list[bytes], features: np.ndarray) -> KeyedBatch:
    lines = b"".join(
        b" ".join(b"%d:%.5f" % (i + 1, v) for i, v in enumerate(x)) + b"\n" for x in features
    )
    return KeyedBatch.of(keys, SvmlightParser().feed(lines), first=10**6)


def test_keys_that_disagree_are_each_answered_by_their_own_model() -> None:
    """Odd keys have the even keys' labels flipped: one model of all could not be right
    for both, each key's model is."""
    pairs = keyed_lines(2000, 4, seed=1)
    models = keyed(MemoryStates(), buffer_size=1000)
    assert run(models, pairs) == 2000
    rng = np.random.default_rng(9)
    direction = np.random.default_rng(1).normal(size=FEATURES)
    x = rng.normal(size=(50, FEATURES))
    truth = np.where(x @ direction > 0, 1, -1)
    for key, sign in ((b"key-0", 1), (b"key-1", -1), (b"key-2", 1), (b"key-3", -1)):
        answers = models.apply(questions([key] * 50, x)).answers
        labels = np.array([int(answer.split()[1]) for _, answer in answers])
        assert [owner for owner, _ in answers] == list(range(50))
        assert np.mean(labels == sign * truth) >= 0.9
    # one model of every key learns neither side
    rows = SvmlightParser().feed(b"".join(line + b"\n" for _, line in pairs))
    shared = PDM(delta=1.0, eps=0.1).fit(
        (rows.indptr, rows.indices, rows.values), np.where(rows.labels > 0, 1, -1)
    )
    assert 0.3 < np.mean(shared.predict(x) == truth) < 0.7


def test_a_tight_bound_spills_and_restores_without_changing_any_model() -> None:
    pairs = keyed_lines(3000, 12, seed=2)
    free = keyed(MemoryStates())
    tight_store = MemoryStates()
    tight = keyed(tight_store, max_models=3)
    assert run(free, pairs) == run(tight, pairs) == 3000
    assert free.spilled == free.restored == 0
    assert tight.spilled > 100 and tight.restored > 100 and len(tight.resident) <= 3
    ours, theirs = final_states(tight), final_states(free)
    assert sorted(ours) == sorted(theirs) == sorted({key for key, _ in pairs})
    assert all(same_state(ours[key], theirs[key]) for key in ours)
    assert sum(learner_from_state(s).state.examples_seen for s in ours.values()) == 3000


def test_a_restored_model_is_the_model_before_its_spill_bit_for_bit() -> None:
    store = MemoryStates()
    models = keyed(store, max_models=1)
    pairs = keyed_lines(400, 1, seed=3)  # one key
    run(models, pairs)
    resident = models.resident.peek(b"key-0")
    assert resident is not None
    before = resident.model.state_dict()
    # another key takes the only place: key-0 is spilled, then comes back
    models.apply(KeyedBatch.of([b"other"], SvmlightParser().feed(b"+1 1:1\n"), first=400))
    assert b"key-0" not in models.resident and models.spilled == 1
    (key, spilled), *_ = [item for item in store.history[0] if item[0] == b"key-0"][-1:]
    assert same_state(decode_record(spilled, key).state, before)
    models.apply(KeyedBatch.of([b"key-0"], SvmlightParser().feed(b"1:1\n"), first=401))
    back = models.resident.peek(b"key-0")
    assert back is not None and models.restored == 1
    assert same_state(back.model.state_dict(), before)
    assert back.examples == 400 and back.positions == {0: 402}


def test_messages_read_again_are_not_learned_again() -> None:
    store = MemoryStates()
    pairs = keyed_lines(500, 5, seed=4)
    first = keyed(store, max_models=2)
    learned = run(first, pairs[:300])
    first.save()
    # a restart from offset 200 (the last commit): the records hold up to 300
    again = keyed(store, max_models=2)
    assert run(again, pairs[:300]) == 0  # offsets 0..299 again: all in the records already
    assert again.skipped == 300
    rest = [batch for batch in batches(pairs, 25)][12:]
    learned += sum(again.apply(batch, schedule=SCHEDULE).learned for batch in rest)
    whole = keyed(MemoryStates())
    assert learned == run(whole, pairs) == 500
    ours, theirs = final_states(again), final_states(whole)
    assert all(same_state(ours[key], theirs[key]) for key in theirs)


def test_a_crash_loses_only_what_the_next_daemon_learns_again() -> None:
    """Unsaved models die with their daemon; the next one restores the last records and
    learns from the last commit, skipping what the records hold: every key ends as an
    uninterrupted run leaves it."""
    store = MemoryStates()
    pairs = keyed_lines(600, 6, seed=5)
    parts = batches(pairs, 30)
    crashed = keyed(store, max_models=2)
    for batch in parts[:8]:
        crashed.apply(batch, schedule=SCHEDULE)
    crashed.save()  # committed: offset 240
    for batch in parts[8:14]:  # learned, partly spilled, then lost
        crashed.apply(batch, schedule=SCHEDULE)
    restarted = keyed(store, max_models=2)
    for batch in parts[8:]:
        restarted.apply(batch, schedule=SCHEDULE)
    assert restarted.skipped > 0
    whole = keyed(MemoryStates())
    run(whole, pairs, 30)
    ours, theirs = final_states(restarted), final_states(whole)
    assert all(same_state(ours[key], theirs[key]) for key in theirs)


def test_a_released_partition_goes_on_in_its_next_owner() -> None:
    store = MemoryStates()
    pairs = keyed_lines(400, 4, seed=6)
    parts = batches(pairs, 40)
    leaving = keyed(store)
    for batch in parts[:5]:
        leaving.apply(batch, schedule=SCHEDULE)
    leaving.release({0})
    assert len(leaving.resident) == 0
    taking = keyed(store)
    for batch in parts[5:]:
        taking.apply(batch, schedule=SCHEDULE)
    assert taking.restored == 4 and taking.created == 0
    whole = keyed(MemoryStates())
    run(whole, pairs, 40)
    ours, theirs = final_states(taking), final_states(whole)
    assert all(same_state(ours[key], theirs[key]) for key in theirs)


def test_lines_without_a_key_are_rejected_and_unknown_keys_get_a_blank_answer() -> None:
    models = keyed(MemoryStates())
    rows = SvmlightParser().feed(b"+1 1:1\n-1 2:1\n3:1\n4:1\n")
    done = models.apply(KeyedBatch.of([None, b"", None, b"new"], rows))
    assert [(item.line, item.reason) for item in done.rejected] == [
        (1, "no key"), (2, "no key"), (3, "no key"),
    ]  # fmt: skip
    assert done.answers == [(3, models.empty.answers(np.eye(1))[0])]
    assert done.learned == 0 and len(models.resident) == 0 and models.created == 0


def test_labels_a_binary_model_cannot_take_are_rejected() -> None:
    models = keyed(MemoryStates())
    done = models.apply(KeyedBatch.of([b"a", b"a"], SvmlightParser().feed(b"3 1:1\n+1 1:1\n")))
    assert [(item.line, item.reason) for item in done.rejected] == [(1, "bad label")]
    assert done.learned == 1


def test_questions_are_answered_after_the_examples_before_them() -> None:
    models = keyed(MemoryStates())
    rows = SvmlightParser().feed(b"1:1\n+1 1:1\n1:1\n-1 1:3\n1:1\n")
    done = models.apply(KeyedBatch.of([b"a"] * 5, rows))
    scores = [float(answer.split()[0]) for _, answer in done.answers]
    assert [owner for owner, _ in done.answers] == [0, 2, 4]
    assert scores[0] == 0.0 and scores[1] > 0.0 and scores[2] < 0.0


def test_save_writes_what_changed_and_fails_until_the_broker_takes_it() -> None:
    store = MemoryStates()
    models = keyed(store)
    run(models, keyed_lines(100, 3, seed=7))
    assert models.save() > 0 and store.records_written == 3
    assert models.save() == 0 and store.records_written == 3  # nothing changed
    models.apply(batches(keyed_lines(10, 1, seed=8), 10, offset=100)[0])
    store.failing = True
    with pytest.raises(CheckpointError, match="1 model records not written"):
        models.save()
    assert models.summary()["keyed"]["unwritten"] == 1
    store.failing = False
    models.save()
    assert store.records_written == 4 and models.unwritten == 0


def test_replay_goes_over_the_models_in_memory_in_turn() -> None:
    models = keyed(MemoryStates())
    for batch in batches(keyed_lines(300, 3, seed=9), 50):
        models.apply(batch)  # no replay on the way
    assert not models.converged and len(models.buffer) == 180
    models.replay(max_passes=1, interrupt=lambda: True)  # stopped before the first
    assert models.passes == 0
    models.replay(max_passes=1)
    assert models.passes == 3  # one pass of each model
    while not models.converged:
        models.replay(max_passes=1)
    assert all(resident.model.converged for _, resident in models.resident.items())
    assert all(resident.dirty for _, resident in models.resident.items())


def test_copies_for_answers_follow_the_models_that_change() -> None:
    store = MemoryStates()
    models = keyed(store, max_models=2)
    run(models, keyed_lines(300, 4, seed=10))
    published = models.predictor([b"key-0", b"nobody"])  # as many as --max-models
    assert b"nobody" in published and published.get(b"nobody") is None
    assert b"key-1" not in published  # not asked for: not copied
    copy = published.get(b"key-0")
    assert copy is not None and copy.description["key"] == "key-0"
    assert copy.description["in_memory"] is (b"key-0" in models.resident)
    assert models.predictor().get(b"key-0") is copy  # unchanged: not copied again
    more = [(b"key-0", line) for _, line in keyed_lines(40, 1, seed=11)]
    models.apply(batches(more, 40, offset=300)[0])  # key-0 learns more
    fresh = models.predictor().get(b"key-0")
    assert fresh is not None and fresh is not copy
    assert fresh.description["examples"] == copy.description["examples"] + 40
    x = np.random.default_rng(1).normal(size=(5, FEATURES))
    rows = (np.arange(0, 41, 8), np.tile(np.arange(8, dtype=np.int32), 5), x.ravel())
    assert fresh.predictor.answer(rows) != copy.predictor.answer(rows)


def test_the_keys_of_a_partition_given_are_found_before_its_first_message() -> None:
    store = MemoryStates()
    first = keyed(store)
    run(first, keyed_lines(100, 2, seed=12))
    first.release({0})
    taker = keyed(store)
    assert taker.predictor([b"key-1"]).get(b"key-1") is None  # partition 0 is not its own
    taker.take({0})
    copy = taker.predictor().get(b"key-1")
    assert copy is not None and not copy.description["in_memory"]
    assert len(taker.resident) == 0  # answered from its record, which stays where it is


def test_a_state_record_that_is_no_model_is_refused_and_its_key_starts_afresh() -> None:
    """Whoever can write to the state topic could otherwise stop the daemon at every
    start: garbage, another key's record, a record with weights that are not finite.
    Each is counted as refused, the key starts a new model, the stream goes on."""
    pairs = keyed_lines(400, 4, seed=12)
    store = MemoryStates()
    models = keyed(store)
    assert run(models, pairs) == 400
    models.save()
    spoiled = dict(store._latest)  # type: ignore[attr-defined]
    good = decode_record(spoiled[b"key-1"], b"key-1")
    weights = np.array(good.state["weights"], dtype=np.float64)
    weights.flat[0] = np.inf
    not_finite = ModelRecord(b"key-2", {**good.state, "weights": weights}, {}, 1)
    store._latest[b"key-0"] = b"\x81\x91\x01\x01"  # type: ignore[attr-defined]
    store._latest[b"key-1"] = spoiled[b"key-3"]  # type: ignore[attr-defined]
    store._latest[b"key-2"] = encode_record(not_finite, created=0.0)  # type: ignore[attr-defined]
    again = keyed(store)
    more = keyed_lines(200, 4, seed=13)  # the messages after those learned
    assert sum(again.apply(batch, schedule=SCHEDULE).learned
               for batch in batches(more, 25, offset=400)) == 200  # fmt: skip
    assert again.refused == 3
    assert again.summary()["keyed"]["refused"] == 3
    assert again.summary()["keyed"]["restored"] == 1  # key-3's own record


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=300) | st.sampled_from([b"", b"\x80", b"\xc1" * 5]))
def test_no_bytes_on_the_state_topic_stop_the_models(data: bytes) -> None:
    store = MemoryStates()
    models = keyed(store)
    store._latest[b"key-0"] = data  # type: ignore[attr-defined]
    store._partition_of[b"key-0"] = 0  # type: ignore[attr-defined]
    store.open({0})
    batch = next(iter(batches(keyed_lines(20, 1, seed=14), 20)))
    assert models.apply(batch, schedule=SCHEDULE).learned == 20
    assert models.refused == 1


def test_posted_rows_teach_a_known_key_and_leave_its_positions() -> None:
    """Rows posted for a key (POST /learn?key=) go to its model, restored from its
    record when it left memory; they move none of its positions, so the key's next
    messages are learned, and a key without a model here is refused."""
    store = MemoryStates(partitions=2)
    models = keyed(store, max_models=1)
    pairs = keyed_lines(200, 3, seed=4)
    for batch in batches(pairs[:100], 25, partition=1):
        models.apply(batch)
    positions = {key: dict(resident.positions) for key, resident in models.resident.items()}
    key = next(k for k, _ in pairs[:100] if k not in positions)  # spilled: on the topic
    rows = SvmlightParser().feed(b"".join(line + b"\n" for k, line in pairs[100:] if k == key))
    states_before = final_states(models)[key]
    done = models.learn_posted(key, rows)
    assert done.learned == rows.n_rows > 0
    resident = models.resident.get(key)
    assert resident is not None and resident.partition == 1
    assert resident.positions == decode_record(store.find(key), key).positions  # type: ignore[arg-type]
    assert resident.model.state_dict()["examples_seen"] != states_before["examples_seen"]
    with pytest.raises(UnknownKeyError, match="nobody"):
        models.learn_posted(b"nobody", rows)
    # the key's next messages are not taken for messages read before
    assert sum(models.apply(b).learned for b in batches(pairs[100:], 25, 1, 100)) == 100


def test_a_key_with_few_examples_holds_little_so_the_default_bound_keeps_a_thousand() -> None:
    """A key's model with the default window (100,000 examples) holds what its examples
    need, not its window's room: a thousand keys of one example each stay in memory under
    the default bounds, where 3.3 MB a model made the daemon spill and restore them at
    every poll."""
    from streamlearn.config import LearnerSpec, ModelSpec
    from streamlearn.keyed import model_bytes

    spec = ModelSpec(LearnerSpec.from_options("pdm", {}))
    models = KeyedModels(spec.build, spec.restore, MemoryStates())  # the daemon's bounds
    pairs = [(b"key-%d" % i, line) for i, (_, line) in enumerate(keyed_lines(1000, 1, seed=6))]
    for batch in batches(pairs, 1000):
        models.apply(batch)
    sizes = [model_bytes(resident.model) for _, resident in models.resident.items()]
    assert len(sizes) == 1000 and models.spilled == 0
    assert max(sizes) < 64 * 1024


def test_keys_idle_for_their_ttl_are_removed_from_memory_and_the_state_topic() -> None:
    """With a key TTL, a key whose model learned nothing for that long is removed: from
    memory without a record, and from the state topic with a tombstone, whether it was
    in memory or spilled; a key that comes again starts a new model, and the active keys
    are left alone."""
    now = [1000.0]
    wall = lambda: now[0]  # noqa: E731
    store = MemoryStates(wall=wall)
    models = KeyedModels(lambda: PDM(delta=1.0, eps=0.1, buffer_size=60), PDM.from_state,
                         store, max_models=2, wall=wall, key_ttl=100.0)  # fmt: skip
    line = keyed_lines(1, 1, seed=2)[0][1]
    for key in (b"a", b"b", b"c"):  # a is spilled: two models in memory at most
        models.apply(batches([(key, line)], 1)[0])
    assert store.find(b"a") is not None and b"a" not in models.resident
    now[0] += 60
    models.apply(batches([(b"c", line)], 1, offset=5)[0])  # c stays active
    now[0] += 50  # a and b: 110 s idle; c: 50 s
    assert models.expire_due() == 2
    assert models.expired == 2 and models.summary()["keyed"]["expired"] == 2
    assert sorted(models.resident) == [b"c"]
    assert store.find(b"a") is None and store.find(b"b") is None
    tombstones = [key for key, value in store.history[0] if value is None]
    assert sorted(tombstones) == [b"a", b"b"]
    assert models.expire_due() == 0  # not due again so soon, and nothing idle
    created = models.created
    models.apply(batches([(b"a", line)], 1, offset=9)[0])
    assert models.created == created + 1  # a new model, not the removed one
    with pytest.raises(ValueError, match="--key-ttl"):
        KeyedModels(PDM, PDM.from_state, MemoryStates(), key_ttl=0.0)
