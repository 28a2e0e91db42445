"""Decoding messages: svmlight and msgpack by content-type, and every rejection."""

from __future__ import annotations

import json
from typing import Any

import msgpack
import numpy as np
import pytest

from streamlearn.errors import InvalidParameterError
from streamlearn.parse.features import stable_hash
from streamlearn.parse.messages import BAD_MESSAGE, MessageDecoder, decode_message
from streamlearn.parse.svmlight import REASONS, ParsedRows, Rejected, SvmlightParser

MSGPACK = {"content-type": b"application/msgpack"}
SVMLIGHT = {"content-type": b"text/svmlight"}


def packed(document: Any) -> bytes:
    return bytes(msgpack.packb(document))


def reasons(rows: ParsedRows) -> list[tuple[int, str]]:
    return [(r.line, r.reason) for r in rows.rejected]


def assert_same_rows(a: ParsedRows, b: ParsedRows) -> None:
    for name in ("indptr", "indices", "values", "label_ptr", "labels", "line_numbers"):
        left, right = getattr(a, name), getattr(b, name)
        assert left.dtype == right.dtype, name
        np.testing.assert_array_equal(left, right, err_msg=name)
    assert a.rejected == b.rejected


def test_svmlight_is_the_default_and_matches_the_parser() -> None:
    value = b"+1 1:0.5 3:2\n# comment\n-1 2:1e-3\n1 0:4\n2,3 qid:7 5:1"
    rows = decode_message(value, {})
    parser = SvmlightParser()
    expected = ParsedRows.concatenate([parser.feed(value), parser.finish()])
    assert_same_rows(rows, expected)
    assert rows.n_rows == 3
    assert rows.line_numbers.tolist() == [1, 3, 5]
    assert reasons(rows) == [(4, "index 0 or negative")]


def test_svmlight_line_numbers_restart_in_each_message() -> None:
    decoder = MessageDecoder()
    assert decoder.decode(b"1 1:1\n1 1:1\n", SVMLIGHT).line_numbers.tolist() == [1, 2]
    assert decoder.decode(b"1 1:1\n", SVMLIGHT).line_numbers.tolist() == [1]


def test_svmlight_options_pass_through() -> None:
    decoder = MessageDecoder(max_features=3, zero_based=True, max_line_bytes=20)
    rows = decoder.decode(b"1 0:1 2:1\n1 3:1\n1 " + b"1:1 " * 10 + b"\n", {})
    assert rows.indices.tolist() == [0, 2]
    assert reasons(rows) == [(2, "index above max_features"), (3, "line too long")]


def test_content_type_picks_the_format_and_ignores_parameters() -> None:
    decoder = MessageDecoder(default_format="msgpack")
    document = packed({"indices": [4], "values": [2.0], "label": 1})
    assert decoder.decode(document, {}).indices.tolist() == [4]
    text = {"content-type": b"Text/SVMlight; charset=utf-8"}
    assert decoder.decode(b"1 5:1\n", text).indices.tolist() == [4]
    assert decoder.format_of({"content-type": b"application/x-msgpack"}) == "msgpack"
    assert decoder.format_of({"content-type": b"application/json; charset=utf-8"}) == "json"
    unknown = decoder.decode(b"{}", {"content-type": b"application/xml"})
    assert reasons(unknown) == [(1, BAD_MESSAGE)]
    assert "application/xml" in unknown.rejected[0].text
    assert unknown.n_rows == 0


def test_msgpack_single_example() -> None:
    value = packed({"indices": [0, 3, 10], "values": [1, 0.5, -2.0], "label": -1, "id": "x"})
    rows = decode_message(value, MSGPACK)
    assert rows.indptr.tolist() == [0, 3]
    assert rows.indices.tolist() == [0, 3, 10]
    assert rows.indices.dtype == np.int32
    assert rows.values.tolist() == [1.0, 0.5, -2.0]
    assert rows.values.dtype == np.float64
    assert rows.label_ptr.tolist() == [0, 1]
    assert rows.labels.tolist() == [-1.0]
    assert rows.line_numbers.tolist() == [1]
    assert rows.rejected == []


