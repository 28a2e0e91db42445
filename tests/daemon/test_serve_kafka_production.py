"""Kafka as production writes it, with a real broker (Tansu) and real ``serve``
processes: topics in every codec written by librdkafka producers configured as
production configures them (idempotent, compressed, transactional), records of every
shape, and batches that cannot be read. Every example produced is learned exactly once,
counted against the input; what cannot be read is counted, dead-lettered and skipped,
and the rest of the partition goes on."""

from __future__ import annotations

import gzip
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from group_process import Member, records
from kafka.record.default_records import DefaultRecordBatch
from kafka_producers import (
    CODEC_NUMBERS,
    CODECS,
    bad_crc,
    codecs_on_the_broker,
    librdkafka,
    malformed,
    send_all,
    v2_batch,
    with_payload,
)
from serve_process import Serve, latest, read_topic
from services import Tansu, produce_raw
from test_serve_kafka import svmlight_messages
from test_serve_keyed import Keyed, models

from streamlearn.metrics import reason_label
from streamlearn.sources.kafka_codecs import REASONS

pytestmark = pytest.mark.kafka

#: lines of each message
LINES = 10


def names() -> tuple[str, ...]:
    return tuple(f"{kind}-{uuid.uuid4().hex[:8]}" for kind in ("t", "d", "g"))


def ends_of(offsets: dict[int, list[int]]) -> dict[str, int]:
    """Each partition's next offset after what was produced, from the delivery reports
    (Tansu's end offsets lag behind a batch of several records: its last base offset + 1)."""
    return {str(p): max(found) + 1 for p, found in offsets.items() if found}


def unreadable(serve: Serve) -> dict[str, float]:
    """The daemon's ``streamlearn_unreadable_total`` by reason, those above 0."""
    labels = [reason_label(reason) for reason in REASONS]
    counts = {label: serve.metric("streamlearn_unreadable_total", reason=label) or 0.0
              for label in labels}  # fmt: skip
    return {label: count for label, count in counts.items() if count}


#: checkpoints every second: the waits read what the latest one learned
QUICK = ("--checkpoint-interval", "1s")


# -- every codec, three ways of learning -------------------------------------------------


def test_a_daemon_learns_every_example_of_a_topic_in_each_codec_once(
    broker: Tansu, tmp_path: Path
) -> None:
    """A topic per codec, each read by a daemon of its own (the five run side by side)."""
    total = 2 * 60 * LINES
    started: dict[str, tuple[Serve, dict[int, list[int]]]] = {}
    for codec in CODECS:
        topic, _, _ = names()
        broker.create_topic(topic, 2)
        producer = librdkafka(broker, **{"compression.type": codec})
        offsets = {p: send_all(producer, topic, svmlight_messages(60, LINES, seed=p),
                               partition=p) for p in (0, 1)}  # fmt: skip
        assert codecs_on_the_broker(broker, topic, 0) == {CODEC_NUMBERS[codec]}
        started[codec] = Serve(broker, topic, tmp_path / codec, *QUICK), offsets
    for codec, (serve, offsets) in started.items():
        serve.wait_learned(total)
        assert unreadable(serve) == {}, codec
        assert serve.stop() == 0, serve.log_tail()
        final = latest(serve.directory)
        assert final is not None
        assert final["job"]["stream_examples"] == total, codec
        assert final["positions"] == ends_of(offsets) == {"0": 60, "1": 60}, codec
        assert "Traceback" not in serve.log_path.read_text()


def mixed_codec_topic(broker: Tansu, topic: str, messages: int, seed: int) -> dict[int, int]:
    """One partition per codec (partition i in ``CODECS[i]``), ``messages`` svmlight
    messages each, with keys named after the codec; the labelled lines of each."""
    broker.create_topic(topic, len(CODECS))
    lines = {}
    for partition, codec in enumerate(CODECS):
        producer = librdkafka(broker, **{"compression.type": codec})
        values = svmlight_messages(messages, LINES, seed=seed + partition)
        send_all(producer, topic, values, partition=partition, key=codec.encode())
        lines[partition] = messages * LINES
    assert codecs_on_the_broker(broker, topic, CODECS.index("zstd")) == {CODEC_NUMBERS["zstd"]}
    return lines


