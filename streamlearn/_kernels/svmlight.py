"""Svmlight/libsvm text to CSR arrays in one pass over a chunk of bytes.

:func:`parse_lines` reads every complete line (ending in ``\\n``) of a ``uint8`` array
and returns the good rows as CSR arrays, one code per rejected line and the positions of
the rare numbers it could not convert exactly (the caller finishes those with
``float()``). Line outcomes are coded as ints: ``LINE_*`` below, where code ``k > 0``
is reason ``k - 1`` of the parser's list of reasons.

Numbers are converted with Clinger's exact fast path: an integer mantissa of at most
2**53 and a decimal exponent of at most 22 in size give ``mantissa * 10**e`` or
``mantissa / 10**-e``, each one correctly rounded IEEE operation on exact operands, so
the result is the float that ``strtod`` gives. Every other number (more than about 16
significant digits, or a large exponent) is left to the caller.

Every line handed to the kernels ends with a newline, which no scan goes past: the hot
loops need no bounds checks, and byte reads use unsigned indices (see :func:`_at`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streamlearn._kernels._jit import kernel
from streamlearn._kernels.rows import sum_of_squares, within_norm_bound

LINE_BLANK = -1  # blank or only a comment: no row, no rejection
LINE_OK = 0
LINE_BAD_LABEL = 1
LINE_BAD_TOKEN = 2
LINE_NOT_FINITE = 3
LINE_INDEX_NOT_POSITIVE = 4
LINE_INDEX_ABOVE_MAX = 5
LINE_UNSORTED = 6
LINE_NOT_UTF8 = 7
LINE_TOO_LONG = 8
#: the squares of a row's values add up to more than ``rows.MAX_ROW_SQNORM``; found by
#: the kernel when it converted every number of the row (its label included), else by
#: the caller once it has converted the rest (see ``streamlearn.parse.svmlight``)
LINE_NORM_OVERFLOW = 9

NUMBER_EXACT, NUMBER_SLOW, NUMBER_SYNTAX, NUMBER_NOT_FINITE = 0, 1, 2, 3

#: columns of the ``slow`` array: where the number is, where its value goes, its row
SLOW_START, SLOW_END, SLOW_SLOT, SLOW_ROW = 0, 1, 2, 3

#: 10**0 .. 10**22, all exactly representable as float64 (int to float rounds exactly)
_POW10 = np.array([float(10**k) for k in range(23)])
_MAX_EXACT_MANTISSA = 1 << 53
#: digits stop accumulating above this (the number then goes to the slow path)
_MANTISSA_CAP = 100_000_000_000_000_000
_EXPONENT_CAP = 1_000_000
#: an index above this saturates: it is out of int32 range anyway
_INDEX_CAP = 1 << 40
#: a row whose values are all below this cannot pass the norm bound (1e50): it would
#: need 1e20 of them, more than a line can hold. Short numbers (15 digits, no exponent)
#: always are, so only the numbers of the full scanner are compared with it
_SMALL_VALUE = 1e15

_SPACE, _TAB, _LF, _VT, _FF, _CR = 32, 9, 10, 11, 12, 13
_HASH, _PLUS, _COMMA, _MINUS, _DOT, _COLON, _ZERO, _ONE = 35, 43, 44, 45, 46, 58, 48, 49
#: whitespace inside a line: space and bytes 9, 11, 12, 13 (as bytes.split() sees it)
_SPACE_NOT_LF = np.zeros(256, dtype=np.bool_)
_SPACE_NOT_LF[[_SPACE, _TAB, _VT, _FF, _CR]] = True
#: bytes that end a token: whitespace, the newline and the comment sign
_TOKEN_END = _SPACE_NOT_LF.copy()
_TOKEN_END[[_LF, _HASH]] = True
#: the value of a decimal digit, 255 for any other byte
_DIGIT = np.full(256, 255, dtype=np.uint8)
_DIGIT[_ZERO : _ZERO + 10] = np.arange(10)


@kernel(inline=True)
def _int64_zero() -> int:
    """0 as an int64 value: a counter that starts at a literal 0 makes numba type its
    callees with ``Literal[int](0)`` first and compile them twice."""
    return int(np.int64(0))


@kernel(inline=True)
def _at(data: np.ndarray, p: int) -> int:
    """``data[p]`` for ``p >= 0``: an unsigned index skips numba's negative-index fix-up,
    which otherwise doubles the cost of every byte read."""
    return data[np.uint64(p)]


@kernel()
def _word_end(data: np.ndarray, p: int, end: int) -> int:
    """End of ``nan``, ``inf`` or ``infinity`` (any case) at ``p``, or -1."""
    if p + 3 > end:
        return -1
    a, b, c = _at(data, p) | 32, _at(data, p + 1) | 32, _at(data, p + 2) | 32
    if a == 110 and b == 97 and c == 110:  # nan
        return p + 3
    if not (a == 105 and b == 110 and c == 102):  # inf
        return -1
    if (
        p + 8 <= end
        and _at(data, p + 3) | 32 == 105  # i
        and _at(data, p + 4) | 32 == 110  # n
        and _at(data, p + 5) | 32 == 105  # i
        and _at(data, p + 6) | 32 == 116  # t
        and _at(data, p + 7) | 32 == 121  # y
    ):
        return p + 8
    return p + 3


@kernel()
def scan_number(data: np.ndarray, p: int, end: int) -> tuple[int, float, int]:
    """``(status, value, position after)`` of the decimal number at ``data[p:end]``.

    ``status`` is ``NUMBER_EXACT`` (``value`` is float(token)), ``NUMBER_SLOW`` (valid
    but not exact here: the caller converts the token), ``NUMBER_SYNTAX`` or
    ``NUMBER_NOT_FINITE`` (nan, inf, infinity). The scan stops at the first byte that
    cannot continue the number; the caller checks what follows.
    """
    negative = False
    if p < end and (_at(data, p) == _PLUS or _at(data, p) == _MINUS):
        negative = _at(data, p) == _MINUS
        p += 1
    mantissa = 0
    exponent = 0
    digits = 0
    exact = True
    while p < end:
        d = int(_at(data, p)) - _ZERO
        if d < 0 or d > 9:
            break
        if mantissa < _MANTISSA_CAP:
            mantissa = mantissa * 10 + d
        else:
            exact = False
        digits += 1
        p += 1
    dot = p < end and _at(data, p) == _DOT
    if dot:
        p += 1
        while p < end:
            d = int(_at(data, p)) - _ZERO
            if d < 0 or d > 9:
                break
            if mantissa < _MANTISSA_CAP:
                mantissa = mantissa * 10 + d
                exponent -= 1
            else:
                exact = False
            digits += 1
            p += 1
    if digits == 0:
        if dot:
            return NUMBER_SYNTAX, 0.0, p
        q = _word_end(data, p, end)
        if q < 0:
            return NUMBER_SYNTAX, 0.0, p
        return NUMBER_NOT_FINITE, 0.0, q
    if p < end and _at(data, p) | 32 == 101:  # e or E
        p += 1
        negative_exponent = False
        if p < end and (_at(data, p) == _PLUS or _at(data, p) == _MINUS):
            negative_exponent = _at(data, p) == _MINUS
            p += 1
        written = 0
        e = 0
        while p < end:
            d = int(_at(data, p)) - _ZERO
            if d < 0 or d > 9:
                break
            if e < _EXPONENT_CAP:
                e = e * 10 + d
            written += 1
            p += 1
        if written == 0:
            return NUMBER_SYNTAX, 0.0, p
        exponent += -e if negative_exponent else e
    if mantissa == 0 and exact:
        return NUMBER_EXACT, -0.0 if negative else 0.0, p
    if not exact or mantissa > _MAX_EXACT_MANTISSA or exponent > 22 or exponent < -22:
        return NUMBER_SLOW, 0.0, p
    value = float(mantissa)
    if exponent > 0:
        value *= _POW10[exponent]
    elif exponent < 0:
        value /= _POW10[-exponent]
    return NUMBER_EXACT, -value if negative else value, p


@kernel()
def _scan_index(data: np.ndarray, p: int, end: int) -> tuple[bool, int, int]:
    """``(ok, index, position after)`` of an optionally signed integer at ``p``."""
    negative = False
    if p < end and (_at(data, p) == _PLUS or _at(data, p) == _MINUS):
        negative = _at(data, p) == _MINUS
        p += 1
    index = 0
    digits = 0
    while p < end:
        d = int(_at(data, p)) - _ZERO
        if d < 0 or d > 9:
            break
        if index < _INDEX_CAP:
            index = index * 10 + d
        digits += 1
        p += 1
    return digits > 0, -index if negative else index, p


@kernel()
def valid_utf8(data: np.ndarray, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` is strict UTF-8 (as Python's decoder sees it)."""
    p = start
    while p < end:
        c = _at(data, p)
        if c < 0x80:
            p += 1
            continue
        low, high = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            follow = 1
        elif 0xE0 <= c <= 0xEF:
            follow = 2
            if c == 0xE0:
                low = 0xA0
            elif c == 0xED:  # no surrogates
                high = 0x9F
        elif 0xF0 <= c <= 0xF4:
            follow = 3
            if c == 0xF0:
                low = 0x90
            elif c == 0xF4:  # nothing above U+10FFFF
                high = 0x8F
        else:
            return False
        if p + follow >= end:
            return False
        if _at(data, p + 1) < low or _at(data, p + 1) > high:
            return False
        for k in range(2, follow + 1):
            if _at(data, p + k) < 0x80 or _at(data, p + k) > 0xBF:
                return False
        p += follow + 1
    return True


