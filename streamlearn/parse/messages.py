"""Messages (from Kafka, HTTP or any source) to rows: svmlight text, msgpack or JSON maps.

The format of a message comes from its ``content-type`` header: ``text/svmlight``,
``application/msgpack`` or ``application/json`` (parameters after ``;`` are ignored),
else the decoder's default.

**svmlight**: one or many complete lines, parsed by a fresh :class:`SvmlightParser`
(the last line need not end with a newline). Line numbers count from 1 in each message.

**msgpack**: one example, a map

    {"indices": [int, ...], "values": [float, ...], "label": number}
    {"indices": [int, ...], "values": [float, ...], "labels": [number, ...]}

with 0-based feature indices, strictly increasing, non-negative (and below
``max_features`` when it is set), and as many finite values as indices. ``label`` (one
label: +1/-1 for a binary model, a class for a one-vs-rest one) or ``labels`` (a
non-empty list: the label set of a one-vs-rest model's example, like svmlight's
``1,3,7``) is optional, and only one of them may be given: an example with neither is
one to predict (a row with no labels). An empty ``labels`` list is rejected as
``"bad label"`` (it would read as a request to predict). A batch is
``{"examples": [example, ...]}``. Other keys are ignored. Example ``i`` (from 1) of a
message has line number ``i``. An example that breaks a rule the svmlight parser also
checks is rejected with the parser's reason (:data:`REASONS`); a message that is not
msgpack, or a map that does not follow this schema, is rejected as ``"bad message"``.

Instead of ``indices`` and ``values``, an example may give ``"features": {name: value}``
when the decoder hashes names (``hash_features``): each name goes to index
``stable_hash(name) % hash_features``, as the river adapters put it.

**JSON**: the same maps as msgpack, or a list of them, as JSON text.

**Limits**: no message can make the decoder raise, recurse without bound or hold numbers
a learner cannot take. A JSON text whose arrays and objects nest deeper than
:data:`MAX_JSON_DEPTH` (64; the schema needs 4) is a ``"bad message"`` before it is
parsed, and an integer of more than :data:`MAX_INT_DIGITS` (20) digits is read as a float,
an infinite one beyond float64: then ``"bad label"`` as a label, ``"not a finite value"``
as a value and ``"bad message"`` as an index. msgpack's reader keeps its own limits: at
most 1024 levels (on a stack of its own, without recursion), no declared length beyond
the message's bytes, integers of 64 bits; whatever nests deeper than the schema is a
``"bad message"`` without being walked. An example whose values have squares adding up
to more than ``MAX_ROW_SQNORM`` (1e50, see ``streamlearn._kernels.rows``) is rejected as
``"values too large"``, as the svmlight parser rejects such a line.

>>> import msgpack
>>> decoder = MessageDecoder()
>>> rows = decoder.decode(b"+1 1:0.5 3:2\\n-1 2:1", {})
>>> rows.indices.tolist(), rows.labels.tolist()
([0, 2, 1], [1.0, -1.0])
>>> value = msgpack.packb({"examples": [{"indices": [0, 7], "values": [1, 2.5], "label": -1},
...                                     {"indices": [3], "values": [1.0]}]})
>>> rows = decoder.decode(value, {"content-type": b"application/msgpack"})
>>> rows.indptr.tolist(), rows.indices.tolist(), rows.label_ptr.tolist(), rows.labels.tolist()
([0, 2, 3], [0, 7, 3], [0, 1, 1], [-1.0])
>>> decoder.decode(b"\\xc1", {"content-type": b"application/msgpack"}).rejected
[Rejected(line=1, reason='bad message', text='not msgpack')]
>>> value = msgpack.packb({"indices": [1], "values": [1.0], "labels": [3, 7]})
>>> rows = decoder.decode(value, {"content-type": b"application/msgpack"})
>>> rows.label_ptr.tolist(), rows.labels.tolist()
([0, 2], [3.0, 7.0])
"""

from __future__ import annotations

import itertools
import json
import math
import re
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import cast