def test_a_learning_group_of_two_learns_every_codec_once(broker: Tansu, tmp_path: Path) -> None:
    topic, _, group = names()
    sync = f"s-{uuid.uuid4().hex[:8]}"
    lines = mixed_codec_topic(broker, topic, 40, seed=20)
    members = [Member(broker, topic, sync, group, tmp_path, "--sync-every", "200",
                      "--compression", "zstd") for _ in range(2)]  # fmt: skip

    def by_partition() -> dict[int, int] | None:
        latest_records = records(broker, sync)
        held: dict[int, int] = {}
        for record in latest_records.values():
            for partition, position in record.partitions.items():
                held[partition] = position.examples
        return held if held == lines else None

    members[0].wait(by_partition, "every partition learned, each once")
    for member in members:
        assert member.stop() == 0, member.log_tail()
        assert "Traceback" not in member.log_path.read_text()
    # the members' last records: every codec's partition learned whole, and once
    positions: dict[int, Any] = {}
    for record in records(broker, sync).values():
        positions.update(record.partitions)
        positions.update(record.released)
    assert {p: position.examples for p, position in positions.items()} == lines
    assert {p: position.offset for p, position in positions.items()} == {
        p: n // LINES for p, n in lines.items()
    }
    # its own records (kafka-python leaves a batch uncompressed when that is smaller)
    assert CODEC_NUMBERS["zstd"] in codecs_on_the_broker(broker, sync, 0)


def test_keyed_models_learn_every_codec_once(broker: Tansu, tmp_path: Path) -> None:
    topic, _, group = names()
    state = f"s-{uuid.uuid4().hex[:8]}"
    lines = mixed_codec_topic(broker, topic, 20, seed=40)
    keyed = Keyed(broker, topic, group, state, tmp_path, "--max-models", "2",
                  "--compression", "lz4")  # fmt: skip
    expected = {codec.encode(): lines[p] for p, codec in enumerate(CODECS)}

    def per_key() -> dict[bytes, int] | None:
        found = {key: record.examples for key, record in models(broker, state).items()}
        return found if found == expected else None

    keyed.until(per_key, "each codec's key learned whole, and once")
    assert keyed.stop() == 0, keyed.log_tail()
    assert {key: record.examples for key, record in models(broker, state).items()} == expected
    assert CODEC_NUMBERS["lz4"] in codecs_on_the_broker(broker, state, 0)  # its own records


def transactions(broker: Tansu, topic: str, rounds: list[tuple[int, bool]]) -> int:
    """A librdkafka transactional producer's ``rounds`` of (messages, commit?), zstd; the
    labelled lines committed. Aborted messages are flushed to the broker before the
    abort (they reach the log), and hold only lines of a feature of their own (1000)."""
    producer = librdkafka(broker, **{"transactional.id": f"tx-{uuid.uuid4().hex[:6]}",
                                     "compression.type": "zstd"})  # fmt: skip
    producer.init_transactions(30)
    committed = 0
    for round_, (count, commit) in enumerate(rounds):
        producer.begin_transaction()
        values = svmlight_messages(count, LINES, seed=60 + round_)
        if not commit:
            values = [b"+1 1000:1\n" * LINES] * count
        for value in values:
            producer.produce(topic, value=value, partition=0)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
            committed += count * LINES
        else:
            producer.abort_transaction(30)
    return committed


def test_a_transactional_producer_is_learned_once_and_its_markers_passed(
    broker: Tansu, tmp_path: Path
) -> None:
    """Committed transactions: every line learned once; the control records that end
    them never reach the parser, and the position moves past them (a marker at the end
    of the partition is no message waiting)."""
    topic, _, _ = names()
    broker.create_topic(topic, 1)
    committed = transactions(broker, topic, [(30, True), (20, True), (15, True)])
    serve = Serve(broker, topic, tmp_path / "tx", *QUICK, "--stall-timeout", "2s")
    serve.wait_learned(committed)
    serve.wait(lambda: serve.metric("streamlearn_consumer_lag_messages", partition="0") == 0,
               "no lag: the last marker passed")  # fmt: skip
    assert serve.answers("/readyz")
    assert serve.stop() == 0, serve.log_tail()
    final = latest(serve.directory)
    assert final is not None and final["job"]["stream_examples"] == committed
    assert final["positions"] == {"0": 30 + 1 + 20 + 1 + 15 + 1}  # past the three markers
    log = serve.log_path.read_text()
    assert "rejected" not in log and "no progress" not in log and "Traceback" not in log


