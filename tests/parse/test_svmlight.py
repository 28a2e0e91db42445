"""The streaming svmlight parser: scikit-learn's reading of real files, chunking, rejections."""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streamlearn.errors import InvalidParameterError
from streamlearn.parse import REASONS, ParsedRows, Rejected, SvmlightParser, binary_batch

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

REAL_FILES = [
    ("adult/a9a.train", {"n_features": 123}),
    ("adult/a9a.test", {"n_features": 123}),
    ("reuters/corn.train", {}),
    ("reuters/grain.test", {}),
    ("yeast/yeast.all", {"multilabel": True}),
]


def data_bytes(relative: str) -> bytes:
    path = DATA / relative
    if not path.exists():
        pytest.skip(f"../shared/data is missing: {path} not found")
    return path.read_bytes()


def parse(data: bytes, cuts: list[int] | None = None, **options: Any) -> ParsedRows:
    """Everything a fresh parser returns for ``data`` fed in pieces ending at ``cuts``."""
    parser = SvmlightParser(**options)
    bounds = [0, *(cuts or []), len(data)]
    parts = [parser.feed(data[a:b]) for a, b in itertools.pairwise(bounds)]
    parts.append(parser.finish())
    assert parser.lines_seen == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return ParsedRows.concatenate(parts)


def row_labels(rows: ParsedRows) -> list[tuple[float, ...]]:
    return [
        tuple(rows.labels[rows.label_ptr[i] : rows.label_ptr[i + 1]].tolist())
        for i in range(rows.n_rows)
    ]