@kernel()
def _comment_end(data: np.ndarray, p: int) -> tuple[int, bool]:
    """``(position of the newline, whether the bytes before it are UTF-8)`` from ``p``."""
    start = p
    high = 0
    while _at(data, p) != _LF:
        high |= _at(data, p)
        p += 1
    return p, high < 0x80 or valid_utf8(data, start, p)


@kernel()
def _label_list(
    data: np.ndarray, p: int, end: int, row: int, labels: np.ndarray, slow: np.ndarray,
    n_labels: int, n_slow: int,
) -> tuple[int, int, int, int]:  # fmt: skip
    """``(code, position after, n_labels, n_slow)`` of the labels ``1`` or ``1,3,7`` at
    ``p``; none when the first token is a feature (it holds a colon)."""
    q = p
    while not (_TOKEN_END[_at(data, q)] or _at(data, q) == _COLON):
        q += 1
    if _at(data, q) == _COLON:
        return LINE_OK, p, n_labels, n_slow
    while True:
        status, value, q = scan_number(data, p, end)
        c = _at(data, q)
        if status >= NUMBER_SYNTAX or not (c == _COMMA or _TOKEN_END[c]):
            return LINE_BAD_LABEL, q, n_labels, n_slow
        labels[n_labels] = value
        if status == NUMBER_SLOW:
            slow[n_slow, SLOW_START] = p
            slow[n_slow, SLOW_END] = q
            slow[n_slow, SLOW_SLOT] = -n_labels - 1
            slow[n_slow, SLOW_ROW] = row
            n_slow += 1
        n_labels += 1
        if c != _COMMA:
            return LINE_OK, q, n_labels, n_slow
        p = q + 1