import msgpack
import numpy as np
import numpy.typing as npt

from streamlearn._kernels.kafka_records import KEY_LENGTH as KEY_LENGTH
from streamlearn._kernels.kafka_records import KEY_START as KEY_START
from streamlearn._kernels.kafka_records import TYPE_LENGTH as TYPE_LENGTH
from streamlearn._kernels.kafka_records import TYPE_START as TYPE_START
from streamlearn._kernels.kafka_records import VALUE_LENGTH as VALUE_LENGTH
from streamlearn._kernels.kafka_records import VALUE_START as VALUE_START
from streamlearn._kernels.kafka_records import join_values
from streamlearn._kernels.rows import MAX_ROW_SQNORM, row_sqnorms
from streamlearn.errors import InvalidParameterError
from streamlearn.parse.features import stable_hash
from streamlearn.parse.svmlight import REASONS, TEXT_CHARS, ParsedRows, Rejected, SvmlightParser
from streamlearn.types import MAX_FEATURE_INDEX, offsets

#: the reason of a message that is not msgpack or does not follow the schema
BAD_MESSAGE = "bad message"
#: the reason of a line whose message has no key, where each key has a model of its own
NO_KEY = "no key"
#: the deepest that arrays and objects may nest in a JSON message: far more than the
#: schema needs, far less than the recursion of Python's JSON reader can take
MAX_JSON_DEPTH = 64
#: digits (sign excluded) of the longest JSON integer kept exact: msgpack's largest
#: integers have 20; a longer one is read as a float
MAX_INT_DIGITS = 20
#: the formats a message can have, by name, and the content types that select them
FORMATS = ("svmlight", "msgpack", "json")
CONTENT_TYPES = {
    "text/svmlight": "svmlight",
    "text/x-svmlight": "svmlight",
    "text/plain": "svmlight",
    "application/msgpack": "msgpack",
    "application/x-msgpack": "msgpack",
    "application/vnd.msgpack": "msgpack",
    "application/json": "json",
}
#: rows of the span array of a columnar batch of messages (:func:`pack_messages`): where
#: each message's value, key and ``content-type`` header value start in the data, and
#: their lengths (-1 for none)
SPAN_ROWS = 6
#: per-message format codes of :meth:`MessageDecoder.formats_of`
FORMAT_SVMLIGHT, FORMAT_MSGPACK, FORMAT_JSON, FORMAT_UNKNOWN = 0, 1, 2, -1
_FORMAT_CODES = {"svmlight": FORMAT_SVMLIGHT, "msgpack": FORMAT_MSGPACK, "json": FORMAT_JSON}
_FORMAT_CACHE_SIZE = 256
_LF = 10
_BAD_LABEL, _NOT_FINITE, _NEGATIVE, _ABOVE_MAX, _UNSORTED, _TOO_LARGE = (
    REASONS[0],
    REASONS[2],
    REASONS[3],
    REASONS[4],
    REASONS[5],
    REASONS[8],
)
#: a JSON string, escapes included: what the depth count skips
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPENING, _CLOSING = np.zeros(128, dtype=np.int8), np.zeros(128, dtype=np.int8)
_OPENING[[ord("["), ord("{")]] = 1
_CLOSING[[ord("]"), ord("}")]] = 1
_repr = reprlib.Repr()
_repr.maxlist = 6
_repr.maxdict = 4
_repr.maxstring = 20
_repr.maxother = 20


class _Row:
    """One decoded msgpack example (arrays checked) and its labels (none: to predict)."""

    __slots__ = ("indices", "labels", "values")

    def __init__(
        self,
        indices: npt.NDArray[np.int64],
        values: npt.NDArray[np.float64],
        labels: list[float],
    ) -> None:
        self.indices = indices
        self.values = values
        self.labels = labels


