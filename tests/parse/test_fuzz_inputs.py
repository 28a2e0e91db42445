"""Every input path of the daemon under random and hostile input (issue 36): standard
input, Kafka messages in svmlight, JSON and msgpack, and HTTP bodies.

The property is the same on every path: no exception; every rejected line or example has
a reason from the documented list; every row that gets through has finite values and
labels, indices in range and strictly increasing, and a squared norm within the bound
that keeps the learners' state finite. Each path counts the inputs it tried, asserts a
minimum and prints the count (``pytest -s`` shows them).
"""

from __future__ import annotations

import http.client
import io
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamlearn._kernels.rows import MAX_ROW_SQNORM, row_sqnorms
from streamlearn.http.api import api_handler
from streamlearn.http.live import Learned, LiveModel, Published
from streamlearn.http.server import HttpServer
from streamlearn.learn import PDM
from streamlearn.parse import REASONS, ParsedRows, SvmlightParser
from streamlearn.parse.messages import BAD_MESSAGE, MessageDecoder
from streamlearn.sources.base import Message, MessageBatch
from streamlearn.sources.stdin import StdinSource
from streamlearn.types import MAX_FEATURE_INDEX

#: the reasons a decoder may give (the parser's, and a message's own)
DOCUMENTED = {*REASONS, BAD_MESSAGE}
#: inputs each path must have tried
MINIMUM = 200
FUZZ = settings(
    max_examples=MINIMUM + 40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SVMLIGHT, JSON, MSGPACK = b"text/svmlight", b"application/json", b"application/msgpack"
# the inputs, tried on every path besides the generated ones
THREE_LINES = b"-1 2:1 6:7 10:3\n-1 2:1 10:1\n1 2:1 6:2 10:1e120\n"
DEEP_JSON = b"[" * 100_000
LONG_LABEL = b'{"indices": [1], "values": [1.0], "label": ' + b"9" * 400 + b"}"
DEEP_MSGPACK = b"\x91" * 100_000 + b"\x90"
HUGE_MSGPACK_ARRAY = b"\xdd\xff\xff\xff\xff"

# -- what every path must hold -----------------------------------------------------------


def assert_sound(rows: ParsedRows, max_features: int | None) -> None:
    """The property: documented reasons, and rows a learner can take."""
    for rejected in rows.rejected:
        assert rejected.reason in DOCUMENTED, rejected
        assert len(rejected.text) <= 80
    n = rows.n_rows
    assert rows.indptr.shape == rows.label_ptr.shape == (n + 1,)
    assert rows.line_numbers.shape == (n,)
    assert np.all(np.isfinite(rows.values)) and np.all(np.isfinite(rows.labels))
    if rows.indices.shape[0]:
        assert int(rows.indices.min()) >= 0
        limit = MAX_FEATURE_INDEX if max_features is None else max_features - 1
        assert int(rows.indices.max()) <= limit
    for i in range(n):
        assert np.all(np.diff(rows.indices[rows.indptr[i] : rows.indptr[i + 1]]) > 0)
    assert np.all(row_sqnorms(rows.indptr, rows.values) <= MAX_ROW_SQNORM)
    assert not set(rows.line_numbers.tolist()) & {r.line for r in rows.rejected}


class Tally:
    """Inputs tried on one path: counted, checked against the minimum, printed with the
    rows that got through and the reasons given (so a strategy that only ever makes
    one kind of input shows)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.inputs = 0
        self.rows = 0
        self.reasons: Counter[str] = Counter()

    def __call__(self) -> None:
        self.inputs += 1

    def saw(self, rows: int, reasons: Iterable[str]) -> None:
        self.rows += rows
        self.reasons.update(reasons)

    def report(self) -> None:
        reasons = ", ".join(f"{reason} {n}" for reason, n in self.reasons.most_common())
        print(f"\nfuzz, {self.path}: {self.inputs} inputs, {self.rows} rows, rejected: {reasons}")
        assert self.inputs >= MINIMUM, (self.path, self.inputs)


# -- inputs ------------------------------------------------------------------------------

#: numbers around every limit: the norm bound (1e25 alone), float64's, int64's, exactness
EDGE_NUMBERS = [
    "0",
    "-0",
    "1",
    "-1",
    "1e25",
    "9.9e24",
    "1.0000000000000001e25",
    "7e24",
    "1e26",
    "1e120",
    "1e154",
    "1e200",
    "1e308",
    "1.7976931348623157e308",
    "1e309",
    "-1e400",
    "1e-400",
    "5e-324",
    "9007199254740993",
    "18446744073709551615",
    "9" * 30,
    "9" * 400,
    "0." + "0" * 50 + "1",
    "nan",
    "-inf",
    "Infinity",
    "1e",
    ".",
    "0x10",
    "1_000",
]
numbers = st.one_of(
    st.sampled_from(EDGE_NUMBERS),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(min_value=-1e26, max_value=1e26).map(lambda x: f"{x:.17g}"),
    st.integers(-(10**30), 10**30).map(str),
)
indices = st.one_of(st.integers(-3, 40), st.sampled_from([2**31 - 1, 2**31, 2**63, 10**30]))


@st.composite
def svmlight_line(draw: st.DrawFn) -> bytes:
    labels = draw(st.lists(numbers, min_size=0, max_size=3))
    features = [f"{draw(indices)}:{draw(numbers)}" for _ in range(draw(st.integers(0, 6)))]
    head = [",".join(labels)] if labels else []
    return " ".join(head + features).encode() + draw(st.sampled_from([b"\n", b"\r\n", b" #c\n"]))


#: values a learner may take, up to the bound (a line of two 7e24 is still within it)
good_values = st.one_of(
    st.floats(-7e24, 7e24),
    st.sampled_from([9.9e24, -7e24, 5e-324, -0.0, 1.0]),
    st.integers(-(10**20), 10**20),
)


@st.composite
def good_line(draw: st.DrawFn) -> bytes:
    """A line that ``learn`` takes (unless its values add up above the bound)."""
    features = sorted(draw(st.sets(st.integers(1, 20), max_size=5)))
    tokens = [f"{i}:{draw(good_values)!r}" for i in features]
    label = draw(st.sampled_from(["1", "-1", "+1", "0"]))
    return " ".join([label, *tokens]).encode() + b"\n"


#: bytes the svmlight format gives meaning to, so random text gets past the first checks
ALPHABET = list(b"0123456789:.,+-eE #\t\r\n\n\nqidnaf\xc3\xa9\xff\x80")
svmlight_text = st.one_of(
    st.lists(good_line(), min_size=1, max_size=6).map(b"".join),
    st.lists(st.one_of(good_line(), svmlight_line()), max_size=12).map(b"".join),
    st.lists(st.sampled_from(ALPHABET), max_size=300).map(bytes),
    st.binary(max_size=200),
    st.sampled_from([THREE_LINES, b"1 1:1e26\n-1 1:9000000000000000e22\n", b"\n" * 50]),
)

json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**400), 10**400),
    st.floats(),  # NaN and infinities too: json.dumps writes them, JSON has none
    st.text(max_size=8),
    st.sampled_from(["\ud800", "indices", "values", "label", "labels", "features"]),
)
documents = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


#: numbers at every limit, for JSON and msgpack
extreme_numbers = st.one_of(
    st.integers(-(10**30), 10**30),
    st.floats(),
    st.sampled_from([1e25, 9.9e24, 1e26, 1e120, 2**64 - 1, -(2**63), 10**400, True]),
)


@st.composite
def examples(draw: st.DrawFn) -> dict[str, Any]:
    """Maps in the schema (by index or by name) or near it, with numbers at every limit."""
    value = st.one_of(good_values, extreme_numbers)
    shape = draw(st.sampled_from(["indices", "indices", "features", "any keys"]))
    example: dict[str, Any] = {}
    if shape == "indices":
        chosen = draw(st.lists(st.one_of(st.integers(0, 40), indices), max_size=5))
        example["indices"] = sorted(chosen) if draw(st.booleans()) else chosen
        extra = draw(st.sampled_from([0, 0, 0, 1]))
        example["values"] = [draw(value) for _ in range(len(chosen) + extra)]
    elif shape == "features":
        example["features"] = draw(st.dictionaries(st.text(max_size=4), value, max_size=4))
    else:
        for key in draw(st.sets(st.sampled_from(["indices", "values", "features"]))):
            example[key] = draw(documents)
    kind = draw(st.sampled_from(["label", "label", "labels", "none", "both"]))
    if kind in ("label", "both"):
        example["label"] = draw(st.one_of(st.sampled_from([1, -1, 2, 1.0]), extreme_numbers))
    if kind in ("labels", "both"):
        example["labels"] = draw(st.lists(st.one_of(st.integers(0, 5), extreme_numbers)))
    return example


schema_like = st.one_of(
    examples(),
    st.lists(examples(), max_size=4),
    st.lists(examples(), max_size=4).map(lambda e: {"examples": e}),
)


def nested(opening: bytes, closing: bytes) -> st.SearchStrategy[bytes]:
    """Texts nested ``depth`` deep, closed or not, around the bound and far beyond."""
    depth = st.one_of(st.integers(60, 70), st.sampled_from([1000, 100_000]))
    return st.builds(
        lambda d, close: opening * d + (closing * d if close else b""), depth, st.booleans()
    )


def as_json(document: Any) -> bytes:
    return json.dumps(document, allow_nan=True).encode()


json_text = st.one_of(
    schema_like.map(as_json),
    documents.map(as_json),
    nested(b"[", b"]"),
    nested(b'{"a":', b"}"),
    st.binary(max_size=100),
    st.sampled_from(
        [
            b'{"indices": [1], "values": [1.0], "label": ' + b"9" * 400 + b"}",
            b'{"indices": [1], "values": [1.0], "label": -' + b"9" * 5000 + b"}",
            b'{"indices": [1], "values": [1.0]}'.decode().encode("utf-16"),
            b'{"features": {"\\ud800": 1}}',
            b'["[[[[", "\\"[[[[", {"indices": [1], "values": [2]}]',
        ]
    ),
)


def packable(document: Any) -> bytes | None:
    try:
        return bytes(msgpack.packb(document))
    except (OverflowError, TypeError, ValueError):  # integers beyond 64 bits, surrogates
        return None


msgpack_bytes = st.one_of(
    schema_like.map(packable).filter(lambda b: b is not None),
    documents.map(packable).filter(lambda b: b is not None),
    nested(b"\x91", b""),
    nested(b"\x81\xa1a", b""),
    st.binary(max_size=100),
    st.sampled_from(
        [
            b"\xdd\xff\xff\xff\xff",
            b"\xdf\xff\xff\xff\xff",
            b"\xdb\xff\xff\xff\xff",
            b"\xc6\xff\xff\xff\xff",
            b"\xc7\xff\x05",
            b"\xd6\xff\x00",
            b"\xc1",
        ]
    ),
)

decoders = st.builds(
    lambda max_features, hash_features: MessageDecoder(
        max_features=max_features, hash_features=min(hash_features, max_features or hash_features)
    ),
    st.sampled_from([None, 8, 1000]),
    st.sampled_from([1, 16]),
)


def decode(decoder: MessageDecoder, messages: list[Message]) -> ParsedRows:
    """Messages as the daemon decodes a polled batch: columns, then one call."""
    batch = MessageBatch.from_messages(messages)
    rows, first_lines = decoder.decode_columns(batch.data, batch.spans)
    assert first_lines().shape == (len(messages),)
    return rows


# -- the paths -----------------------------------------------------------------------------


def test_standard_input() -> None:
    """Bytes on standard input, cut into messages by the source and decoded as ``serve``
    decodes them; the same bytes fed in chunks to the parser ``learn`` uses give the
    same rows."""
    tally = Tally("stdin (StdinSource + MessageDecoder, and learn's parser)")

    @FUZZ
    @given(
        data=svmlight_text,
        lines_per_message=st.integers(1, 5),
        read_size=st.integers(1, 64),
        max_features=st.sampled_from([None, 20]),
    )
    @example(data=THREE_LINES, lines_per_message=1, read_size=7, max_features=None)
    @example(data=THREE_LINES, lines_per_message=3, read_size=64, max_features=20)
    def run(data: bytes, lines_per_message: int, read_size: int, max_features: int | None) -> None:
        tally()
        source = StdinSource(
            io.BytesIO(data), lines_per_message=lines_per_message, read_size=read_size
        )
        messages: list[Message] = []
        while not source.exhausted():
            messages += list(source.poll(0.0, 100))
        rows = decode(MessageDecoder(max_features=max_features), messages)
        assert_sound(rows, max_features)
        tally.saw(rows.n_rows, (r.reason for r in rows.rejected))
        parser = SvmlightParser(max_features=max_features)
        fed = [parser.feed(data[i : i + read_size]) for i in range(0, len(data), read_size)]
        learned = ParsedRows.concatenate([*fed, parser.finish()])
        assert learned.values.tolist() == rows.values.tolist()
        assert [r.reason for r in learned.rejected] == [r.reason for r in rows.rejected]

    run()
    tally.report()


def fuzz_messages(
    path: str, content_type: bytes | None, values: st.SearchStrategy[bytes], cases: list[bytes]
) -> None:
    """Batches of Kafka messages of one content type, then an svmlight message or
    not (runs of formats take different branches of the decoder); each of ``cases`` is
    also tried as a message of its own."""
    tally = Tally(path)

    @FUZZ
    @given(
        decoder=decoders,
        batch=st.lists(values, min_size=1, max_size=4),
        svmlight_after=st.booleans(),
    )
    def run(decoder: MessageDecoder, batch: list[bytes], svmlight_after: bool) -> None:
        tally()
        headers = {} if content_type is None else {"content-type": content_type}
        messages = [Message(value, None, headers) for value in batch]
        if svmlight_after:
            messages.append(Message(b"1 1:1\n", None, {"content-type": SVMLIGHT}))
        rows = decode(decoder, messages)
        assert_sound(rows, decoder.max_features)
        tally.saw(rows.n_rows, (r.reason for r in rows.rejected))

    for case in cases:
        run = example(decoder=MessageDecoder(hash_features=16), batch=[case], svmlight_after=False)(
            run
        )
    run()
    tally.report()


def test_kafka_svmlight_messages() -> None:
    fuzz_messages("kafka svmlight", None, svmlight_text, [THREE_LINES])


def test_kafka_json_messages() -> None:
    fuzz_messages("kafka json", JSON, json_text, [DEEP_JSON, LONG_LABEL])


def test_kafka_msgpack_messages() -> None:
    fuzz_messages("kafka msgpack", MSGPACK, msgpack_bytes, [DEEP_MSGPACK, HUGE_MSGPACK_ARRAY])


# -- HTTP ----------------------------------------------------------------------------------


class Daemon:
    """A stand-in for the daemon's turns: takes what /learn posts, checks it is sound and
    says it was learned."""

    def __init__(self, live: LiveModel) -> None:
        self.live = live
        self.stop = threading.Event()
        self.failures: list[BaseException] = []
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.wait(0.001):
            for posted in self.live.take_posted():
                try:
                    assert_sound(posted.rows, None)
                except AssertionError as exc:
                    self.failures.append(exc)
                posted.done.set_result(Learned(posted.rows.n_rows, [], 7))


@pytest.fixture(scope="module")
def api() -> Iterator[Callable[[str, bytes, str], tuple[int, dict[str, Any]]]]:
    """POST to the real API (aiohttp's server, the daemon's decoder) over a socket."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    model = PDM(eps=0.1, delta=0.5).fit(X, np.where(X[:, 0] > 0, 1, -1))
    live = LiveModel(max_pending=1 << 20)
    live.publish(Published(version=7, predictor=model.predictor()))
    live.wanted(7, 60.0)
    decoder = MessageDecoder(max_features=1 << 20, hash_features=64)
    handler = api_handler(live, decoder.decode_as, learn=True, max_body=1 << 21)
    server = HttpServer()
    port = server.serve_handler(handler, "127.0.0.1", 0, max_body=1 << 21)
    daemon = Daemon(live)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(path: str, body: bytes, content_type: str) -> tuple[int, dict[str, Any]]:
        connection.request("POST", path, body=body, headers={"Content-Type": content_type})
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    try:
        yield post
    finally:
        connection.close()
        daemon.stop.set()
        daemon.thread.join(5)
        server.stop()
        assert not daemon.failures, daemon.failures


def test_http_bodies(api: Callable[[str, bytes, str], tuple[int, dict[str, Any]]]) -> None:
    """Bodies of every format to /predict and /learn: 200, or 400 with documented reasons
    (or no example, or no label); never a server error."""
    tally = Tally("http (POST /predict and /learn)")
    formats = {
        "text/plain": svmlight_text,
        "application/json": json_text,
        "application/msgpack": msgpack_bytes,
    }
    readable = ("the body holds no example", "an example to learn needs a label")

    @FUZZ
    @given(
        body=st.sampled_from(sorted(formats)).flatmap(
            lambda kind: st.tuples(st.just(kind), formats[kind])
        ),
        path=st.sampled_from(["/predict", "/learn"]),
    )
    @example(body=("application/json", DEEP_JSON), path="/predict")
    @example(body=("application/json", DEEP_JSON), path="/learn")
    @example(body=("application/json", LONG_LABEL), path="/predict")
    @example(body=("application/json", LONG_LABEL), path="/learn")
    @example(body=("text/plain", THREE_LINES), path="/learn")
    @example(body=("application/msgpack", DEEP_MSGPACK), path="/learn")
    def run(body: tuple[str, bytes], path: str) -> None:
        tally()
        content_type, data = body
        status, answer = api(path, data, content_type)
        assert status in (200, 400), (status, answer)
        if status == 200:
            tally.saw(len(answer.get("predictions", [])) or answer.get("learned", 0), [])
        else:
            reasons = [r["reason"] for r in answer.get("rejected", [])]
            assert set(reasons) <= DOCUMENTED | {"no label"}, answer
            assert reasons or answer["error"] in readable, answer
            tally.saw(0, reasons or [answer["error"]])

    run()
    tally.report()
