"""Properties of the svmlight parser under random input: no crash, no lost line, exact numbers."""

from __future__ import annotations

import itertools
import math
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamlearn._kernels.rows import MAX_ROW_SQNORM
from streamlearn.parse import REASONS, ParsedRows, SvmlightParser

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_FEATURES = 1000


def parse(data: bytes, cuts: list[int], **options: Any) -> tuple[ParsedRows, int]:
    """All rows of ``data`` fed in pieces ending at ``cuts``, and the lines seen."""
    parser = SvmlightParser(**options)
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < len(data)), len(data)]
    parts = [parser.feed(data[a:b]) for a, b in itertools.pairwise(bounds)]
    parts.append(parser.finish())
    return ParsedRows.concatenate(parts), parser.lines_seen


def assert_well_formed(rows: ParsedRows, lines_seen: int, max_features: int | None) -> None:
    n = rows.n_rows
    assert rows.indptr.dtype == rows.label_ptr.dtype == rows.line_numbers.dtype == np.int64
    assert rows.indices.dtype == np.int32
    assert rows.values.dtype == rows.labels.dtype == np.float64
    for ptr, items in ((rows.indptr, rows.indices), (rows.label_ptr, rows.labels)):
        assert ptr.shape == (n + 1,)
        assert ptr[0] == 0
        assert ptr[-1] == items.shape[0]
        assert np.all(np.diff(ptr) >= 0)
    assert rows.values.shape == rows.indices.shape
    assert np.all(np.isfinite(rows.values))
    assert np.all(np.isfinite(rows.labels))
    assert np.all(rows.indices >= 0)
    if max_features is not None:
        assert np.all(rows.indices < max_features)
    for i in range(n):
        assert np.all(np.diff(rows.indices[rows.indptr[i] : rows.indptr[i + 1]]) > 0)
    row_lines = rows.line_numbers.tolist()
    rejected_lines = [r.line for r in rows.rejected]
    assert row_lines == sorted(set(row_lines))
    assert rejected_lines == sorted(set(rejected_lines))
    assert not set(row_lines) & set(rejected_lines)
    assert all(1 <= line <= lines_seen for line in row_lines + rejected_lines)
    for rejected in rows.rejected:
        assert rejected.reason in REASONS
        assert len(rejected.text) <= 80
        assert "\n" not in rejected.text


def cut_lists(size: int = 4096) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, size), max_size=30)


# -- random bytes ----------------------------------------------------------------------

# bytes that the format gives meaning to, so random input often gets past the first check
ALPHABET = b"0123456789:.,+-eE #\t\r\n\n\nqidnaf\xc3\xa9\xff\x80"
svm_like_bytes = st.lists(st.sampled_from(list(ALPHABET)), max_size=400).map(bytes)


@FUZZ
@given(data=st.one_of(st.binary(max_size=400), svm_like_bytes), cuts=cut_lists(400))
def test_random_bytes_never_crash_and_rows_are_well_formed(data: bytes, cuts: list[int]) -> None:
    whole, lines = parse(data, [], max_features=MAX_FEATURES)
    assert lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert_well_formed(whole, lines, MAX_FEATURES)
    chunked, _ = parse(data, cuts, max_features=MAX_FEATURES)
    for name in ("indptr", "indices", "values", "label_ptr", "labels", "line_numbers"):
        assert np.array_equal(getattr(chunked, name), getattr(whole, name))
    assert chunked.rejected == whole.rejected


@FUZZ
@given(data=svm_like_bytes, cuts=cut_lists(400), limit=st.integers(1, 40))
def test_short_line_limits_are_chunking_proof(data: bytes, cuts: list[int], limit: int) -> None:
    whole, lines = parse(data, [], max_line_bytes=limit, zero_based=True)
    assert_well_formed(whole, lines, None)
    chunked, _ = parse(data, cuts, max_line_bytes=limit, zero_based=True)
    assert np.array_equal(chunked.line_numbers, whole.line_numbers)
    assert chunked.rejected == whole.rejected
    too_long = {i + 1 for i, line in enumerate(data.split(b"\n")) if len(line) > limit}
    assert {r.line for r in whole.rejected if r.reason == "line too long"} == too_long


# -- valid lines among garbage ---------------------------------------------------------


@dataclass(frozen=True)
class Line:
    labels: tuple[float, ...]
    indices: tuple[int, ...]  # 1-based, as in the file
    values: tuple[float, ...]
    text: bytes


#: values of valid lines: up to 12 of them, their squares add up to at most the bound (a
#: row whose squares add up to more is rejected as "values too large")
small_finite = st.floats(
    allow_nan=False, allow_infinity=False, width=64, min_value=-1e24, max_value=1e24
)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
number_formats = st.sampled_from(["{!r}", "{:.17g}", "{:.3e}", "{:g}", "{:.6f}", "{:.0f}"])