def test_records_of_aborted_transactions_are_never_learned(broker: Tansu, tmp_path: Path) -> None:
    """``read_committed`` by default. It needs a broker that lists the aborted
    transactions in its fetch responses; Tansu 0.6 keeps the records of an aborted
    transaction in the log and lists none, so that no consumer can tell them (the
    fetcher's skipping of them is tested on batches built in memory,
    tests/sources/test_kafka_blocks.py)."""
    from kafka import KafkaConsumer, TopicPartition

    topic, _, _ = names()
    broker.create_topic(topic, 1)
    committed = transactions(broker, topic, [(30, True), (20, False), (15, True), (5, False)])
    stock = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                          isolation_level="read_committed")  # fmt: skip
    try:
        stock.assign([TopicPartition(topic, 0)])
        stock.seek_to_beginning()
        seen = [record.value for _ in range(20) for batch in stock.poll(200).values()
                for record in batch]  # fmt: skip
    finally:
        stock.close()
    if any(b"1000:1" in value for value in seen):
        pytest.skip("the broker lists no aborted transaction in its fetch responses (Tansu "
                    "0.6): read_committed consumers read aborted records there")  # fmt: skip
    serve = Serve(broker, topic, tmp_path / "aborted", *QUICK)
    serve.wait_learned(committed)
    assert serve.stop() == 0, serve.log_tail()
    final = latest(serve.directory)
    assert final is not None and final["job"]["stream_examples"] == committed


# -- every record shape ------------------------------------------------------------------


def test_every_record_shape_real_producers_write(broker: Tansu, tmp_path: Path) -> None:
    """Headers, null keys, keys, null values (tombstones) and empty values, from
    librdkafka and from kafka-python: every line learned once, the messages without an
    example counted by why."""
    topic, _, _ = names()
    broker.create_topic(topic, 1)
    lines = svmlight_messages(40, LINES, seed=70)
    producer = librdkafka(broker, **{"compression.type": "lz4"})
    send_all(producer, topic, lines[:10])  # null keys, no headers
    send_all(producer, topic, lines[10:20], key=b"tenant",
             headers=[("content-type", b"text/svmlight"), ("trace-id", b"abc")])  # fmt: skip
    send_all(producer, topic, [None, None, None], key=b"gone")  # tombstones
    send_all(producer, topic, [b"", b""])  # empty values
    broker.produce(topic, lines[20:30], partition=0, headers={"x-origin": b"py"})
    broker.produce(topic, [b""], partition=0, key=b"k")
    broker.produce(topic, lines[30:40], partition=0, key=b"k")
    total = 40 * LINES
    serve = Serve(broker, topic, tmp_path / "shapes", *QUICK)
    serve.wait_learned(total)
    assert serve.metric("streamlearn_skipped_messages_total", reason="null_value") == 3
    assert serve.metric("streamlearn_skipped_messages_total", reason="empty_value") == 3
    assert serve.metric("streamlearn_rejected_lines_total", reason="bad_message") == 0
    assert serve.stop() == 0, serve.log_tail()
    final = latest(serve.directory)
    assert final is not None
    assert final["job"]["stream_examples"] == total
    assert final["positions"] == {"0": 40 + 3 + 2 + 1}


