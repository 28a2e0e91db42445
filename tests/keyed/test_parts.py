"""The keyed models' parts: the record codec, the LRU of models in memory, and the
sorting of a poll's rows by key."""

from __future__ import annotations

import numpy as np
import pytest
from keyed_streams import keyed_lines, same_state

from streamlearn.checkpoint.codec import encode
from streamlearn.errors import StateError
from streamlearn.keyed import (
    ModelRecord,
    Resident,
    ResidentModels,
    decode_record,
    encode_record,
    model_bytes,
)
from streamlearn.keyed.rows import KeyGroups, key_ids
from streamlearn.learn import PDM, learner_from_state
from streamlearn.parse.svmlight import SvmlightParser


def learned_model(seed: int = 1) -> PDM:
    rows = SvmlightParser().feed(b"".join(line + b"\n" for _, line in keyed_lines(300, 1, seed)))
    model = PDM(delta=1.0, buffer_size=100)
    model.learn((rows.indptr, rows.indices, rows.values), np.where(rows.labels > 0, 1, -1))
    return model.replay(max_passes=3)


# -- records ------------------------------------------------------------------------------


def test_a_record_gives_back_the_model_bit_for_bit() -> None:
    model = learned_model()
    record = ModelRecord(b"t\xff", model.state_dict(), {0: 17, 2: 5}, 300)
    back = decode_record(encode_record(record, created=1.0, writer="test"), b"t\xff")
    assert (back.key, back.positions, back.examples) == (b"t\xff", {0: 17, 2: 5}, 300)
    assert same_state(back.state, model.state_dict())
    restored = learner_from_state(back.state)
    assert same_state(restored.state_dict(), model.state_dict())
    assert np.array_equal(restored.coef_, model.coef_) and restored.summary() == model.summary()


def test_a_record_of_another_key_another_kind_or_damaged_is_refused() -> None:
    data = encode_record(ModelRecord(b"a", PDM(delta=1.0).state_dict(), {}, 0), created=0.0)
    with pytest.raises(StateError, match="is key b'a'"):
        decode_record(data, b"b")
    with pytest.raises(StateError, match="not a keyed model"):
        decode_record(encode({"kind": "streamlearn.daemon"}, created=0.0), b"a")
    with pytest.raises(StateError, match="cannot be read"):
        decode_record(data[:-3], b"a")
    damaged = bytearray(data)
    damaged[-5] ^= 0xFF
    with pytest.raises(StateError, match="cannot be read"):
        decode_record(bytes(damaged), b"a")
    with pytest.raises(StateError, match="malformed"):
        decode_record(encode({"kind": "streamlearn.keyed-model", "key": b"a"}, created=0.0), b"a")


# -- models in memory -----------------------------------------------------------------------


def resident_models(max_models: int, max_bytes: int = 1 << 40) -> ResidentModels:
    return ResidentModels(max_models, max_bytes)


def test_the_least_recently_used_models_leave_first_never_the_one_in_use() -> None:
    held = resident_models(3)
    for key in (b"a", b"b", b"c"):
        held.add(key, Resident(PDM(delta=1.0), partition=0))
    assert held.victims() == []
    assert held.victims(room=1) == [b"a"]
    held.get(b"a")
    assert held.victims(room=1) == [b"b"]
    held.peek(b"b")  # a look does not count as a use
    assert held.victims(room=2) == [b"b", b"c"]
    assert held.victims(keep=b"b", room=2) == [b"c", b"a"]
    held.add(b"d", Resident(PDM(delta=1.0), partition=0))
    assert list(held) == [b"b", b"c", b"a", b"d"] and held.victims() == [b"b"]


def test_the_byte_bound_counts_weights_and_buffers_as_they_grow() -> None:
    empty = model_bytes(PDM(delta=1.0, buffer_size=60))
    held = resident_models(100, max_bytes=3 * empty)
    for key in (b"a", b"b"):
        held.add(key, Resident(PDM(delta=1.0, buffer_size=60), partition=0))
    assert held.bytes == 2 * empty and held.victims() == []
    grown = held.peek(b"b")
    assert grown is not None
    grown.model.learn(np.eye(3000)[-2:], [1, -1])  # weights for 3000 features: 24 kB
    held.measure(b"b")
    assert grown.size >= empty + 8 * (3000 - 16) and held.bytes == empty + grown.size
    assert held.victims(keep=b"b") == [b"a"]  # b alone is over the bound: it stays
    held.pop(b"a")
    assert held.bytes == grown.size


def test_bounds_must_be_positive_integers() -> None:
    with pytest.raises(ValueError, match="--max-models"):
        ResidentModels(0, 10)
    with pytest.raises(ValueError, match="--max-model-bytes"):
        ResidentModels(1, True)  # type: ignore[arg-type]


# -- rows by key ---------------------------------------------------------------------------


def test_rows_are_grouped_by_key_in_stream_order() -> None:
    rng = np.random.default_rng(3)
    keys: list[bytes | None] = [None if k == 5 else b"k%d" % k for k in rng.integers(6, size=40)]
    lines = b"".join(b"+1 %d:1.5 50:%d\n" % (i + 1, i) for i in range(40))  # line i names i
    rows = SvmlightParser().feed(lines)
    ids, distinct = key_ids(keys)
    groups = KeyGroups.of(rows, ids, np.arange(40))
    assert groups.keyless.tolist() == [i + 1 for i, k in enumerate(keys) if k is None]
    for number, key in enumerate(distinct):
        mine, owners = groups.rows_of(number)
        expected = [i for i, k in enumerate(keys) if k == key]
        assert owners.tolist() == expected
        assert mine.line_numbers.tolist() == [i + 1 for i in expected]
        assert mine.indices.tolist() == [v for i in expected for v in (i, 49)]
        assert mine.values.tolist() == [v for i in expected for v in (1.5, float(i))]
        assert mine.labels.tolist() == [1.0] * len(expected)
    assert groups.rows_of(len(distinct))[0].n_rows == 0