@st.composite
def valid_lines(draw: st.DrawFn) -> Line:
    labels = tuple(draw(st.lists(st.integers(-1, 9).map(float), min_size=1, max_size=3)))
    indices = tuple(sorted(draw(st.sets(st.integers(1, MAX_FEATURES), max_size=12))))
    numbers = [draw(small_finite) for _ in indices]
    tokens = [draw(number_formats).format(x) for x in numbers]
    values = tuple(float(t) for t in tokens)
    space = draw(st.sampled_from([" ", "\t", "  ", " \t "]))
    parts = [",".join(f"{x:+g}" if draw(st.booleans()) else f"{x:g}" for x in labels)]
    if draw(st.booleans()):
        parts.append(f"qid:{draw(st.integers(0, 99))}")
    parts += [f"{i}:{t}" for i, t in zip(indices, tokens, strict=True)]
    text = space.join(parts)
    if draw(st.booleans()):
        text += draw(st.sampled_from([" # note", "#é ✓", " "]))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return Line(labels, indices, values, (text + ending).encode())


garbage = st.one_of(
    st.binary(min_size=1, max_size=60).map(lambda b: b + b"\n"),
    st.lists(st.sampled_from(list(ALPHABET)), min_size=1, max_size=60).map(
        lambda b: bytes(b) + b"\n"
    ),
    st.sampled_from([b"\n", b"# comment\n", b"1 0:1\n", b"1 2:1 2:1\n", b"x\n", b"\xff\n"]),
)


@FUZZ
@given(
    items=st.lists(st.one_of(valid_lines(), garbage), min_size=1, max_size=25),
    cuts=cut_lists(),
)
def test_garbage_between_valid_lines_never_loses_one(
    items: list[Line | bytes], cuts: list[int]
) -> None:
    data = b""
    expected: dict[int, Line] = {}
    for item in items:
        if isinstance(item, Line):
            expected[data.count(b"\n") + 1] = item
            data += item.text
        else:
            data += item
    rows, lines = parse(data, cuts, max_features=MAX_FEATURES)
    assert_well_formed(rows, lines, MAX_FEATURES)
    found = {line: i for i, line in enumerate(rows.line_numbers.tolist())}
    for number, line in expected.items():
        assert number in found, (number, line, rows.rejected)
        i = found[number]
        lo, hi = rows.indptr[i], rows.indptr[i + 1]
        assert rows.indices[lo:hi].tolist() == [j - 1 for j in line.indices]
        assert bits(rows.values[lo:hi]) == bits(line.values)
        assert tuple(rows.labels[rows.label_ptr[i] : rows.label_ptr[i + 1]]) == line.labels


def bits(values: Iterable[float]) -> list[int]:
    """The IEEE bit patterns, so that 0.0 and -0.0 differ."""
    return [struct.unpack("<q", struct.pack("<d", float(x)))[0] for x in values]


# -- exact numbers ---------------------------------------------------------------------

FORMATS = ["{!r}", "{:.17g}", "{:.3e}", "{:.15g}", "{:.16e}", "{:.25e}", "{:.20f}", "{:.0f}"]


@settings(max_examples=300, deadline=None)
@given(numbers=st.lists(finite, min_size=1, max_size=50))
def test_written_floats_read_back_exactly(numbers: list[float]) -> None:
    tokens = [f.format(x) for x in numbers for f in FORMATS]
    tokens = [t for t in tokens if math.isfinite(float(t))]  # "%.3e" of 1.7975e308 overflows
    # each number as a label (any finite number) and as a value (its square within the bound)
    data = b"".join(f"{t} 1:1\n1 1:{t}\n".encode() for t in tokens)
    rows, _ = parse(data, [])
    squared = [float(t) * float(t) for t in tokens]
    too_large = [2 * i + 2 for i, square in enumerate(squared) if not square <= MAX_ROW_SQNORM]
    assert [(r.line, r.reason) for r in rows.rejected] == [
        (line, "values too large") for line in too_large
    ]
    label_rows = rows.line_numbers % 2 == 1
    assert bits(rows.labels[label_rows]) == bits(float(t) for t in tokens)
    kept = [t for t, square in zip(tokens, squared, strict=True) if square <= MAX_ROW_SQNORM]
    assert bits(rows.values[~label_rows]) == bits(float(t) for t in kept)


decimal_text = st.builds(
    lambda sign, whole, fraction, exponent: f"{sign}{whole}{fraction}{exponent}",
    st.sampled_from(["", "-", "+"]),
    st.text("0123456789", min_size=1, max_size=25),
    st.one_of(st.just(""), st.text("0123456789", max_size=25).map(lambda s: "." + s)),
    st.one_of(st.just(""), st.integers(-400, 400).map(lambda e: f"e{e}")),
)


@settings(max_examples=300, deadline=None)
@given(tokens=st.lists(decimal_text, min_size=1, max_size=40))
def test_decimal_strings_read_as_float_reads_them(tokens: list[str]) -> None:
    data = b"".join(f"1 1:{t}\n".encode() for t in tokens)
    rows, _ = parse(data, [])
    expected = [float(t) for t in tokens]
    kept = [x for x in expected if x * x <= MAX_ROW_SQNORM]
    assert bits(rows.values) == bits(kept)
    reasons = [
        (i + 1, "not a finite value" if not math.isfinite(x) else "values too large")
        for i, x in enumerate(expected)
        if not x * x <= MAX_ROW_SQNORM
    ]
    assert [(r.line, r.reason) for r in rows.rejected] == reasons


