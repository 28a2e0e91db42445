"""Streaming svmlight/libsvm parser: chunks of bytes in, CSR rows and rejected lines out.

One example per line: ``label[,label...] [qid:N] idx:val idx:val ... [# comment]``.
Bad lines do not stop the stream: each is skipped and reported as a :class:`Rejected`
with its 1-based line number and one of :data:`REASONS`.

>>> parser = SvmlightParser()
>>> rows = parser.feed(b"+1 1:0.5 3:2\\n# a comment\\n-1 2:1e-3\\n1 0:4\\n-1 4:")
>>> rows.n_rows, rows.indptr.tolist(), rows.indices.tolist(), rows.values.tolist()
(2, [0, 2, 3], [0, 2, 1], [0.5, 2.0, 0.001])
>>> rows.labels.tolist(), rows.line_numbers.tolist()
([1.0, -1.0], [1, 3])
>>> rows.rejected
[Rejected(line=4, reason='index 0 or negative', text='1 0:4')]
>>> parser.feed(b"1\\n").values.tolist(), parser.lines_seen
([1.0], 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from streamlearn._kernels.rows import MAX_ROW_SQNORM, sqnorms_of_rows
from streamlearn._kernels.svmlight import (
    LINE_BAD_LABEL,
    LINE_NORM_OVERFLOW,
    LINE_NOT_FINITE,
    LINE_TOO_LONG,
    SLOW_END,
    SLOW_ROW,
    SLOW_SLOT,
    SLOW_START,
    find_byte,
    parse_lines,
)
from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.types import (
    MAX_FEATURE_INDEX,
    Batch,
    OffsetArray,
    ValueArray,
    joined_offsets,
    selected_rows,
)

#: why a line was rejected; a kernel's line code ``k`` is ``REASONS[k - 1]``
REASONS = (
    "bad label",
    "bad token",
    "not a finite value",
    "index 0 or negative",
    "index above max_features",
    "unsorted or duplicate index",
    "not UTF-8",
    "line too long",
    "values too large",
)
#: characters of a rejected line kept in :attr:`Rejected.text`
TEXT_CHARS = 80
#: bytes kept to make that text (4 per character at most, so this cut cannot shorten it)
_HEAD_BYTES = 4 * TEXT_CHARS
_INT32_MAX = (1 << 31) - 1
_LF = 10
#: above this many bytes, slow numbers are converted one by one instead of in a matrix
_SLOW_MATRIX_BYTES = 1 << 22


@dataclass(frozen=True)
class Rejected:
    """A line that produced no row: its 1-based number, why, and its start."""

    line: int
    reason: str
    text: str


@dataclass(frozen=True, eq=False)
class ParsedRows:
    """Rows parsed from whole lines, as CSR arrays, with the lines that were rejected.

    Row ``i`` has features ``indices[indptr[i]:indptr[i + 1]]`` (0-based int32) with
    ``values`` (float64), labels ``labels[label_ptr[i]:label_ptr[i + 1]]`` (float64:
    one for ``+1``, several for ``1,3,7``, none when the line starts with a feature)
    and came from line ``line_numbers[i]`` (1-based, counted over the whole stream).
    """

    indptr: OffsetArray
    indices: npt.NDArray[np.int32]
    values: ValueArray
    label_ptr: OffsetArray
    labels: ValueArray
    line_numbers: OffsetArray
    rejected: list[Rejected]

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.indptr.shape[0] - 1)

    @staticmethod
    def empty() -> ParsedRows:
        """No rows and no rejections."""
        zero = np.zeros(1, dtype=np.int64)
        return ParsedRows(
            zero,
            np.empty(0, dtype=np.int32),
            np.empty(0),
            zero.copy(),
            np.empty(0),
            np.empty(0, dtype=np.int64),
            [],
        )

    @staticmethod
    def concatenate(parts: Sequence[ParsedRows]) -> ParsedRows:
        """The rows and rejections of several results, in order, as one."""
        if not parts:
            return ParsedRows.empty()
        return ParsedRows(
            joined_offsets([p.indptr for p in parts]),
            np.concatenate([p.indices for p in parts]),
            np.concatenate([p.values for p in parts]),
            joined_offsets([p.label_ptr for p in parts]),
            np.concatenate([p.labels for p in parts]),
            np.concatenate([p.line_numbers for p in parts]),
            [r for p in parts for r in p.rejected],
        )

    def slice(self, first: int, stop: int) -> ParsedRows:
        """Rows ``first .. stop - 1``, offsets from 0, without rejections (the rows
        themselves, as they are, when that is all of them)."""
        if first == 0 and stop == self.n_rows:
            return self
        lo, hi = int(self.indptr[first]), int(self.indptr[stop])
        label_lo, label_hi = int(self.label_ptr[first]), int(self.label_ptr[stop])
        return ParsedRows(
            self.indptr[first : stop + 1] - lo,
            self.indices[lo:hi],
            self.values[lo:hi],
            self.label_ptr[first : stop + 1] - label_lo,
            self.labels[label_lo:label_hi],
            self.line_numbers[first:stop],
            [],
        )

    def select(self, keep: npt.NDArray[np.bool_], rejected: list[Rejected]) -> ParsedRows:
        """The rows where ``keep`` is true, with ``rejected`` as the rejections."""
        indptr, values = selected_rows(self.indptr, keep)
        label_ptr, labels = selected_rows(self.label_ptr, keep)
        return ParsedRows(
            indptr,
            self.indices[values],
            self.values[values],
            label_ptr,
            self.labels[labels],
            self.line_numbers[keep],
            rejected,
        )


def _byte_view(buffer: bytes | bytearray | memoryview) -> npt.NDArray[np.uint8]:
    """A read-only uint8 view (so bytes and bytearray input share one compiled kernel)."""
    view = np.frombuffer(buffer, dtype=np.uint8)
    view.flags.writeable = False
    return view


def _line_text(data: npt.NDArray[np.uint8], start: int, end: int) -> str:
    """The first characters of ``data[start:end]``, newline dropped, bad bytes replaced."""
    raw = data[start : min(end, start + _HEAD_BYTES)].tobytes()
    return raw.rstrip(b"\r\n").decode("utf-8", errors="replace")[:TEXT_CHARS]


class SvmlightParser:
    """Parse an svmlight/libsvm stream fed in chunks of any size.

    Parameters
    ----------
    max_features:
        Number of features: a line with a (0-based) index at or above it is rejected.
        ``None`` allows any index the learners hold (0-based, up to 2^31 - 2); so does
        2^31, the largest value.
    max_line_bytes:
        Longest line accepted in bytes, newline excluded (a ``\\r`` before it counts).
        A longer line is rejected when it ends, and only its first bytes are kept
        meanwhile, however many chunks it spans.
    zero_based:
        Whether the file's indices start at 0 (otherwise at 1, as libsvm's do).
    """

    def __init__(
        self,
        *,
        max_features: int | None = None,
        max_line_bytes: int = 1 << 20,
        zero_based: bool = False,
    ) -> None:
        if max_features is not None and not 1 <= max_features <= _INT32_MAX + 1:
            raise InvalidParameterError(
                f"max_features must be None or in [1, 2**31], got {max_features!r}"
            )
        if max_line_bytes < 1:
            raise InvalidParameterError(f"max_line_bytes must be >= 1, got {max_line_bytes!r}")
        self.max_features = max_features
        self.max_line_bytes = max_line_bytes
        self.zero_based = zero_based
        self._max_index = (
            MAX_FEATURE_INDEX if max_features is None else min(max_features - 1, MAX_FEATURE_INDEX)
        )
        self._shift = 0 if zero_based else 1
        self._lines = 0  # complete lines read so far
        self._carry = bytearray()  # the start of a line whose newline has not come yet
        # the start of a line found too long: the rest is skipped up to its newline
        self._overlong: bytearray | None = None

    @property
    def lines_seen(self) -> int:
        """Complete lines read so far: rows, rejected, blank and comment lines alike."""
        return self._lines

    def feed(self, chunk: bytes) -> ParsedRows:
        """Parse every line that ``chunk`` completes; keep (a copy of) the rest.

        ``chunk`` may be any bytes-like object; it is not used after the call returns.
        """
        data = _byte_view(chunk)
        start = 0
        ended: list[Rejected] = []  # a too long line that ends in this chunk
        if self._overlong is not None:
            newline = find_byte(data, _LF, 0)
            line_end = newline if newline >= 0 else data.shape[0]
            self._overlong += data[: min(line_end, _HEAD_BYTES - len(self._overlong))].data
            if newline < 0:
                return ParsedRows.empty()
            ended.append(self._end_overlong())
            start = newline + 1
        if self._carry and find_byte(data, _LF, start) >= 0:
            data, start = _byte_view(self._carry + data[start:].data), 0
            self._carry = bytearray()
        elif self._carry:
            self._hold(data[start:])
            return replace(ParsedRows.empty(), rejected=ended)
        parsed, consumed = self._parse(data[start:])
        self._hold(data[start + consumed :])
        return replace(parsed, rejected=ended + parsed.rejected) if ended else parsed

    def parse_all(self, text: bytes) -> ParsedRows:
        """Every line of a whole text (the last need not end with a newline) in one
        compiled call: :meth:`feed` and :meth:`finish` of a fresh parser, faster for a
        short text. Only for a parser that has been fed nothing.

        >>> SvmlightParser().parse_all(b"+1 1:0.5\\n-1 2:1").indices.tolist()
        [0, 1]
        """
        if self._lines or self._carry or self._overlong is not None:
            raise StateError("parse_all needs a parser that has been fed nothing")
        if text[-1:] not in (b"", b"\n"):
            text = bytes(text) + b"\n"
        return self._parse(_byte_view(text))[0]

    def finish(self) -> ParsedRows:
        """Parse the last line when the stream did not end with a newline."""
        if self._overlong is not None:
            return replace(ParsedRows.empty(), rejected=[self._end_overlong()])
        if not self._carry:
            return ParsedRows.empty()
        joined = self._carry + b"\n"
        self._carry = bytearray()
        return self._parse(_byte_view(joined))[0]

    def _hold(self, part: npt.NDArray[np.uint8]) -> None:
        """Keep ``part`` (no newline) for later, or drop the line if it got too long."""
        if len(self._carry) + part.shape[0] <= self.max_line_bytes:
            self._carry += part.data
            return
        self._overlong = (self._carry + part[:_HEAD_BYTES].data)[:_HEAD_BYTES]
        self._carry = bytearray()

    def _end_overlong(self) -> Rejected:
        """The rejection of the too long line that just ended."""
        head = self._overlong or bytearray()
        self._overlong = None
        self._lines += 1
        text = _line_text(_byte_view(head), 0, len(head))
        return Rejected(self._lines, REASONS[LINE_TOO_LONG - 1], text)

    def _parse(self, data: npt.NDArray[np.uint8]) -> tuple[ParsedRows, int]:
        """Rows of the complete lines of ``data`` and the number of bytes they span."""
        (consumed, n_lines, indptr, indices, values, label_ptr, labels, row_line, rejects, slow) = (
            parse_lines(data, self._shift, self._max_index, self.max_line_bytes)
        )
        first_line = self._lines + 1
        self._lines += int(n_lines)
        rejected = [
            Rejected(first_line + int(line), REASONS[int(code) - 1], _line_text(data, start, end))
            for line, code, start, end in rejects.tolist()
        ]
        rows = ParsedRows(
            indptr, indices, values, label_ptr, labels, row_line + first_line, rejected
        )
        if slow.shape[0]:  # the kernel checked the norms of the rows it converted whole
            rows = _finish_slow_numbers(rows, data, slow, first_line)
        return rows, int(consumed)


def _slow_values(data: npt.NDArray[np.uint8], starts: OffsetArray, ends: OffsetArray) -> ValueArray:
    """float() of every ``data[start:end]``, all at once when the tokens are short."""
    lengths = ends - starts
    width = int(lengths.max())
    if width * starts.shape[0] > _SLOW_MATRIX_BYTES:
        return np.array([float(data[s:e].tobytes()) for s, e in zip(starts, ends, strict=True)])
    columns = np.arange(width)
    matrix = data[np.minimum(starts[:, None] + columns, data.shape[0] - 1)]
    matrix[columns >= lengths[:, None]] = 0  # NUL-padded, as numpy's bytes strings are
    tokens = np.ascontiguousarray(matrix).view(f"S{width}").ravel()
    with np.errstate(over="ignore"):  # an overflow is an infinity, rejected by the caller
        return tokens.astype(np.float64)  # numpy converts bytes exactly as float() does


def _finish_slow_numbers(
    rows: ParsedRows, data: npt.NDArray[np.uint8], slow: npt.NDArray[np.int64], first_line: int
) -> ParsedRows:
    """Fill in the numbers the kernel left; reject the rows where one overflows, then
    those where the squares of the values add up to more than ``MAX_ROW_SQNORM``
    (``values too large``: the kernel checks only the rows it converted whole)."""
    converted = _slow_values(data, slow[:, SLOW_START], slow[:, SLOW_END])
    slots = slow[:, SLOW_SLOT]
    in_values = slots >= 0
    rows.values[slots[in_values]] = converted[in_values]
    rows.labels[-slots[~in_values] - 1] = converted[~in_values]
    overflow = ~np.isfinite(converted)
    bad_rows: dict[int, int] = {}  # row -> code, the first overflow of the row wins
    for row, is_value in zip(
        slow[overflow, SLOW_ROW].tolist(), in_values[overflow].tolist(), strict=True
    ):
        bad_rows.setdefault(row, LINE_NOT_FINITE if is_value else LINE_BAD_LABEL)
    completed = np.setdiff1d(slow[:, SLOW_ROW], list(bad_rows))
    sqnorms = sqnorms_of_rows(rows.indptr, rows.values, completed)
    for row in completed[~(sqnorms <= MAX_ROW_SQNORM)].tolist():
        bad_rows.setdefault(row, LINE_NORM_OVERFLOW)
    if not bad_rows:
        return rows
    return _reject_rows(rows, data, bad_rows, first_line)


def _reject_rows(
    rows: ParsedRows, data: npt.NDArray[np.uint8], bad_rows: dict[int, int], first_line: int
) -> ParsedRows:
    """``rows`` without the rows of ``bad_rows`` (row -> line code), each rejected with
    the start of its line in ``data`` (whose first line is ``first_line``)."""
    keep = np.ones(rows.n_rows, dtype=bool)
    keep[list(bad_rows)] = False
    newlines = np.flatnonzero(data == _LF)
    more = []
    for row, code in bad_rows.items():
        line = int(rows.line_numbers[row])
        local = line - first_line
        start = 0 if local == 0 else int(newlines[local - 1]) + 1
        more.append(Rejected(line, REASONS[code - 1], _line_text(data, start, newlines[local])))
    rejected = sorted([*rows.rejected, *more], key=lambda r: r.line)
    return rows.select(keep, rejected)


def _label_text(labels: ValueArray) -> str:
    """Labels as a line would start: ``2``, ``1.5``, ``1,3`` (the raw line is gone)."""
    texts = (repr(x).removesuffix(".0") for x in labels.tolist())
    return ",".join(texts)[:TEXT_CHARS]


def binary_batch(rows: ParsedRows) -> tuple[Batch, list[Rejected]]:
    """Rows with exactly one label in {+1, -1, 0} as a :class:`Batch`, and every rejection.

    Labels become int8 +1/-1, with 0 read as -1. Other rows (no label, several labels,
    any other value) are rejected as ``"bad label"`` with their line numbers; their
    ``text`` is the row's labels as parsed, since the raw line is no longer at hand.
    The list holds these and ``rows.rejected``, in line order.

    >>> rows = SvmlightParser().feed(b"+1 1:1\\n0 2:1\\n2 1:1\\n-1 3:1\\n")
    >>> batch, rejected = binary_batch(rows)
    >>> batch.labels.tolist(), batch.indptr.tolist()
    ([1, -1, -1], [0, 1, 2, 3])
    >>> rejected
    [Rejected(line=3, reason='bad label', text='2')]
    """
    counts = np.diff(rows.label_ptr)
    first = np.zeros(rows.n_rows)
    has_label = counts > 0
    first[has_label] = rows.labels[rows.label_ptr[:-1][has_label]]
    ok = (counts == 1) & ((first == 1.0) | (first == -1.0) | (first == 0.0))
    labels = np.where(first[ok] == 1.0, 1, -1).astype(np.int8)
    if ok.all():
        return Batch.from_csr(rows.indptr, rows.indices, rows.values, labels), rows.rejected
    bad = [
        Rejected(
            int(rows.line_numbers[i]),
            REASONS[LINE_BAD_LABEL - 1],
            _label_text(rows.labels[rows.label_ptr[i] : rows.label_ptr[i + 1]]),
        )
        for i in np.flatnonzero(~ok).tolist()
    ]
    kept = rows.select(ok, [])
    batch = Batch.from_csr(kept.indptr, kept.indices, kept.values, labels)
    return batch, sorted([*rows.rejected, *bad], key=lambda r: r.line)