class MessageDecoder:
    """Decode message values to :class:`ParsedRows` by their ``content-type`` header.

    Parameters
    ----------
    default_format:
        ``"svmlight"`` or ``"msgpack"``: the format of a message without the header.
    max_features, max_line_bytes, zero_based:
        As for :class:`SvmlightParser`; ``max_features`` bounds msgpack and JSON indices
        too (their indices are always 0-based).
    hash_features:
        Where examples given by feature name (``"features": {name: value}``) put each
        name: index ``stable_hash(name) % hash_features``, as the river adapters do with
        ``n_features``. None (default): such examples are rejected.
    """

    def __init__(
        self,
        *,
        default_format: str = "svmlight",
        max_features: int | None = None,
        max_line_bytes: int = 1 << 20,
        zero_based: bool = False,
        hash_features: int | None = None,
    ) -> None:
        if default_format not in FORMATS:
            raise InvalidParameterError(
                f"default_format must be one of {FORMATS}, got {default_format!r}"
            )
        SvmlightParser(  # validates the options once, here
            max_features=max_features, max_line_bytes=max_line_bytes, zero_based=zero_based
        )
        self.default_format = default_format
        self.max_features = max_features
        self.max_line_bytes = max_line_bytes
        self.zero_based = zero_based
        self._max_index = (
            MAX_FEATURE_INDEX if max_features is None else min(max_features - 1, MAX_FEATURE_INDEX)
        )
        if hash_features is not None and not 1 <= hash_features <= self._max_index + 1:
            raise InvalidParameterError(
                f"hash_features must be in [1, {self._max_index + 1}], got {hash_features!r}"
            )
        self.hash_features = hash_features
        self._format_cache: dict[bytes, int] = {}

    def format_of(self, headers: Mapping[str, bytes]) -> str | None:
        """The format named by the headers, the default without one, None if unknown."""
        content_type = headers.get("content-type")
        if content_type is None:
            return self.default_format
        name = content_type.decode("ascii", errors="replace").split(";")[0].strip().lower()
        return CONTENT_TYPES.get(name)

    def decode(self, value: bytes, headers: Mapping[str, bytes]) -> ParsedRows:
        """The rows of one message and its rejected lines or examples."""
        message_format = self.format_of(headers)
        if message_format is None:
            text = headers.get("content-type", b"").decode("utf-8", errors="replace")
            return _rejected_message(f"unknown content-type {text}")
        return self.decode_as(value, message_format)

    def decode_as(self, value: bytes, message_format: str) -> ParsedRows:
        """The rows of one message in ``message_format`` (one of :data:`FORMATS`)."""
        if message_format == "svmlight":
            return self.decode_svmlight(value)
        if message_format == "msgpack":
            return self.decode_msgpack(value)
        return self.decode_json(value)

    def decode_svmlight(self, value: bytes) -> ParsedRows:
        """Rows of svmlight lines, numbered from 1 in this message."""
        parser = SvmlightParser(
            max_features=self.max_features,
            max_line_bytes=self.max_line_bytes,
            zero_based=self.zero_based,
        )
        return parser.parse_all(value)

    def decode_many(
        self, messages: Sequence[tuple[bytes, Mapping[str, bytes]]]
    ) -> tuple[ParsedRows, list[int]]:
        """The rows of several messages as one result, and where each message starts.

        Line numbers count from 1 over all the messages, in order; the second result
        holds, for each message, the line number of its first line (a message's lines
        are its svmlight lines, or its msgpack examples, at least one).
        Consecutive svmlight messages are parsed together, much faster than one by one.

        >>> pairs = [(b"1 1:1\\n-1 2:1\\n", {}), (b"1 3:1", {})]
        >>> rows, starts = MessageDecoder().decode_many(pairs)
        >>> rows.line_numbers.tolist(), starts
        ([1, 2, 3], [1, 3])
        """
        data, spans = pack_messages(
            [value for value, _ in messages],
            [None] * len(messages),
            [headers.get("content-type") for _, headers in messages],
        )
        rows, first_lines = self.decode_columns(data, spans)
        return rows, first_lines().tolist()

    def formats_of(
        self, data: npt.NDArray[np.uint8], spans: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int8]:
        """Per message of a columnar batch, its format: ``FORMAT_*`` codes."""
        type_length = spans[TYPE_LENGTH]
        codes = np.full(type_length.shape[0], _FORMAT_CODES[self.default_format], dtype=np.int8)
        typed = np.flatnonzero(type_length >= 0)
        if typed.shape[0] == 0:
            return codes
        cache = self._format_cache
        type_start = spans[TYPE_START]
        for i in typed.tolist():
            start = int(type_start[i])
            raw = data[start : start + int(type_length[i])].tobytes()
            code = cache.get(raw)
            if code is None:
                name = self.format_of({"content-type": raw})
                code = FORMAT_UNKNOWN if name is None else _FORMAT_CODES[name]
                if len(cache) < _FORMAT_CACHE_SIZE:
                    cache[raw] = code
            codes[i] = code
        return codes

    def decode_columns(
        self, data: npt.NDArray[np.uint8], spans: npt.NDArray[np.int64]
    ) -> tuple[ParsedRows, FirstLines]:
        """:meth:`decode_many` of a columnar batch (:func:`pack_messages`): the rows and
        each message's first line number (worked out when asked: only rejections and
        predictions need it).

        The values of each run of consecutive svmlight messages are joined (a newline
        ending each) by a compiled kernel and parsed with one parser call; only msgpack
        messages, JSON ones and messages of an unknown content type are decoded one by
        one.

        >>> data, spans = pack_messages([b"1 1:1\\n-1 2:1", b"1 3:1"], [None, b"k"], [None, None])
        >>> rows, first_lines = MessageDecoder().decode_columns(data, spans)
        >>> rows.line_numbers.tolist(), first_lines().tolist()
        ([1, 2, 3], [1, 3])
        """
        n = spans.shape[1]
        first_lines = FirstLines(n)
        if n == 0:
            return ParsedRows.empty(), first_lines
        codes = self.formats_of(data, spans)
        svmlight = codes == FORMAT_SVMLIGHT
        # run boundaries: where the svmlight flag changes, plus the ends
        edges = np.flatnonzero(svmlight[1:] != svmlight[:-1]) + 1
        bounds = [0, *edges.tolist(), n]
        parts: list[ParsedRows] = []
        lines = 0  # lines before the current message
        for first, last in itertools.pairwise(bounds):
            if svmlight[first]:
                joined, ends = joined_values(data, spans, first, last)
                rows, run_lines = self._parse_joined(joined)
                first_lines.add_run(first, lines, joined, ends)
                parts.append(_shifted(rows, lines))
                lines += run_lines
                continue
            for i in range(first, last):
                first_lines.add_one(i, lines)
                rows = self._decode_one(data, spans, i, int(codes[i]))
                parts.append(_shifted(rows, lines))
                lines += max(_example_count(rows), 1)
        rows = parts[0] if len(parts) == 1 else ParsedRows.concatenate(parts)
        return rows, first_lines

    def _parse_joined(self, joined: npt.NDArray[np.uint8]) -> tuple[ParsedRows, int]:
        """Rows of newline-ended svmlight lines, and the number of lines."""
        parser = SvmlightParser(
            max_features=self.max_features,
            max_line_bytes=self.max_line_bytes,
            zero_based=self.zero_based,
        )
        rows = parser.feed(cast(bytes, joined))  # feed takes any bytes-like object
        last_rows = parser.finish()
        if last_rows.n_rows or last_rows.rejected:
            rows = ParsedRows.concatenate([rows, last_rows])
        return rows, parser.lines_seen

    def _decode_one(
        self, data: npt.NDArray[np.uint8], spans: npt.NDArray[np.int64], i: int, code: int
    ) -> ParsedRows:
        """Rows of message ``i``: a msgpack, a JSON one or one of an unknown content type."""
        start, length = int(spans[VALUE_START, i]), int(spans[VALUE_LENGTH, i])
        value = data[start : start + max(length, 0)].tobytes()
        if code == FORMAT_MSGPACK:
            return self.decode_msgpack(value)
        if code == FORMAT_JSON:
            return self.decode_json(value)
        type_start, type_length = int(spans[TYPE_START, i]), int(spans[TYPE_LENGTH, i])
        text = data[type_start : type_start + type_length].tobytes()
        return _rejected_message(f"unknown content-type {text.decode('utf-8', errors='replace')}")

    def decode_msgpack(self, value: bytes) -> ParsedRows:
        """Rows of a msgpack example or batch of examples, numbered from 1."""
        document = read_document(value, "msgpack")
        if isinstance(document, _Unreadable):
            return _rejected_message(document.why)
        return self.decode_document(document)

    def decode_json(self, value: bytes) -> ParsedRows:
        """Rows of a JSON example, batch of examples or list of examples, numbered from
        1 (the schema of msgpack messages; ``NaN`` and ``Infinity`` are not JSON).

        >>> rows = MessageDecoder(hash_features=16).decode_json(
        ...     b'[{"indices": [2], "values": [1.5], "label": 1}, {"features": {"age": 3}}]')
        >>> rows.indices.tolist(), rows.label_ptr.tolist()
        ([2, 2], [0, 1, 1])
        >>> MessageDecoder().decode_json(b'{"indices": [1], "values": [NaN]}').rejected
        [Rejected(line=1, reason='bad message', text='not JSON: NaN')]
        >>> MessageDecoder().decode_json(b"[" * 100_000).rejected
        [Rejected(line=1, reason='bad message', text='not JSON: nested deeper than 64')]
        """
        document = read_document(value, "json")
        if isinstance(document, _Unreadable):
            return _rejected_message(document.why)
        return self.decode_document(document)

    def decode_document(self, document: object) -> ParsedRows:
        """Rows of a decoded message: one example (a map), ``{"examples": [...]}``, or a
        list of examples; example ``i`` (from 1) is line ``i``."""
        if isinstance(document, dict) and "examples" in document:
            examples = document["examples"]
            if not isinstance(examples, list):
                return _rejected_message(_repr.repr(document))
        elif isinstance(document, list):
            examples = document
        else:
            examples = [document]
        rows: list[_Row] = []
        kept: list[object] = []
        line_numbers: list[int] = []
        rejected: list[Rejected] = []
        for line, example in enumerate(examples, start=1):
            row = self._example(example)
            if isinstance(row, str):
                rejected.append(Rejected(line, row, _text(example)))
            else:
                rows.append(row)
                kept.append(example)
                line_numbers.append(line)
        parsed = _rows(rows, line_numbers, rejected)
        if not rows:
            return parsed
        # all rows' norms in one compiled call, added in order as the kernels add them
        too_large = ~(row_sqnorms(parsed.indptr, parsed.values) <= MAX_ROW_SQNORM)
        if not too_large.any():
            return parsed
        more = [
            Rejected(line_numbers[i], _TOO_LARGE, _text(kept[i]))
            for i in np.flatnonzero(too_large).tolist()
        ]
        return parsed.select(~too_large, sorted([*rejected, *more], key=lambda r: r.line))

    def _example(self, example: object) -> _Row | str:
        """The checked row of one example, or the reason it is rejected."""
        if not isinstance(example, dict):
            return BAD_MESSAGE
        raw_indices: object = example.get("indices")
        raw_values: object = example.get("values")
        if "features" in example and ("indices" in example or "values" in example):
            return BAD_MESSAGE  # by name or by index, not both
        if "features" in example:
            hashed = self._hashed(example["features"])
            if isinstance(hashed, str):
                return hashed
            raw_indices, raw_values = hashed
        if not isinstance(raw_indices, list) or not isinstance(raw_values, list):
            return BAD_MESSAGE
        if len(raw_indices) != len(raw_values):
            return BAD_MESSAGE
        if not all(type(i) is int for i in raw_indices):
            return BAD_MESSAGE
        if not all(type(v) is float or type(v) is int for v in raw_values):
            return BAD_MESSAGE
        labels = labels_of(example)
        if labels is None:
            return _BAD_LABEL
        if not raw_indices:
            return _Row(np.empty(0, dtype=np.int64), np.empty(0), labels)
        if min(raw_indices) < 0:
            return _NEGATIVE
        if max(raw_indices) > self._max_index:
            return _ABOVE_MAX
        indices = np.array(raw_indices, dtype=np.int64)
        if indices.shape[0] > 1 and not bool(np.all(indices[1:] > indices[:-1])):
            return _UNSORTED
        try:
            values = np.array(raw_values, dtype=np.float64)
        except OverflowError:  # an integer beyond float64
            return _NOT_FINITE
        if not bool(np.all(np.isfinite(values))):
            return _NOT_FINITE
        return _Row(indices, values, labels)  # its norm is checked with the others

    def _hashed(self, features: object) -> tuple[list[int], list[object]] | str:
        """Indices (sorted, colliding names added up, as floats) and values of a
        ``features`` map, or the reason it is rejected."""
        if self.hash_features is None:
            return BAD_MESSAGE
        if not isinstance(features, dict):
            return BAD_MESSAGE
        summed: dict[int, object] = {}
        for name, value in features.items():
            index = stable_hash(name) % self.hash_features
            if index in summed:
                previous = summed[index]
                if not (_is_number(previous) and _is_number(value)):
                    return BAD_MESSAGE
                # as floats: an integer beyond float64 is infinite (not a finite value)
                summed[index] = _as_float(previous) + _as_float(value)
            else:
                summed[index] = value
        indices = sorted(summed)
        return indices, [summed[i] for i in indices]


