"""The inputs of issue 36, one by one: each was a crash (an exception out of the parser, or
weights that overflowed in replay) and is now a rejected line with a reason."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from typer.testing import CliRunner

from streamlearn.cli import app
from streamlearn.learn import LEARNERS, ModelBank, ModelLimits
from streamlearn.parse import ParsedRows, SvmlightParser
from streamlearn.parse.features import stable_hash
from streamlearn.parse.messages import BAD_MESSAGE, MessageDecoder
from streamlearn.sources.base import Message, MessageBatch

JSON = {"content-type": b"application/json"}
MSGPACK = {"content-type": b"application/msgpack"}
#: finite values, but the last line's square norm (1e240) made PDM's weights overflow in
#: replay ("weights overflowed during replay", exit 1, no checkpoint)
THREE_LINES = b"-1 2:1 6:7 10:3\n-1 2:1 10:1\n1 2:1 6:2 10:1e120\n"
DEEP_JSON = b"[" * 100_000
LONG_LABEL = b'{"indices": [1], "values": [1.0], "label": ' + b"9" * 400 + b"}"


def reasons(rows: ParsedRows) -> list[tuple[int, str]]:
    return [(r.line, r.reason) for r in rows.rejected]


def kafka(value: bytes, headers: dict[str, bytes]) -> ParsedRows:
    """``value`` as one Kafka message, decoded as the daemon decodes a polled batch."""
    batch = MessageBatch.from_messages([Message(value, None, headers)])
    rows, _ = MessageDecoder(hash_features=16).decode_columns(batch.data, batch.spans)
    return rows


# -- JSON and msgpack ------------------------------------------------------------------


@pytest.mark.parametrize("text", [DEEP_JSON, b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 70_000])
def test_json_nested_beyond_the_bound_is_a_bad_message_not_a_recursion_error(text: bytes) -> None:
    rows = kafka(text, JSON)
    assert reasons(rows) == [(1, BAD_MESSAGE)] and rows.n_rows == 0
    assert "nested" in rows.rejected[0].text


def test_json_nested_within_the_bound_is_read() -> None:
    inner: Any = 1.0
    for _ in range(40):
        inner = [inner]
    example = {"indices": [1], "values": [2.0], "label": 1, "extra": inner}
    rows = kafka(json.dumps(example).encode(), JSON)
    assert rows.rejected == [] and rows.values.tolist() == [2.0]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (LONG_LABEL, "bad label"),
        (b'{"indices": [1], "values": [1.0], "labels": [3, ' + b"9" * 400 + b"]}", "bad label"),
        (b'{"indices": [1], "values": [1.0], "label": -' + b"9" * 5000 + b"}", "bad label"),
        (b'{"indices": [1], "values": [' + b"9" * 400 + b"]}", "not a finite value"),
        (b'{"indices": [' + b"9" * 400 + b'], "values": [1.0]}', BAD_MESSAGE),
        (b'{"indices": [' + b"9" * 5000 + b'], "values": [1.0]}', BAD_MESSAGE),
        (b'{"indices": [1], "values": [1e400]}', "not a finite value"),
        (b'{"indices": [1], "values": [1e26]}', "values too large"),
    ],
)
def test_json_numbers_beyond_float64_are_rejected_with_a_reason(text: bytes, reason: str) -> None:
    rows = kafka(text, JSON)
    assert reasons(rows) == [(1, reason)] and rows.n_rows == 0


def test_hashed_names_that_add_up_beyond_float64_are_not_finite() -> None:
    decoder = MessageDecoder(hash_features=1)  # every name falls on index 0
    text = b'{"features": {"a": ' + b"9" * 400 + b', "b": 1.5}, "label": 1}'
    assert reasons(decoder.decode_json(text)) == [(1, "not a finite value")]
    big = decoder.decode_msgpack(msgpack.packb({"features": {"a": 2**64 - 1, "b": 1.5}}))
    assert big.rejected == [] and big.values.tolist() == [float(2**64 - 1) + 1.5]
    above = decoder.decode_msgpack(msgpack.packb({"features": {"a": 6e24, "b": 6e24}}))
    assert reasons(above) == [(1, "values too large")]  # 1.44e50: each alone is within


def test_a_name_with_a_lone_surrogate_is_hashed_not_a_crash() -> None:
    rows = MessageDecoder(hash_features=16).decode_json(b'{"features": {"\\ud800": 2.0}}')
    assert rows.rejected == [] and rows.values.tolist() == [2.0]
    assert rows.indices.tolist() == [stable_hash("\ud800") % 16]


@pytest.mark.parametrize(
    "value",
    [
        b"\x91" * 100_000 + b"\x90",  # arrays nested 100 000 deep
        b"\xdd\xff\xff\xff\xff",  # an array that declares 2^32 - 1 items
        b"\xdf\xff\xff\xff\xff",  # a map that declares 2^32 - 1 pairs
        b"\xdb\xff\xff\xff\xff" + b"a" * 10,  # a str that declares 4 GiB
        b"\xc6\xff\xff\xff\xff",  # bin of 4 GiB
        b"\xc7\xff\x05",  # an ext type cut short
        b"\xd6\xff\x00\x00\x00",  # a timestamp cut short
    ],
)
def test_msgpack_beyond_its_limits_is_a_bad_message(value: bytes) -> None:
    rows = kafka(value, MSGPACK)
    assert reasons(rows) == [(1, BAD_MESSAGE)] and rows.n_rows == 0


@pytest.mark.parametrize(
    ("example", "reason"),
    [
        ({"indices": [1], "values": [1.0], "label": 2**64 - 1}, None),
        ({"indices": [1], "values": [1.0], "label": -(2**63)}, None),
        ({"indices": [2**64 - 1], "values": [1.0]}, "index above max_features"),
        ({"indices": [-(2**63)], "values": [1.0]}, "index 0 or negative"),
        ({"indices": [1], "values": [2**64 - 1]}, None),
        ({"indices": [1], "values": [1e26]}, "values too large"),
        ({"indices": [1, 2], "values": [8e24, 8e24]}, "values too large"),
        ({"indices": [1], "values": [9.9e24], "label": 1e308}, None),
    ],
)
def test_msgpack_numbers_at_their_limits(example: dict[str, Any], reason: str | None) -> None:
    rows = kafka(msgpack.packb(example), MSGPACK)
    if reason is None:
        assert rows.rejected == [] and rows.n_rows == 1
    else:
        assert reasons(rows) == [(1, reason)]


# -- svmlight, the value bound and the learners ------------------------------------------


def test_the_three_lines_lose_the_third_as_values_too_large() -> None:
    rows = SvmlightParser().parse_all(THREE_LINES)
    assert rows.n_rows == 2
    assert reasons(rows) == [(3, "values too large")]
    assert kafka(THREE_LINES, {}).rejected == rows.rejected


@pytest.mark.parametrize(
    "line",
    [
        b"1 1:1e26",  # a number the kernel leaves to Python (exponent above 22)
        b"1 1:9000000000000000e22",  # exact in the kernel, 9e37
        b"1 1:100000000000000000000000000",  # 27 digits, left to Python
        b"1 1:8e24 2:8e24",  # each square within the bound, not their sum
        b"1 1:6e24 2:6e24 3:1" + b"0" * 30,  # kernel values and a Python one together
    ],
)
def test_a_row_above_the_bound_is_values_too_large(line: bytes) -> None:
    rows = SvmlightParser().parse_all(line + b"\n1 1:9.9e24\n")
    assert reasons(rows) == [(1, "values too large")]
    assert rows.values.tolist() == [9.9e24]


def cli_learn(path: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["learn", "--quiet", "--json", *args, str(path)])


@pytest.mark.parametrize("options", [["--delta", "1"], ["--delta", "1", "--replay-every", "1"]])
def test_learn_takes_the_three_lines_without_overflowing(
    tmp_path: Path, options: list[str]
) -> None:
    path = tmp_path / "three.svm"
    path.write_bytes(THREE_LINES)
    model = tmp_path / "m.ckpt"
    result = cli_learn(path, "--model", str(model), *options)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["examples"] == 2 and summary["rejected_lines"] == 1
    assert "line 3: values too large" in result.stderr
    assert model.exists()


@pytest.mark.parametrize("name", list(LEARNERS))
def test_every_learner_takes_the_three_lines_from_the_parser(name: str) -> None:
    rows = SvmlightParser().parse_all(THREE_LINES)
    for model in (
        LEARNERS[name](delta=1.0, **LEARNERS.entry(name).test_params),
        ModelBank(LEARNERS[name](delta=1.0, **LEARNERS.entry(name).test_params)),
    ):
        examples, refused = model.admit(rows, ModelLimits())  # as the daemon learns rows
        assert refused == rows.rejected
        model.learn_rows(examples)
        model.replay()
        state = model.state_dict()
        assert all(math.isfinite(x) for x in _numbers(state))


def _numbers(state: Any) -> list[float]:
    """Every float of the arrays of a state dict: weights, scalars, slack counts, the
    buffer's values and norms (its parameters, NaN when unset, are plain floats)."""
    if isinstance(state, dict):
        return [x for value in state.values() for x in _numbers(value)]
    if isinstance(state, list | tuple):
        return [x for value in state for x in _numbers(value)]
    if isinstance(state, np.ndarray) and state.dtype.kind == "f":
        return list(state.ravel().tolist())
    return []
