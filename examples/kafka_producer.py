"""Stream an svmlight file (or standard input) into a Kafka topic for ``streamlearn serve``.

Each message holds ``--lines-per-message`` input lines (1 by default), either as the
svmlight text itself (header ``content-type: text/svmlight``) or as msgpack (header
``content-type: application/msgpack``): one example
``{"indices": [0-based ints], "values": [floats], "label": number}`` per message, or a
batch ``{"examples": [...]}`` when a message holds several lines. A line without a label
(it starts with a feature) becomes an example without a ``"label"`` key: the daemon
predicts it instead of learning from it. Blank and comment lines are not sent; in msgpack
mode a line the parser rejects is reported on standard error and skipped.

Usage (``examples/adult_like.py`` writes ``adult.train`` and ``adult.test``)::

    python examples/adult_like.py > adult.train
    python examples/adult_like.py --examples 16281 --seed 1 > adult.test
    python examples/kafka_producer.py --bootstrap-servers localhost:9092 \\
        --topic examples adult.train
    cat adult.train | python examples/kafka_producer.py --topic examples --lines-per-message 100
    python examples/kafka_producer.py --topic examples --format msgpack \\
        --lines-per-message 50 --key-from-line-number adult.train
    cut -d' ' -f2- adult.test | head -5 | python examples/kafka_producer.py --topic examples

Secured brokers are reached with the daemon's environment variables:
``STREAMLEARN_KAFKA_SECURITY_PROTOCOL``, ``STREAMLEARN_KAFKA_SASL_MECHANISM``,
``STREAMLEARN_KAFKA_SASL_USERNAME``, ``STREAMLEARN_KAFKA_SASL_PASSWORD`` (or
``STREAMLEARN_KAFKA_SASL_PASSWORD_FILE``) and ``STREAMLEARN_KAFKA_SSL_CAFILE``,
``..._CERTFILE``, ``..._KEYFILE``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
from kafka import KafkaProducer

from streamlearn.parse import SvmlightParser
from streamlearn.sources.kafka import security_from_env

CONTENT_TYPES = {"svmlight": b"text/svmlight", "msgpack": b"application/msgpack"}


def data_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Lines worth sending, with their 1-based line numbers: not blank, not only a comment."""
    for number, line in enumerate(stream, start=1):
        text = line.rstrip(b"\r\n")
        stripped = text.strip()
        if stripped and not stripped.startswith(b"#"):
            yield number, text


def groups(lines: Iterable[tuple[int, bytes]], size: int) -> Iterator[list[tuple[int, bytes]]]:
    """Consecutive lines in groups of ``size`` (the last group may be shorter)."""
    group: list[tuple[int, bytes]] = []
    for line in lines:
        group.append(line)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def msgpack_examples(group: list[tuple[int, bytes]]) -> list[dict[str, Any]]:
    """The group's lines as msgpack-ready examples; rejected lines are reported and dropped."""
    # a fresh parser per group: its line numbers are then positions in the group
    rows = SvmlightParser().feed(b"".join(text + b"\n" for _, text in group))
    numbers = [number for number, _ in group]
    for rejected in rows.rejected:
        where = numbers[rejected.line - 1]
        print(f"line {where}: {rejected.reason}: {rejected.text}", file=sys.stderr)
    examples: list[dict[str, Any]] = []
    for i in range(rows.n_rows):
        start, end = int(rows.indptr[i]), int(rows.indptr[i + 1])
        example: dict[str, Any] = {
            "indices": rows.indices[start:end].tolist(),
            "values": rows.values[start:end].tolist(),
        }
        labels = rows.labels[int(rows.label_ptr[i]) : int(rows.label_ptr[i + 1])].tolist()
        if len(labels) > 1:
            line = numbers[int(rows.line_numbers[i]) - 1]
            print(f"line {line}: several labels, skipped", file=sys.stderr)
            continue
        if labels:
            label = labels[0]
            example["label"] = int(label) if label.is_integer() else label
        examples.append(example)
    return examples


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", default="-", help="svmlight file ('-': stdin)")
    parser.add_argument("--bootstrap-servers", default="localhost:9092", help="host:port[,...]")
    parser.add_argument("--topic", required=True, help="topic to write to")
    parser.add_argument(
        "--lines-per-message", type=int, default=1, metavar="N", help="input lines per message"
    )
    parser.add_argument("--format", choices=sorted(CONTENT_TYPES), default="svmlight")
    parser.add_argument(
        "--key-from-line-number",
        action="store_true",
        help="key each message by the line number of its first line (otherwise no key)",
    )
    args = parser.parse_args(argv)
    if args.lines_per_message < 1:
        parser.error("--lines-per-message must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap_servers.split(","),
        linger_ms=20,
        **security_from_env(os.environ),
    )
    headers = [("content-type", CONTENT_TYPES[args.format])]
    messages = lines = 0
    stream = sys.stdin.buffer if args.input == "-" else Path(args.input).open("rb")  # noqa: SIM115
    try:
        for group in groups(data_lines(stream), args.lines_per_message):
            if args.format == "svmlight":
                value = b"".join(text + b"\n" for _, text in group)
                sent = len(group)
            else:
                examples = msgpack_examples(group)
                if not examples:
                    continue
                payload = examples[0] if args.lines_per_message == 1 else {"examples": examples}
                value = msgpack.packb(payload)
                sent = len(examples)
            key = str(group[0][0]).encode() if args.key_from_line_number else None
            producer.send(args.topic, value=value, key=key, headers=headers)
            messages += 1
            lines += sent
        producer.flush()
    finally:
        producer.close()
        if stream is not sys.stdin.buffer:
            stream.close()
    print(f"sent {messages} messages ({lines} lines) to topic {args.topic}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