class FirstLines:
    """Per message of a decoded batch, the number of its first line, counted from 1 over
    the batch: computed on the first call (it counts the newlines of joined values).

    A message's lines are its svmlight lines or its msgpack examples (at least one); an
    empty svmlight message has none, and shares its number with the next message.
    """

    def __init__(self, n: int) -> None:
        self._n = n
        self._runs: list[tuple[int, int, npt.NDArray[np.uint8], npt.NDArray[np.int64]]] = []
        self._ones: list[tuple[int, int]] = []
        self._done: npt.NDArray[np.int64] | None = None

    def add_run(
        self, first: int, lines: int, joined: npt.NDArray[np.uint8], ends: npt.NDArray[np.int64]
    ) -> None:
        """Messages ``first ..`` are the svmlight values ``joined`` (ending at ``ends``),
        after ``lines`` lines."""
        self._runs.append((first, lines, joined, ends))

    def add_one(self, i: int, lines: int) -> None:
        """Message ``i`` comes after ``lines`` lines."""
        self._ones.append((i, lines))

    def __call__(self) -> npt.NDArray[np.int64]:
        if self._done is None:
            starts = np.empty(self._n, dtype=np.int64)
            for i, lines in self._ones:
                starts[i] = lines + 1
            for first, lines, joined, ends in self._runs:
                # newlines before each message: those before the end of the previous one
                newlines = np.flatnonzero(joined == _LF)
                before = np.searchsorted(newlines, ends[:-1])
                starts[first] = lines + 1
                starts[first + 1 : first + ends.shape[0]] = before + lines + 1
            self._done = starts
            self._runs = []
        return self._done


