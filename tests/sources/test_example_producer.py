"""examples/kafka_producer.py against a real broker: what it sends, the daemon's decoder
reads back as the rows of the svmlight file itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from services import Tansu, wait_for

from streamlearn.parse import SvmlightParser
from streamlearn.parse.messages import MessageDecoder

pytestmark = pytest.mark.kafka

PRODUCER = Path(__file__).resolve().parents[2] / "examples" / "kafka_producer.py"

#: 9 lines worth sending (lines 2-4, 6-10 and 12): labelled, unlabelled (to predict), a
#: label set, a bad token; blank and comment lines are not sent
LINES = b"""# a comment line
+1 1:0.5 3:2
-1 2:1 4:1e-3
3:1.25
\x20\t
+1 5:1 # a comment after the data
-1 1:1 2:1
2,7 1:1
+1 1:x
-1 9:0.125

-1 3:3 4:4
"""
SENT_LINES = [2, 3, 4, 6, 7, 8, 9, 10, 12]


def run_producer(tansu: Tansu, topic: str, data: Path, *options: str) -> str:
    done = subprocess.run(
        [sys.executable, str(PRODUCER), "--bootstrap-servers", tansu.bootstrap,
         "--topic", topic, *options, str(data)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stderr


def read_topic(tansu: Tansu, topic: str) -> list[Any]:
    """Every message of partition 0, from the start, without joining a group."""
    from kafka import KafkaConsumer, TopicPartition

    count = wait_for(lambda: tansu.end_offsets(topic).get(0), timeout=30.0, what="messages")
    consumer = KafkaConsumer(bootstrap_servers=tansu.bootstrap, request_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        records: list[Any] = []

        def enough() -> bool:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
            return len(records) >= count

        wait_for(enough, timeout=30.0, interval=0.0, what=f"{count} messages")
        return records
    finally:
        consumer.close()


def decoded(records: list[Any]) -> list[tuple[list[int], list[float], list[float]]]:
    """(indices, values, labels) of every row the daemon's decoder reads."""
    decoder = MessageDecoder()
    rows = []
    for record in records:
        parsed = decoder.decode(record.value, {k: v for k, v in record.headers})
        assert parsed.rejected == [] or parsed.rejected[0].reason == "bad token"
        rows += table(parsed)
    return rows


def table(parsed: Any) -> list[tuple[list[int], list[float], list[float]]]:
    return [
        (
            parsed.indices[parsed.indptr[i] : parsed.indptr[i + 1]].tolist(),
            parsed.values[parsed.indptr[i] : parsed.indptr[i + 1]].tolist(),
            parsed.labels[parsed.label_ptr[i] : parsed.label_ptr[i + 1]].tolist(),
        )
        for i in range(parsed.n_rows)
    ]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "lines.svm"
    path.write_bytes(LINES)
    return path


def test_svmlight_messages_carry_the_file_lines(tansu: Tansu, topic_name: str, data: Path) -> None:
    tansu.create_topic(topic_name)
    run_producer(tansu, topic_name, data, "--lines-per-message", "4")
    records = read_topic(tansu, topic_name)
    assert [r.value.count(b"\n") for r in records] == [4, 4, 1]
    assert all(dict(r.headers)["content-type"] == b"text/svmlight" for r in records)
    assert all(r.key is None for r in records)
    assert decoded(records) == table(SvmlightParser().feed(LINES))


@pytest.mark.parametrize("per_message", [1, 4])
def test_msgpack_messages_carry_the_rows_and_report_what_they_skip(
    tansu: Tansu, topic_name: str, data: Path, per_message: int
) -> None:
    tansu.create_topic(topic_name)
    stderr = run_producer(
        tansu, topic_name, data, "--format", "msgpack", "--key-from-line-number",
        "--lines-per-message", str(per_message),
    )  # fmt: skip
    assert "line 9: bad token" in stderr
    assert "line 8: several labels, skipped" in stderr
    records = read_topic(tansu, topic_name)
    assert all(dict(r.headers)["content-type"] == b"application/msgpack" for r in records)
    firsts = SENT_LINES[::per_message]
    if per_message == 1:  # messages of skipped lines are not sent
        firsts = [n for n in firsts if n not in (8, 9)]
    assert [int(r.key) for r in records] == firsts
    expected = [row for row in table(SvmlightParser().feed(LINES)) if len(row[2]) <= 1]
    assert decoded(records) == expected
    assert np.array(expected[2][2]).size == 0  # the line to predict came as one without label