def test_msgpack_batch_with_unlabeled_and_empty_examples() -> None:
    value = packed(
        {
            "examples": [
                {"indices": [1, 2], "values": [1.0, 2.0], "label": 1.0},
                {"indices": [5], "values": [3.0]},  # to predict
                {"indices": [], "values": [], "label": -1},
                {"indices": [0], "values": [4.0], "label": None},
            ]
        }
    )
    rows = decode_message(value, MSGPACK)
    assert rows.n_rows == 4
    assert rows.indptr.tolist() == [0, 2, 3, 3, 4]
    assert rows.indices.tolist() == [1, 2, 5, 0]
    assert rows.label_ptr.tolist() == [0, 1, 1, 2, 2]
    assert rows.labels.tolist() == [1.0, -1.0]
    assert rows.line_numbers.tolist() == [1, 2, 3, 4]
    assert rows.rejected == []


def test_msgpack_empty_batch() -> None:
    rows = decode_message(packed({"examples": []}), MSGPACK)
    assert_same_rows(rows, ParsedRows.empty())


def good(**changes: Any) -> dict[str, Any]:
    example: dict[str, Any] = {"indices": [1, 2], "values": [1.0, 2.0], "label": 1}
    example.update(changes)
    return example


@pytest.mark.parametrize(
    ("example", "reason"),
    [
        (good(label="1"), REASONS[0]),
        (good(label=True), REASONS[0]),
        (good(label=float("nan")), REASONS[0]),
        (good(label=[1, 2]), REASONS[0]),
        (good(values=[1.0, float("inf")]), "not a finite value"),
        (good(values=[float("nan"), 1.0]), "not a finite value"),
        (good(values=[1e200, 1.0]), "values too large"),
        (good(values=[1.0, 2**1100]), BAD_MESSAGE),  # beyond msgpack's integers: not msgpack
        (good(indices=[-1, 2]), "index 0 or negative"),
        (good(indices=[1, 2**31]), "index above max_features"),
        (good(indices=[2, 1]), "unsorted or duplicate index"),
        (good(indices=[1, 1]), "unsorted or duplicate index"),
        (good(indices=[1]), BAD_MESSAGE),
        (good(indices=[1.0, 2.0]), BAD_MESSAGE),
        (good(values=["1", 2.0]), BAD_MESSAGE),
        (good(values=[True, 2.0]), BAD_MESSAGE),
        (good(indices=None), BAD_MESSAGE),
        (good(values=(1.0, 2.0, 3.0)), BAD_MESSAGE),
        ({"values": [1.0]}, BAD_MESSAGE),
        ([1, 2], BAD_MESSAGE),
        ("1 1:1", BAD_MESSAGE),
    ],
)
def test_msgpack_rejections(example: Any, reason: str) -> None:
    try:
        value = packed({"examples": [good(), example, good(indices=[7], values=[1.0])]})
    except (OverflowError, TypeError):
        value = b"\xc1"  # not packable: stands for a message that is not msgpack
        expected = [(1, BAD_MESSAGE)]
    else:
        expected = [(2, reason)]
    rows = decode_message(value, MSGPACK)
    assert reasons(rows) == expected
    if value != b"\xc1":
        assert rows.line_numbers.tolist() == [1, 3]
        assert rows.indices.tolist() == [1, 2, 7]
        assert len(rows.rejected[0].text) <= 80


def test_msgpack_max_features_bounds_indices() -> None:
    decoder = MessageDecoder(max_features=8)
    ok = decoder.decode(packed(good(indices=[0, 7])), MSGPACK)
    assert ok.indices.tolist() == [0, 7]
    above = decoder.decode(packed(good(indices=[0, 8])), MSGPACK)
    assert reasons(above) == [(1, "index above max_features")]


@pytest.mark.parametrize(
    "value",
    [
        b"\xc1",  # a byte msgpack never uses
        b"\x92\x01",  # an array cut short
        packed({"indices": [1]}) + b"\x01",  # extra data after the document
        packed({"examples": {"indices": [1]}}),
        packed(3),
        packed({"examples": [{"indices": [1], "values": [1.0]}], "x": b"\xff"})[:-3],
    ],
)
def test_not_msgpack_or_not_the_schema_is_one_bad_message(value: bytes) -> None:
    rows = decode_message(value, MSGPACK)
    assert rows.n_rows == 0
    assert reasons(rows) == [(1, BAD_MESSAGE)]


def test_bad_options() -> None:
    with pytest.raises(InvalidParameterError):
        MessageDecoder(default_format="xml")
    with pytest.raises(InvalidParameterError):
        MessageDecoder(max_features=0)
    with pytest.raises(InvalidParameterError, match="hash_features"):
        MessageDecoder(max_features=100, hash_features=101)


JSON = {"content-type": b"application/json"}