@kernel()
def _short_decimal(data: np.ndarray, p: int) -> tuple[bool, float, int]:
    """``(ok, value, position after)`` of ``[+-]digits[.digits]`` with 1 to 15 digits.

    Such a number is the mantissa (below 10**15, so exact) over a power of ten up to
    10**15: one correctly rounded division. ``ok`` is False for any other shape.
    """
    c = _at(data, p)
    negative = c == _MINUS
    if negative or c == _PLUS:
        p += 1
    mantissa = 0
    digits = 0
    d = _DIGIT[_at(data, p)]
    while d < 10:
        mantissa = mantissa * 10 + d  # wraps past 18 digits, but is then unused
        digits += 1
        p += 1
        d = _DIGIT[_at(data, p)]
    fraction = 0
    if _at(data, p) == _DOT:
        p += 1
        d = _DIGIT[_at(data, p)]
        while d < 10:
            mantissa = mantissa * 10 + d
            fraction += 1
            p += 1
            d = _DIGIT[_at(data, p)]
    if digits + fraction == 0 or digits + fraction > 15:
        return False, 0.0, p
    value = float(mantissa)
    if fraction:
        value /= _POW10[np.uint64(fraction)]
    return True, -value if negative else value, p


@kernel()
def _parse_rows(
    data: np.ndarray, n_lines: int, end: int, shift: int, max_index: int,
    max_line_bytes: int, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray,
    label_ptr: np.ndarray, labels: np.ndarray, row_line: np.ndarray, rejects: np.ndarray,
    slow: np.ndarray,
) -> tuple[int, int, int, int, int]:  # fmt: skip
    """Parse ``n_lines`` lines from the start of ``data`` (the last ends before ``end``)
    into the arrays; returns the counts ``(rows, nnz, n_labels, n_slow, n_rejects)``.

    One loop over all lines: a call per line costs as much as parsing its label. Short
    plain numbers (``1``, ``-0.25``) take :func:`_short_decimal`; anything else goes
    through :func:`scan_number`. A rejected line leaves nothing behind: the counts
    only move when a row is complete. A row whose numbers were all converted here, and
    whose values have squares that add up to more than the bound, is rejected
    (``LINE_NORM_OVERFLOW``); the caller checks the rows that hold a number it converts.
    """
    rows = nnz = n_labels = n_slow = n_rejects = _int64_zero()
    start = _int64_zero()
    for line in range(n_lines):
        k, k_labels, k_slow = nnz, n_labels, n_slow
        p = start
        while _SPACE_NOT_LF[_at(data, p)]:
            p += 1
        c = _at(data, p)
        code = LINE_BLANK if c in (_LF, _HASH) else LINE_OK
        if code == LINE_OK:
            ok, value, q = _short_decimal(data, p)
            if ok and _TOKEN_END[_at(data, q)]:  # the common single label
                labels[np.uint64(k_labels)] = value
                k_labels += 1
                p = q
            else:
                code, p, k_labels, k_slow = _label_list(
                    data, p, end, rows, labels, slow, k_labels, k_slow
                )
        previous = -1
        first = True
        large = False  # whether a value reaches _SMALL_VALUE: the norm must be checked
        while code == LINE_OK:
            while _SPACE_NOT_LF[_at(data, p)]:
                p += 1
            c = _at(data, p)
            if c in (_LF, _HASH):
                break
            index = _DIGIT[c]
            if index < 10:
                p += 1
                d = _DIGIT[_at(data, p)]
                while d < 10:
                    if index < _INDEX_CAP:
                        index = index * 10 + d
                    p += 1
                    d = _DIGIT[_at(data, p)]
            elif (
                first
                and c == 113  # q
                and _at(data, p + 1) == 105  # i
                and _at(data, p + 2) == 100  # d
                and _at(data, p + 3) == _COLON
            ):
                ok, _, p = _scan_index(data, p + 4, end)  # qid:N, ignored
                if not ok or not _TOKEN_END[_at(data, p)]:
                    code = LINE_BAD_TOKEN
                    break
                first = False
                continue
            else:
                ok, index, p = _scan_index(data, p, end)
                if not ok:
                    code = LINE_BAD_TOKEN
                    break
            first = False
            if _at(data, p) != _COLON:
                code = LINE_BAD_TOKEN
                break
            value_start = p + 1
            status = NUMBER_EXACT
            if _at(data, value_start) == _ONE and _TOKEN_END[_at(data, value_start + 1)]:
                ok, value, p = True, 1.0, value_start + 1  # a binary feature
            else:
                ok, value, p = _short_decimal(data, value_start)
            if not (ok and _TOKEN_END[_at(data, p)]):
                status, value, p = scan_number(data, value_start, end)
                if status == NUMBER_SYNTAX or not _TOKEN_END[_at(data, p)]:
                    code = LINE_BAD_TOKEN
                    break
                if status == NUMBER_NOT_FINITE:
                    code = LINE_NOT_FINITE
                    break
                large |= abs(value) >= _SMALL_VALUE
            index -= shift
            if index < 0:
                code = LINE_INDEX_NOT_POSITIVE
                break
            if index > max_index:
                code = LINE_INDEX_ABOVE_MAX
                break
            if index <= previous:
                code = LINE_UNSORTED
                break
            previous = index
            indices[np.uint64(k)] = index
            values[np.uint64(k)] = value
            if status == NUMBER_SLOW:
                slow[k_slow, SLOW_START] = value_start
                slow[k_slow, SLOW_END] = p
                slow[k_slow, SLOW_SLOT] = k
                slow[k_slow, SLOW_ROW] = rows
                k_slow += 1
            k += 1
        if code <= LINE_OK:  # what is left is blank or a comment: it must be UTF-8
            stop, utf8 = _comment_end(data, p)
            if not utf8:
                code = LINE_NOT_UTF8
        else:
            stop = p
            while _at(data, stop) != _LF:
                stop += 1
        if stop - start > max_line_bytes:
            code = LINE_TOO_LONG
        elif code > LINE_OK and not valid_utf8(data, start, stop):
            code = LINE_NOT_UTF8
        elif (
            # with a number left to the caller the caller checks the norm, after it has
            # checked that number for overflow: a reason that is found first
            code == LINE_OK
            and large
            and k_slow == n_slow
            and not within_norm_bound(sum_of_squares(values, nnz, k))
        ):
            code = LINE_NORM_OVERFLOW
        if code == LINE_OK:
            nnz, n_labels, n_slow = k, k_labels, k_slow
            row_line[rows] = line
            rows += 1
            indptr[rows] = nnz
            label_ptr[rows] = n_labels
        elif code > LINE_OK:
            rejects[n_rejects, 0] = line
            rejects[n_rejects, 1] = code
            rejects[n_rejects, 2] = start
            rejects[n_rejects, 3] = stop
            n_rejects += 1
        start = stop + 1
    return rows, nnz, n_labels, n_slow, n_rejects