def test_the_older_message_formats_where_the_broker_takes_them(
    broker: Tansu, tmp_path: Path
) -> None:
    """Message format v0 and v1 (Kafka before 0.11), written by kafka-python told to speak
    to an old broker. Tansu 0.6 refuses them (it reads every batch as v2 and fails its
    CRC): the fetcher's path for them is tested on batches built in memory
    (tests/sources/test_kafka_blocks.py)."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    topic, _, _ = names()
    broker.create_topic(topic, 1)
    old = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=(0, 10, 2),
                        compression_type="gzip", linger_ms=20)  # fmt: skip
    try:
        futures = [old.send(topic, value, partition=0) for value in svmlight_messages(20, 5, 80)]
        old.flush(30)
        try:
            [future.get(timeout=30) for future in futures]
        except KafkaError as error:
            pytest.skip(f"the broker refuses message format v1 ({error!r})")
    finally:
        old.close()
    serve = Serve(broker, topic, tmp_path / "old", *QUICK)
    serve.wait_learned(100)
    assert serve.stop() == 0, serve.log_tail()


# -- what cannot be read ---------------------------------------------------------------


def test_unreadable_batches_are_counted_dead_lettered_and_skipped(
    broker: Tansu, tmp_path: Path
) -> None:
    """Every kind of unreadable batch the broker accepts, between readable ones: each is
    counted once by its reason, logged with its partition, offsets and fix, sent raw to
    the dead-letter topic, and skipped; every readable line is learned once."""
    import lz4.frame
    import zstandard

    topic, dead, _ = names()
    for name in (topic, dead):
        broker.create_topic(name, 1)
    good = [b"+1 1:1 3:0.5\n-1 2:1 4:0.5\n"] * 5  # 10 lines a batch
    bomb_records = v2_batch([b"+1 1:1 " + b"0" * (64 << 20)])
    body = bomb_records[DefaultRecordBatch.HEADER_STRUCT.size :]
    junk = v2_batch([b"+1 1:1"] * 3)
    kinds = {
        "bad_crc": bad_crc(v2_batch(good)),
        "codec_failed": with_payload(junk, 3, b"not an lz4 frame at all"),
        "codec_failed/zstd": with_payload(junk, 4, b"not a zstd frame at all"),
        "codec_failed/gzip": with_payload(junk, 1, b"not a gzip stream at all"),
        "codec_failed/snappy": with_payload(junk, 2, b"\x05not snappy at all"),
        "batch_too_large": with_payload(bomb_records, 4, zstandard.ZstdCompressor().compress(body)),
        "batch_too_large/gzip": with_payload(bomb_records, 1, gzip.compress(body)),
        "batch_too_large/lz4": with_payload(bomb_records, 3, lz4.frame.compress(body)),
        "malformed_batch": malformed(v2_batch(good)),
        "record_too_large": v2_batch([good[0], b"+1 1:1 " + b"5" * 20_000, good[0]]),
    }
    readable = 0
    for kind in ["readable", *kinds, "readable"]:
        batch = v2_batch(good) if kind == "readable" else kinds[kind]
        error, _ = produce_raw(broker.bootstrap, topic, 0, batch)
        assert error == 0, (kind, error)
        readable += 10 if kind == "readable" else 0
        if kind == "record_too_large":
            readable += 4  # the two records around the large one
        if kind == "malformed_batch":
            readable += 8  # the four records before the one cut short
        produce_raw(broker.bootstrap, topic, 0, v2_batch(good))
        readable += 10
    expected = {}
    for kind in kinds:
        label = kind.split("/")[0]
        expected[label] = expected.get(label, 0) + 1
    serve = Serve(broker, topic, tmp_path / "bad", *QUICK, "--dead-letter-topic", dead,
                  "--compression", "gzip",
                  "--max-record-bytes", "10000", "--max-batch-bytes", str(8 << 20))  # fmt: skip
    serve.wait_learned(readable)
    assert unreadable(serve) == {k: float(v) for k, v in expected.items()}
    assert serve.stop() == 0, serve.log_tail()
    letters = read_topic(broker, dead, len(kinds))
    assert len(letters) == len(kinds)
    assert CODEC_NUMBERS["gzip"] in codecs_on_the_broker(broker, dead, 0)
    reasons = sorted(dict(letter.headers)["streamlearn-unreadable"].decode() for letter in letters)
    assert reasons == sorted(k.split("/")[0].replace("_", " ") for k in kinds)
    raw = {dict(letter.headers)["streamlearn-unreadable"]: letter.value for letter in letters}
    # the batch as fetched, byte for byte from its magic on (the broker sets its offsets)
    assert raw[b"bad crc"][16:] == kinds["bad_crc"][16:]
    assert raw[b"record too large"] == b"+1 1:1 " + b"5" * 20_000  # the record's value
    log = serve.log_path.read_text()
    for label in expected:
        said = [line for line in log.splitlines() if f": {label.replace('_', ' ')} (" in line]
        assert len(said) == 1, (label, said)  # once per reason and minute
        assert "partition 0 offset" in said[0] and "Fix: " in said[0]
    assert "Traceback" not in log


SITE_WITHOUT_LZ4 = "import sys\nsys.modules['lz4'] = None\nsys.modules['lz4.frame'] = None\n"


def test_a_codec_whose_library_is_missing_is_reported_with_the_fix(
    broker: Tansu, tmp_path: Path
) -> None:
    """A daemon whose environment lacks lz4 (a distribution's package without it): the
    lz4 batches are counted and logged with the package that reads them; the rest of
    the partition is learned."""
    topic, _, _ = names()
    broker.create_topic(topic, 1)
    send_all(librdkafka(broker, **{"compression.type": "gzip"}), topic,
             svmlight_messages(20, LINES, seed=90))  # fmt: skip
    send_all(librdkafka(broker, **{"compression.type": "lz4"}), topic,
             svmlight_messages(20, LINES, seed=91))  # fmt: skip
    send_all(librdkafka(broker, **{"compression.type": "zstd"}), topic,
             svmlight_messages(20, LINES, seed=92))  # fmt: skip
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITE_WITHOUT_LZ4)
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), previous]))
    try:
        serve = Serve(broker, topic, tmp_path / "nolz4", *QUICK)
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous
    serve.wait(lambda: unreadable(serve).get("codec_missing", 0) >= 1, "the lz4 batches")
    serve.wait_learned(2 * 20 * LINES)
    assert serve.stop() == 0, serve.log_tail()
    log = serve.log_path.read_text()
    assert "codec missing (lz4 needs the package lz4)" in log
    assert "(pip install lz4)" in log


# -- a partition that makes no progress ----------------------------------------------------


def test_a_partition_that_makes_no_progress_turns_readyz_false(tmp_path: Path) -> None:
    """Messages wait (the lag is known) and the position does not move: a frozen broker
    under a daemon reading a backlog in small fetches. After --stall-timeout the daemon
    says so in its log, /readyz and streamlearn_stalled_partitions; once the broker
    answers again, it goes on and is ready again."""
    from kafka import KafkaProducer

    broker = Tansu()
    try:
        topic, _, _ = names()
        broker.create_topic(topic, 1)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0, batch_size=1)
        line = b"+1 1:1 2:0.5 3:0.25\n-1 4:1 5:0.5\n" * 5
        for _ in range(4000):  # one record a batch: a fetch of 512 bytes takes one or two
            producer.send(topic, line, partition=0)
        producer.flush(60)
        producer.close()
        small = ("--consumer-option", "max_partition_fetch_bytes=512",
                 "--consumer-option", "fetch_max_bytes=512")  # fmt: skip
        serve = Serve(broker, topic, tmp_path / "stall", *QUICK, "--stall-timeout", "2s", *small)
        serve.wait(lambda: (serve.metric("streamlearn_consumer_lag_messages", partition="0")
                            or 0) > 500, "a backlog being read")  # fmt: skip
        broker.pause()
        try:
            serve.wait(lambda: serve.metric("streamlearn_stalled_partitions") == 1, "a stall")
            assert not serve.answers("/readyz")
            assert "partition 0 makes no progress" in serve.log_tail()
        finally:
            broker.resume()
        serve.wait(lambda: serve.metric("streamlearn_stalled_partitions") == 0, "progress again")
        serve.wait(lambda: serve.answers("/readyz"), "ready again")
        assert serve.stop() == 0, serve.log_tail()
        assert "partition 0 makes progress again" in serve.log_path.read_text()
    finally:
        broker.stop()