def test_json_takes_the_msgpack_schema_a_list_and_refuses_what_json_has_not() -> None:
    decoder = MessageDecoder()
    one = {"indices": [0, 3], "values": [1, 0.5], "label": -1}
    for document in (one, [one, one], {"examples": [one, one]}):
        as_json = decoder.decode(json.dumps(document).encode(), JSON)
        as_msgpack = decoder.decode(packed(document), MSGPACK)
        assert as_json.indices.tolist() == as_msgpack.indices.tolist()
        assert as_json.labels.tolist() == as_msgpack.labels.tolist()
    for text in (b'{"indices": [0], "values": [NaN]}', b'{"indices": [0], "values": [Infinity]}',
                 b"[1, 2", b"\xff\xfe"):  # fmt: skip
        rows = decoder.decode(text, JSON)
        assert reasons(rows) == [(1, BAD_MESSAGE)] and rows.n_rows == 0
    bad_value = decoder.decode(
        b'[{"indices": [0], "values": [true]}, {"indices": [1], "values": [2]}]', JSON
    )
    assert reasons(bad_value) == [(1, BAD_MESSAGE)] and bad_value.indices.tolist() == [1]


def test_features_by_name_are_hashed_as_the_river_adapters_hash_them() -> None:
    from streamlearn.river import PDMClassifier

    decoder = MessageDecoder(hash_features=32)
    x = {"age": 2.0, "height": -1.5, "city=Paris": 1.0}
    rows = decoder.decode(json.dumps({"features": x, "label": 1}).encode(), JSON)
    river = PDMClassifier(n_features=32, delta=1.0)
    river.learn_one(x, True)
    river_indices = sorted(i for i, w in river.weights.items() if w != 0.0)
    assert sorted(set(rows.indices.tolist())) == river_indices
    summed = {}
    for name, value in x.items():
        index = stable_hash(name) % 32
        summed[index] = summed.get(index, 0.0) + value
    assert dict(zip(rows.indices.tolist(), rows.values.tolist(), strict=True)) == summed
    without = MessageDecoder().decode(json.dumps({"features": x}).encode(), JSON)
    assert reasons(without) == [(1, BAD_MESSAGE)]  # no hashing asked for: refused


def test_concatenates_with_parser_rows() -> None:
    decoder = MessageDecoder()
    parts = [
        decoder.decode(b"1 1:1\n", {}),
        decoder.decode(packed(good()), MSGPACK),
        decoder.decode(b"\xc1", MSGPACK),
    ]
    rows = ParsedRows.concatenate(parts)
    assert rows.n_rows == 2
    assert rows.indices.tolist() == [0, 1, 2]
    assert reasons(rows) == [(1, BAD_MESSAGE)]


def test_decode_many_matches_one_by_one_with_running_line_numbers() -> None:
    decoder = MessageDecoder()
    messages: list[tuple[bytes, dict[str, bytes]]] = [
        (b"1 1:1\n-1 2:1\n", {}),
        (b"1 0:1", SVMLIGHT),  # rejected, no newline at its end
        (b"", {}),  # no lines
        (packed({"examples": [good(), good(indices=[3, 2])]}), MSGPACK),
        (b"\xc1", MSGPACK),
        (packed({"examples": []}), MSGPACK),
        (b"-1 4:1\n# comment\n1 5:x\n", {}),
        (packed(good(indices=[9], values=[1.0], label=None)), MSGPACK),
    ]
    rows, starts = decoder.decode_many(messages)
    assert starts == [1, 3, 4, 4, 6, 7, 8, 11]
    one_by_one = [decoder.decode(v, h) for v, h in messages]
    shifted = []
    for part, start in zip(one_by_one, starts, strict=True):
        shifted.append(
            ParsedRows(
                part.indptr,
                part.indices,
                part.values,
                part.label_ptr,
                part.labels,
                part.line_numbers + start - 1,
                [Rejected(r.line + start - 1, r.reason, r.text) for r in part.rejected],
            )
        )
    assert_same_rows(rows, ParsedRows.concatenate(shifted))
    assert rows.line_numbers.tolist() == [1, 2, 4, 8, 11]
    assert reasons(rows) == [
        (3, "index 0 or negative"),
        (5, "unsorted or duplicate index"),
        (6, BAD_MESSAGE),
        (10, "bad token"),
    ]
    empty, no_starts = decoder.decode_many([])
    assert empty.n_rows == 0 and no_starts == []