@kernel()
def find_byte(data: np.ndarray, byte: int, start: int) -> int:
    """Position of the first ``byte`` at or after ``start``, or -1."""
    for p in range(start, data.shape[0]):
        if _at(data, p) == byte:
            return p
    return -1


@kernel(allocates=True, releases_gil=True)
def parse_lines(
    data: np.ndarray, shift: int, max_index: int, max_line_bytes: int
) -> tuple[Any, ...]:
    """Parse every complete line of ``data`` (uint8); bytes after the last newline are
    left alone.

    ``shift`` is subtracted from each file index (1 for 1-based files); indices that
    end up above ``max_index`` are rejected. Returns, in order: the end of the last
    complete line (bytes consumed), the number of lines read, ``indptr``, ``indices``
    (int32), ``values``, ``label_ptr``, ``labels``, ``row_line`` (0-based line of each
    row in ``data``), ``rejects`` (int64 rows of line, code, start, end) and ``slow``
    (int64 rows of start, end, slot, row: ``slot >= 0`` is a place in ``values``,
    ``slot < 0`` is place ``-slot - 1`` in ``labels``).
    """
    consumed = data.shape[0]
    while consumed > 0 and _at(data, consumed - 1) != _LF:
        consumed -= 1
    n_lines = _int64_zero()
    n_colons = _int64_zero()
    n_commas = _int64_zero()
    for p in range(consumed):  # a cheap first pass that sizes the outputs
        c = _at(data, p)
        n_lines += c == _LF
        n_colons += c == _COLON
        n_commas += c == _COMMA
    indptr = np.empty(n_lines + 1, dtype=np.int64)
    label_ptr = np.empty(n_lines + 1, dtype=np.int64)
    indices = np.empty(n_colons, dtype=np.int32)
    values = np.empty(n_colons, dtype=np.float64)
    labels = np.empty(n_commas + n_lines, dtype=np.float64)
    row_line = np.empty(n_lines, dtype=np.int64)
    rejects = np.empty((n_lines, 4), dtype=np.int64)
    slow = np.empty((n_colons + n_commas + n_lines, 4), dtype=np.int64)
    indptr[0] = 0
    label_ptr[0] = 0
    rows, nnz, n_labels, n_slow, n_rejects = _parse_rows(
        data, n_lines, consumed, shift, max_index, max_line_bytes,
        indptr, indices, values, label_ptr, labels, row_line, rejects, slow,
    )  # fmt: skip
    return (
        consumed,
        n_lines,
        indptr[: rows + 1],
        indices[:nnz],
        values[:nnz],
        label_ptr[: rows + 1],
        labels[:n_labels],
        row_line[:rows],
        rejects[:n_rejects],
        slow[:n_slow],
    )