def assert_same(a: ParsedRows, b: ParsedRows) -> None:
    for name in ("indptr", "indices", "values", "label_ptr", "labels", "line_numbers"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        assert np.array_equal(x, y), name
    assert a.rejected == b.rejected


def random_cuts(data: bytes, seed: int, byte_prefix: int = 300) -> list[int]:
    """1-byte pieces over a prefix, then random sizes up to 64 KiB, plus cuts in the
    middle of numbers, of CRLF pairs and of multi-byte UTF-8 characters."""
    rng = np.random.default_rng(seed)
    cuts = set(range(1, min(byte_prefix, len(data))))
    position = byte_prefix
    while position < len(data):
        cuts.add(position)
        position += int(rng.integers(1, 1 << 16))
    array = np.frombuffer(data, dtype=np.uint8)
    digits = (array >= 48) & (array <= 57)
    special = {
        "number": np.flatnonzero(digits[:-1] & digits[1:]) + 1,
        "crlf": np.flatnonzero((array[:-1] == 13) & (array[1:] == 10)) + 1,
        "utf8": np.flatnonzero((array >= 0x80) & (array < 0xC0)),  # before a continuation
    }
    for positions in special.values():
        if positions.shape[0]:
            cuts.update(rng.choice(positions, size=min(200, positions.shape[0])).tolist())
    return sorted(c for c in cuts if 0 < c < len(data))


# -- real files against scikit-learn ---------------------------------------------------


@pytest.mark.parametrize(("relative", "options"), REAL_FILES, ids=[f for f, _ in REAL_FILES])
def test_real_files_read_as_scikit_learn_reads_them(relative: str, options: Any) -> None:
    from sklearn.datasets import load_svmlight_file

    data = data_bytes(relative)
    X, y = load_svmlight_file(io.BytesIO(data), zero_based=False, **options)
    rows = parse(data)
    assert rows.rejected == []
    assert rows.n_rows == X.shape[0] == data.count(b"\n")
    assert np.array_equal(rows.indptr, X.indptr)
    assert np.array_equal(rows.indices, X.indices)
    assert np.array_equal(rows.values, X.data)  # bit for bit: no precision lost
    assert np.array_equal(rows.line_numbers, np.arange(1, rows.n_rows + 1))
    if options.get("multilabel"):
        assert [tuple(sorted(labels)) for labels in row_labels(rows)] == list(y)
    else:
        assert np.array_equal(np.diff(rows.label_ptr), np.ones(rows.n_rows))
        assert np.array_equal(rows.labels, y)


@pytest.mark.parametrize("relative", ["reuters/corn.train", "yeast/yeast.all"])
def test_any_chunking_gives_the_one_chunk_result(relative: str) -> None:
    data = data_bytes(relative)
    whole = parse(data)
    for seed in range(3):
        assert_same(parse(data, random_cuts(data, seed)), whole)


def with_crlf_and_utf8_comments(data: bytes, lines: int) -> bytes:
    out = []
    for i, line in enumerate(data.splitlines()[:lines]):
        if i % 3 == 0:
            line += " # café ✓ 𝄞 naïve".encode()
        if i % 7 == 0:
            line = b"\t " + line.replace(b" ", b" \t  ")
        out.append(line + b"\r\n")
        if i % 50 == 0:
            out.append("# a comment line, ünïcödé\r\n\r\n".encode())
    return b"".join(out)


def test_crlf_tabs_and_utf8_comments_in_any_chunking() -> None:
    from sklearn.datasets import load_svmlight_file

    data = with_crlf_and_utf8_comments(data_bytes("reuters/corn.train"), 400)
    X, y = load_svmlight_file(io.BytesIO(data), zero_based=False)
    whole = parse(data)
    assert whole.rejected == []
    assert np.array_equal(whole.indptr, X.indptr)
    assert np.array_equal(whole.indices, X.indices)
    assert np.array_equal(whole.values, X.data)
    assert np.array_equal(whole.labels, y)
    for seed in range(3):
        assert_same(parse(data, random_cuts(data, seed, byte_prefix=2000)), whole)


# -- the format ------------------------------------------------------------------------


def test_blank_lines_comments_qid_crlf_tabs_and_spaces() -> None:
    data = (
        b"\n"
        b"# only a comment\n"
        b"   \t \r\n"
        b"+1 qid:3 1:0.5 4:2 # trailing comment\r\n"
        b"-1\t2:1\t\t7:-3.25\n"
        b"  1   1:1    2:1e-3   \r\n"
        b"0 5:1#comment right after a value\n"
        b"1\n"
        b"-1 qid:12\n"
    )
    rows = parse(data)
    assert rows.rejected == []
    assert rows.line_numbers.tolist() == [4, 5, 6, 7, 8, 9]
    assert rows.indptr.tolist() == [0, 2, 4, 6, 7, 7, 7]
    assert rows.indices.tolist() == [0, 3, 1, 6, 0, 1, 4]
    assert rows.values.tolist() == [0.5, 2.0, 1.0, -3.25, 1.0, 0.001, 1.0]
    assert row_labels(rows) == [(1.0,), (-1.0,), (1.0,), (0.0,), (1.0,), (-1.0,)]


def test_labels_single_float_multi_and_none() -> None:
    rows = parse(b"+1 1:1\n-1 1:1\n1 1:1\n0 1:1\n2 1:1\n1.5 1:1\n1,3,7 1:1\n0,2 4:1\n1:2 3:4\n")
    assert rows.rejected == []
    assert row_labels(rows) == [
        (1.0,), (-1.0,), (1.0,), (0.0,), (2.0,), (1.5,), (1.0, 3.0, 7.0), (0.0, 2.0), (),
    ]  # fmt: skip
    assert rows.indices[rows.indptr[-2] :].tolist() == [0, 2]


def test_number_shapes() -> None:
    tokens = [
        "1",
        "-0.5",
        ".5",
        "5.",
        "1e-3",
        "1.2E+5",
        "+7",
        "-0",
        "0.000",
        "12345678901234567890",
    ]
    # below the norm bound of 1e50 together: 1e24 both ways, by digits and by exponent
    tokens += ["1" + "0" * 24, "0." + "0" * 40 + "17", "2.5e-310", "1e24", "123.456e-7"]
    line = "1 " + " ".join(f"{i + 1}:{t}" for i, t in enumerate(tokens))
    rows = parse(line.encode() + b"\n")
    assert rows.rejected == []
    expected = np.array([float(t) for t in tokens])
    assert np.array_equal(rows.values, expected)
    assert np.array_equal(np.signbit(rows.values), np.signbit(expected))


def test_any_finite_number_is_a_label_and_a_value_within_the_norm_bound() -> None:
    rows = parse(b"1e308 1:1\n1 1:1e308\n-1 1:1.3e154 2:1e-300\n-1 1:9.9e24 2:1e-300\n")
    assert rows.labels.tolist() == [1e308, -1.0]
    assert rows.values.tolist() == [1.0, 9.9e24, 1e-300]
    assert [(r.line, r.reason) for r in rows.rejected] == [
        (2, "values too large"),
        (3, "values too large"),
    ]


def test_a_value_that_starts_with_one() -> None:
    # "1" before a token end is read without the number scanner; anything longer is not
    rows = parse(b"1 1:1 2:1\t3:10 4:1.5 5:1e2 6:1#c\n-1 1:1\r\n+1 7:1\n")
    assert rows.rejected == []
    assert rows.values.tolist() == [1.0, 1.0, 10.0, 1.5, 100.0, 1.0, 1.0, 1.0]
    bad = parse(b"1 1:1x\n1 2:1:\n")
    assert [r.reason for r in bad.rejected] == ["bad token", "bad token"]


def test_zero_based_indices_are_kept_as_they_are() -> None:
    rows = parse(b"1 0:1 5:2\n", zero_based=True)
    assert rows.indices.tolist() == [0, 5]
    assert rows.indices.dtype == np.int32


# -- rejections ------------------------------------------------------------------------

REJECTED_LINES = [
    (b"x 1:1", "bad label", {}),
    (b"1,,2 1:1", "bad label", {}),
    (b"1, 1:1", "bad label", {}),
    (b"nan 1:1", "bad label", {}),
    (b"1e999 1:1", "bad label", {}),
    (b"1 1:x", "bad token", {}),
    (b"1 1:1:2", "bad token", {}),
    (b"1 1", "bad token", {}),
    (b"1 :1", "bad token", {}),
    (b"1 1:", "bad token", {}),
    (b"1 1:0x10", "bad token", {}),
    (b"1 1:1 qid:2", "bad token", {}),
    (b"1 1:nan", "not a finite value", {}),
    (b"1 1:-Infinity", "not a finite value", {}),
    (b"1 1:1e400", "not a finite value", {}),
    (b"1 1:-" + b"9" * 400, "not a finite value", {}),
    (b"1 1:1e200", "values too large", {}),
    (b"1 1:1e154 2:-1e154 3:" + b"9" * 160, "values too large", {}),
    (b"1 0:1", "index 0 or negative", {}),
    (b"1 -3:1", "index 0 or negative", {}),
    (b"1 -1:1", "index 0 or negative", {"zero_based": True}),
    (b"1 11:1", "index above max_features", {"max_features": 10}),
    (b"1 10:1", "index above max_features", {"max_features": 10, "zero_based": True}),
    (b"1 2147483649:1", "index above max_features", {}),
    (b"1 2147483648:1", "index above max_features", {}),
    (b"1 2147483648:1", "index above max_features", {"max_features": 2**31}),
    (b"1 99999999999999999999999:1", "index above max_features", {}),
    (b"1 3:1 2:1", "unsorted or duplicate index", {}),
    (b"1 2:1 2:1", "unsorted or duplicate index", {}),
    (b"1 1:1 \xff", "not UTF-8", {}),
    (b"\xe9 1:1", "not UTF-8", {}),
    (b"1 1:1 # caf\xe9", "not UTF-8", {}),
    (b"# \xed\xa0\x80 (a surrogate)", "not UTF-8", {}),
    (b"1 1:1 2:1 3:1 4:1 5:1 6:1 7:1 8:1", "line too long", {"max_line_bytes": 30}),
]


@pytest.mark.parametrize(("line", "reason", "options"), REJECTED_LINES)
def test_each_rejection_names_its_line_and_the_stream_goes_on(
    line: bytes, reason: str, options: Any
) -> None:
    data = b"1 1:1\n# comment\n" + line + b"\r\n-1 2:0.5\n"
    for cuts in ([], list(range(1, len(data)))):
        rows = parse(data, cuts, **options)
        assert rows.rejected == [Rejected(3, reason, line.decode("utf-8", errors="replace")[:80])]
        assert rows.line_numbers.tolist() == [1, 4]
        assert rows.values.tolist() == [1.0, 0.5]
        assert row_labels(rows) == [(1.0,), (-1.0,)]
    assert reason in REASONS


@pytest.mark.parametrize(
    ("line", "options"),
    [
        (b"1 10:1", {"max_features": 10}),
        (b"1 9:1", {"max_features": 10, "zero_based": True}),
        (b"1 2147483647:1", {}),  # 0-based 2^31 - 2, the learners' largest index
        (b"1 0:1", {"zero_based": True}),
        (b"1 1:1 2:1 3:1 4:1 5:1 6:1 7:10", {"max_line_bytes": 30}),
    ],
)
def test_limits_are_inclusive(line: bytes, options: Any) -> None:
    rows = parse(line + b"\n", **options)
    assert rows.rejected == []
    assert rows.n_rows == 1


def test_rejected_text_is_the_start_of_the_line() -> None:
    line = b"1 1:1 1:1 " + "é".encode() * 100
    (rejected,) = parse(line + b"\n").rejected
    assert rejected.reason == "unsorted or duplicate index"
    assert rejected.text == line.decode()[:80]
    assert len(rejected.text) == 80


def test_a_long_line_over_many_chunks_is_skipped_without_being_kept() -> None:
    parser = SvmlightParser(max_line_bytes=1000)
    first = parser.feed(b"1 1:1\n-1 2:")
    for _ in range(100):
        assert parser.feed(b"1" * 97 + b" 3:").n_rows == 0
        assert len(parser._carry) + len(parser._overlong or b"") <= 1000  # dropped, not held
    last = parser.feed(b"1\n1 4:1\n")
    assert first.line_numbers.tolist() == [1]
    assert first.rejected == []
    assert last.rejected == [
        Rejected(2, "line too long", ("-1 2:" + "1" * 97 + " 3:" + "1" * 97)[:80])
    ]
    assert last.line_numbers.tolist() == [3]
    assert parser.lines_seen == 3


def test_a_long_last_line_without_newline() -> None:
    parser = SvmlightParser(max_line_bytes=10)
    assert parser.feed(b"1 1:1\n1 1:1 2:1 3:1").rejected == []
    assert parser.feed(b" 4:1").rejected == []
    assert parser.finish().rejected == [Rejected(2, "line too long", "1 1:1 2:1 3:1 4:1")]
    assert parser.lines_seen == 2


def test_finish_reads_a_last_line_without_newline() -> None:
    parser = SvmlightParser()
    assert parser.feed(b"1 1:1\n-1 2:2").n_rows == 1
    assert parser.lines_seen == 1
    last = parser.finish()
    assert last.line_numbers.tolist() == [2]
    assert last.values.tolist() == [2.0]
    assert parser.lines_seen == 2
    assert parser.finish().n_rows == 0
    assert parser.feed(b"").n_rows == 0


def test_the_caller_may_reuse_its_buffer() -> None:
    parser = SvmlightParser()
    buffer = bytearray(b"1 1:1\n-1 2:3")
    assert parser.feed(buffer).n_rows == 1
    buffer[:] = b"9" * len(buffer)
    rows = parser.feed(memoryview(b".5\n"))
    assert rows.values.tolist() == [3.5]
    assert row_labels(rows) == [(-1.0,)]


@pytest.mark.parametrize(
    "options", [{"max_features": 0}, {"max_features": 1 << 32}, {"max_line_bytes": 0}]
)
def test_bad_options_are_refused(options: Any) -> None:
    with pytest.raises(InvalidParameterError):
        SvmlightParser(**options)


# -- binary batches --------------------------------------------------------------------


def test_binary_batch_keeps_rows_with_one_label_in_plus_minus_one_or_zero() -> None:
    data = b"+1 1:1\n0 2:2\n2 1:1\nx 1:1\n-1 3:3 4:4\n1,-1 1:1\n1:5\n1 5:5\n1.5 1:1\n"
    batch, rejected = binary_batch(parse(data))
    assert batch.labels.dtype == np.int8
    assert batch.labels.tolist() == [1, -1, -1, 1]
    assert batch.indptr.tolist() == [0, 1, 2, 4, 5]
    assert batch.indices.tolist() == [0, 1, 2, 3, 4]
    assert batch.values.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert rejected == [
        Rejected(3, "bad label", "2"),
        Rejected(4, "bad label", "x 1:1"),
        Rejected(6, "bad label", "1,-1"),
        Rejected(7, "bad label", ""),
        Rejected(9, "bad label", "1.5"),
    ]


def test_binary_batch_of_clean_rows_shares_the_arrays() -> None:
    rows = parse(b"1 1:1\n-1 2:1\n")
    batch, rejected = binary_batch(rows)
    assert rejected == []
    assert batch.indices is rows.indices
    assert batch.n_examples == 2