@FUZZ
@given(comment=st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")))
def test_utf8_is_checked_as_python_decodes(comment: bytes) -> None:
    rows, _ = parse(b"1 1:1 #" + comment + b"\n#" + comment + b"\n", [])
    try:
        comment.decode("utf-8")
    except UnicodeDecodeError:
        assert [(r.line, r.reason) for r in rows.rejected] == [(1, "not UTF-8"), (2, "not UTF-8")]
        assert rows.n_rows == 0
    else:
        assert rows.rejected == []
        assert rows.n_rows == 1


# -- a plain-Python twin of the parser -------------------------------------------------

NUMBER = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
WORD = re.compile(rb"[+-]?(nan|inf|infinity)", re.IGNORECASE)
INTEGER = re.compile(rb"[+-]?\d+")


@dataclass
class Twin:
    """What the parser should return, line by line, written the slow and obvious way."""

    rows: list[tuple[int, tuple[float, ...], tuple[int, ...], tuple[float, ...]]]
    rejected: list[tuple[int, str, str]]


def twin_line(line: bytes, max_index: int, shift: int) -> str | tuple[Any, ...] | None:
    """A rejection reason, a row (labels, indices, values) or None for a blank line."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return None
    labels: list[bytes] = []
    if b":" not in tokens[0]:
        labels, tokens = tokens[0].split(b","), tokens[1:]
        if not all(NUMBER.fullmatch(label) for label in labels):
            return "bad label"
    if tokens and tokens[0].startswith(b"qid:"):
        if not INTEGER.fullmatch(tokens[0][4:]):
            return "bad token"
        tokens = tokens[1:]
    indices: list[int] = []
    numbers: list[bytes] = []
    for token in tokens:
        index, colon, number = token.partition(b":")
        if not INTEGER.fullmatch(index) or not colon:
            return "bad token"
        if WORD.fullmatch(number):
            return "not a finite value"
        if not NUMBER.fullmatch(number):
            return "bad token"
        column = int(index) - shift
        if column < 0:
            return "index 0 or negative"
        if column > max_index:
            return "index above max_features"
        if indices and column <= indices[-1]:
            return "unsorted or duplicate index"
        indices.append(column)
        numbers.append(number)
    # overflow is found last, by the Python fix-up of the numbers the kernel left, and
    # the norm bound after it
    label_values = tuple(float(x) for x in labels)
    if not all(map(math.isfinite, label_values)):
        return "bad label"
    values = tuple(float(x) for x in numbers)
    if not all(map(math.isfinite, values)):
        return "not a finite value"
    if not sum(v * v for v in values) <= MAX_ROW_SQNORM:  # added in order, as the parser adds
        return "values too large"
    return label_values, tuple(indices), values


def twin_parse(data: bytes, max_features: int | None, zero_based: bool, limit: int) -> Twin:
    max_index = (1 << 31) - 1 if max_features is None else max_features - 1
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    twin = Twin([], [])
    for number, line in enumerate(lines, start=1):
        outcome = None if len(line) <= limit else "line too long"
        if outcome is None:
            outcome = twin_line(line, max_index, 0 if zero_based else 1)
        if isinstance(outcome, str):
            text = line[:320].rstrip(b"\r\n").decode("utf-8", errors="replace")[:80]
            twin.rejected.append((number, outcome, text))
        elif outcome is not None:
            twin.rows.append((number, *outcome))
    return twin


@FUZZ
@given(
    data=st.one_of(
        svm_like_bytes,
        st.lists(st.one_of(valid_lines(), garbage)).map(
            lambda items: b"".join(i.text if isinstance(i, Line) else i for i in items)
        ),
    ),
    cuts=cut_lists(400),
    max_features=st.one_of(st.none(), st.integers(1, 2000)),
    zero_based=st.booleans(),
    limit=st.one_of(st.just(1 << 20), st.integers(1, 60)),
)
def test_the_parser_matches_its_plain_python_twin(
    data: bytes, cuts: list[int], max_features: int | None, zero_based: bool, limit: int
) -> None:
    options: dict[str, Any] = {"max_features": max_features, "zero_based": zero_based}
    rows, _ = parse(data, cuts, max_line_bytes=limit, **options)
    twin = twin_parse(data, max_features, zero_based, limit)
    assert [(r.line, r.reason, r.text) for r in rows.rejected] == twin.rejected
    assert rows.line_numbers.tolist() == [row[0] for row in twin.rows]
    for i, (_, labels, indices, values) in enumerate(twin.rows):
        lo, hi = rows.indptr[i], rows.indptr[i + 1]
        assert tuple(rows.labels[rows.label_ptr[i] : rows.label_ptr[i + 1]]) == labels
        assert tuple(rows.indices[lo:hi].tolist()) == indices
        assert bits(rows.values[lo:hi]) == bits(values)