def joined_values(
    data: npt.NDArray[np.uint8], spans: npt.NDArray[np.int64], first: int = 0, last: int = -1
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The values of messages ``first .. last - 1`` (all when ``last`` is -1) one after
    the other, each ending with a newline (empty ones left empty), and where each ends.

    >>> data, spans = pack_messages([b"1 1:1", b"", b"-1 2:1\\n"], [None] * 3, [None] * 3)
    >>> joined, ends = joined_values(data, spans)
    >>> joined.tobytes(), ends.tolist()
    (b'1 1:1\\n-1 2:1\\n', [6, 6, 13])
    """
    if last < 0:
        last = spans.shape[1]
    lengths = spans[VALUE_LENGTH, first:last]
    joined = np.empty(int(np.maximum(lengths, 0).sum()) + (last - first), dtype=np.uint8)
    ends = np.empty(last - first, dtype=np.int64)
    size = join_values(data, spans[VALUE_START], spans[VALUE_LENGTH], first, last, joined, ends)
    return joined[:size], ends


def pack_messages(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None],
    content_types: Sequence[bytes | None],
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Messages as one read-only byte array and their spans (``SPAN_ROWS`` x n, int64).

    Each message's value, key and content type (``None``: length -1, start 0) are laid
    out one after the other.

    >>> data, spans = pack_messages([b"1 1:1", None], [b"k", None], [None, b"text/plain"])
    >>> data.tobytes(), spans.tolist()
    (b'1 1:1ktext/plain', [[0, 0], [5, -1], [5, 0], [1, -1], [0, 6], [-1, 10]])
    """
    n = len(values)
    spans = np.zeros((SPAN_ROWS, n), dtype=np.int64)
    pieces: list[bytes] = []
    position = 0
    for row, column in ((VALUE_START, values), (KEY_START, keys), (TYPE_START, content_types)):
        for i, piece in enumerate(column):
            if piece is None:
                spans[row + 1, i] = -1
                continue
            spans[row, i] = position
            spans[row + 1, i] = len(piece)
            position += len(piece)
            pieces.append(piece)
    data = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    return data, spans


def _example_count(rows: ParsedRows) -> int:
    """Examples of one decoded msgpack message: rows and rejected ones."""
    return rows.n_rows + len(rows.rejected)


def _shifted(rows: ParsedRows, lines: int) -> ParsedRows:
    """``rows`` with ``lines`` added to every line number."""
    if lines == 0:
        return rows
    return replace(
        rows,
        line_numbers=rows.line_numbers + lines,
        rejected=[replace(r, line=r.line + lines) for r in rows.rejected],
    )


def labels_of(example: dict[object, object]) -> list[float] | None:
    """The labels of a msgpack example (``label`` or ``labels``, empty for neither), or
    None when they break the schema (a label is a number that is finite as a float).

    >>> labels_of({"label": 3}), labels_of({"labels": [1, 2.5]}), labels_of({})
    ([3.0], [1.0, 2.5], [])
    >>> labels_of({"label": 10**400}), labels_of({"labels": []}), labels_of({"label": True})
    (None, None, None)
    """
    label, labels = example.get("label"), example.get("labels")
    if label is not None:
        if labels is not None:
            return None
        labels = [label]
    elif labels is None:
        return []
    if not isinstance(labels, list) or not labels or not all(map(_is_number, labels)):
        return None
    values = [_as_float(v) for v in labels]
    return values if all(map(math.isfinite, values)) else None


def _is_number(value: object) -> bool:
    """An int or a float (not a bool)."""
    return type(value) is int or type(value) is float


def _as_float(value: object) -> float:
    """A number as a float: infinite for an integer beyond float64 (never an error).

    >>> _as_float(3), _as_float(-(10**400)), _as_float(2.5)
    (3.0, -inf, 2.5)
    """
    try:
        return float(cast(float, value))
    except OverflowError:
        return math.inf if cast(int, value) > 0 else -math.inf


def _json_int(digits: str) -> int | float:
    """A JSON integer: exact up to :data:`MAX_INT_DIGITS` digits, a float beyond (so that
    no integer costs quadratic time to read, nor fails to convert later)."""
    if len(digits) - digits.startswith("-") <= MAX_INT_DIGITS:
        return int(digits)
    return float(digits)  # linear in the digits, infinite beyond float64


def _nested_deeper_than(text: str, limit: int) -> bool:
    r"""Whether the arrays and objects of a JSON text nest deeper than ``limit`` (brackets
    within strings do not count; a text that is not JSON may count deeper than the
    reader would go, never shallower).

    >>> _nested_deeper_than('[[1], {"a": [2]}]', 3), _nested_deeper_than('[[[1]]]', 2)
    (False, True)
    >>> _nested_deeper_than(r'["[[[[", "\"[[[[", "\\", "]"]', 1)
    False
    """
    if text.count("[") + text.count("{") <= limit:  # the common case, at C speed
        return False
    # outside its strings a JSON text is ASCII: encoded, each bracket is one byte
    bare = _JSON_STRING.sub("", text).encode("utf-8", "surrogatepass")
    codes = np.frombuffer(bare, dtype=np.uint8)
    ascii_codes = np.minimum(codes, 127)
    steps = _OPENING[ascii_codes].astype(np.int64) - _CLOSING[ascii_codes]
    return bool(np.cumsum(steps).max(initial=0) > limit)


class _Unreadable:
    """Why a message's bytes are not a document of their format."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def read_document(value: bytes, message_format: str) -> object:
    """The document a msgpack or JSON message holds (within the limits of the module
    doc), or an :class:`_Unreadable` that says why it holds none.

    >>> read_document(b'{"id": 3}', "json")
    {'id': 3}
    >>> read_document(b"[NaN]", "json").why
    'not JSON: NaN'
    """
    if message_format == "msgpack":
        try:
            return msgpack.unpackb(value, raw=False, strict_map_key=False)
        except Exception:  # msgpack raises many types for bad input: any is a bad message
            return _Unreadable("not msgpack")
    try:
        # decoded as json.loads decodes bytes (UTF-8, -16 or -32), so that the depth
        # is counted on the characters the reader will see
        text = value.decode(json.detect_encoding(value), "surrogatepass")
        if _nested_deeper_than(text, MAX_JSON_DEPTH):
            return _Unreadable(f"not JSON: nested deeper than {MAX_JSON_DEPTH}")
        return json.loads(text, parse_constant=_refuse_constant, parse_int=_json_int)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        named = isinstance(exc, _NotJSONError)
        return _Unreadable(f"not JSON: {exc}" if named else "not JSON")


def unreadable_reason(document: object) -> str | None:
    """Why :func:`read_document` found no document (None: it found one)."""
    return document.why if isinstance(document, _Unreadable) else None


def _text(example: object) -> str:
    """The start of an example's repr, for its rejection."""
    return _repr.repr(example)[:TEXT_CHARS]


class _NotJSONError(ValueError):
    """A constant that JSON does not have (Python's reader takes NaN and Infinity)."""


def _refuse_constant(name: str) -> object:
    raise _NotJSONError(name)


def _rows(rows: list[_Row], line_numbers: list[int], rejected: list[Rejected]) -> ParsedRows:
    """ParsedRows of checked examples (each with its labels)."""
    if not rows:
        return replace(ParsedRows.empty(), rejected=rejected)
    lengths = np.array([r.indices.shape[0] for r in rows], dtype=np.int64)
    label_counts = np.array([len(r.labels) for r in rows], dtype=np.int64)
    indptr, label_ptr = offsets(lengths), offsets(label_counts)
    return ParsedRows(
        indptr,
        np.concatenate([r.indices for r in rows]).astype(np.int32),
        np.concatenate([r.values for r in rows]).astype(np.float64),
        label_ptr,
        np.array([v for r in rows for v in r.labels], dtype=np.float64),
        np.array(line_numbers, dtype=np.int64),
        rejected,
    )


def _rejected_message(text: str) -> ParsedRows:
    """No rows, and the whole message rejected as line 1."""
    return replace(ParsedRows.empty(), rejected=[Rejected(1, BAD_MESSAGE, text[:TEXT_CHARS])])


def decode_message(
    value: bytes,
    headers: Mapping[str, bytes],
    *,
    default_format: str = "svmlight",
    max_features: int | None = None,
    max_line_bytes: int = 1 << 20,
    zero_based: bool = False,
) -> ParsedRows:
    """The rows of one message (see :class:`MessageDecoder`, which keeps the options).

    >>> decode_message(b"1 1:2", {}).values.tolist()
    [2.0]
    """
    decoder = MessageDecoder(
        default_format=default_format,
        max_features=max_features,
        max_line_bytes=max_line_bytes,
        zero_based=zero_based,
    )
    return decoder.decode(value, headers)
