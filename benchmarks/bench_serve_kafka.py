"""End to end from Kafka into the model: `streamlearn serve --source kafka` against the raw
kafka-python consumer on the same topic, both measured in the same run.

A Tansu broker (the Kafka-compatible broker of tests/services.py) is started on a free port
and two topics are filled with lines of adult/a9a.train, repeated to ``--examples`` lines
with 100 lines per message, and to ``--single-examples`` lines with one line per message
(producing one message per line with kafka-python is slow; the producing time is not
measured). For each topic:

- the anchor: a KafkaConsumer with every partition assigned by hand, read from the start,
  counting lines (b"\\n" in each value), timed from the first record to the last;
- the daemon's own consumer without learning: a KafkaSource (record batches decoded by the
  compiled kernel into columns, see streamlearn/sources/kafka_blocks.py) polled with the
  daemon's budget of 1000 messages, its values joined and their lines counted as the
  decoder does before parsing, timed the same way (its group join excluded);
- the daemon: ``python -m streamlearn serve --algo pdm --eps 0.05 --source kafka ...
  --idle-replay off`` as a subprocess, its /metrics scraped every ``--scrape-interval`` s;
  its rate is the examples learned between the first scrape that shows any learned example
  and the first that shows all of them, over the time between those scrapes, so the ~5 s
  consumer-group join and the numba start-up are excluded. Its resident memory (VmRSS) is
  read once all are learned, just before SIGTERM, and its exit code must be 0.

CPU seconds (all threads, the broker excluded) over the same windows are printed beside
each rate: on this shared 2-core machine the rates follow the load of other processes,
the CPU cost per line does much less.

Targets: at least 1M examples/s with 100 lines per message and 150k/s with
one example per message, learning included, measured with ``--replay-every 0`` (online
learning alone; by default the daemon also replays, in a share of the time while it is
behind, which bench_endless.py compares with this).

The three are interleaved, ``--repeats`` times each in turn; medians and ratios are printed.

``--one-vs-rest`` measures ``serve --one-vs-rest`` instead, on yeast's label sets (14
labels, 103 dense features a line, lines about eight times as long as a9a's): a bank of
14 learners over one buffer. The targets are for one binary learner, so none is
printed then.

Run: .venv/bin/python benchmarks/bench_serve_kafka.py [--examples N] [--single-examples N]
[--one-vs-rest]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from _common import data_file

TARGET_BATCHED = 1_000_000.0  # examples/s, 100 lines per message
TARGET_SINGLE = 150_000.0  # examples/s, one line per message
LEARNED = re.compile(rb'^streamlearn_examples_total\{outcome="learned"\} (\S+)$', re.M)


def services() -> ModuleType:
    """tests/services.py (Tansu, free_port), imported from beside this directory."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import services as module

    return module


def stream_lines(lines: list[bytes], n: int) -> list[bytes]:
    """The first ``n`` lines of ``lines`` repeated, each ending with a newline."""
    return [lines[i % len(lines)] for i in range(n)]


def produce(bootstrap: str, topic: str, values: list[bytes]) -> float:
    """Send ``values`` to partition 0 of ``topic`` and wait for all; the seconds it took."""
    from kafka import KafkaProducer

    start = time.perf_counter()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, batch_size=1 << 20, acks=1)
    try:
        for value in values:
            producer.send(topic, value=value, partition=0)
        producer.flush(timeout=300)
    finally:
        producer.close()
    return time.perf_counter() - start


def raw_consumer(
    bootstrap: str, topic: str, expected_lines: int
) -> tuple[int, int, float, float, float]:
    """(messages, lines, seconds from first record to last, seconds from first poll to last,
    CPU seconds of this process from first record to last) of a plain KafkaConsumer."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        max_poll_records=1_000_000,
        request_timeout_ms=30_000,
    )
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        consumer.seek_to_beginning()
        messages = lines = 0
        first = 0.0
        polling = time.perf_counter()
        deadline = time.monotonic() + 300
        while lines < expected_lines and time.monotonic() < deadline:
            batches = consumer.poll(timeout_ms=500)
            if batches and not first:
                first = time.perf_counter()
                cpu = time.process_time()
            for records in batches.values():
                messages += len(records)
                for record in records:
                    lines += record.value.count(b"\n")
        done = time.perf_counter()
        return messages, lines, done - first, done - polling, time.process_time() - cpu
    finally:
        consumer.close(autocommit=False)


def block_consumer(
    bootstrap: str, topic: str, expected_lines: int
) -> tuple[int, int, float, float]:
    """(messages, lines, seconds and CPU seconds from the first message to the last) of the
    daemon's KafkaSource, without learning: values joined and lines counted as the decoder
    does."""
    import numpy as np

    from streamlearn.parse.messages import joined_values
    from streamlearn.sources.kafka import KafkaSource

    source = KafkaSource(bootstrap, topic, f"bench-blocks-{uuid.uuid4().hex[:8]}")
    try:
        messages = lines = 0
        first = 0.0
        deadline = time.monotonic() + 300
        while lines < expected_lines and time.monotonic() < deadline:
            batch = source.poll(0.5, 1000)
            if len(batch) and not first:
                first = time.perf_counter()
                cpu = time.process_time()
            messages += len(batch)
            joined, _ = joined_values(batch.data, batch.spans)
            lines += int(np.count_nonzero(joined == 10))
        if not source.block_records:
            print("  (the KafkaSource read records one by one: kafka-python's internals differ)")
        return messages, lines, time.perf_counter() - first, time.process_time() - cpu
    finally:
        source.close()


def learned(metrics_url: str) -> int | None:
    """streamlearn_examples_total{outcome="learned"} of one scrape, or None if none yet."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=2) as answer:
            body = answer.read()
    except OSError:
        return None
    match = LEARNED.search(body)
    return int(float(match.group(1))) if match else None


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def vm_rss_mb(pid: int) -> float:
    """VmRSS of process ``pid`` in MB (10^6 bytes)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / 1e6
    return float("nan")


def daemon(
    bootstrap: str, topic: str, expected: int, metrics_port: int, interval: float
) -> dict[str, Any]:
    """Run the daemon on ``topic`` until ``expected`` examples are learned; its figures."""
    command = [
        sys.executable,
        "-m",
        "streamlearn",
        "serve",
        "--algo",
        "pdm",
        "--eps",
        "0.05",
        "--source",
        "kafka",
        "--bootstrap-servers",
        bootstrap,
        "--topic",
        topic,
        "--group",
        f"bench-{uuid.uuid4().hex[:8]}",
        "--idle-replay",
        "off",
        "--checkpoint-every",
        "100000000",
        "--checkpoint-interval",
        "1h",
        "--metrics-addr",
        f"127.0.0.1:{metrics_port}",
    ]
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    with tempfile.TemporaryFile() as log:
        launched = time.perf_counter()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            first: tuple[float, int] | None = None
            last: tuple[float, int] | None = None
            cpu_first = cpu_last = 0.0
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and process.poll() is None:
                count = learned(url)
                now = time.perf_counter()
                if count:
                    cpu_now = cpu_seconds(process.pid)
                    if first is None:
                        first, cpu_first = (now, count), cpu_now
                    last, cpu_last = (now, count), cpu_now
                    if count >= expected:
                        break
                time.sleep(interval)
            rss = vm_rss_mb(process.pid) if process.poll() is None else float("nan")
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait(timeout=10)
        log.seek(0)
        tail = log.read().decode("utf-8", errors="replace")[-3000:]
    if first is None or last is None or last[1] < expected:
        print(f"daemon did not learn {expected} examples (last: {last}); its output:\n{tail}")
    window = (last[0] - first[0]) if first and last else 0.0
    window_examples = (last[1] - first[1]) if first and last else 0
    return {
        "learned": last[1] if last else 0,
        "first_seen": (first[0] - launched) if first else float("nan"),
        "first_count": first[1] if first else 0,
        "window": window,
        "rate": window_examples / window if window > 0 else float("nan"),
        "rss_mb": rss,
        "cpu": cpu_last - cpu_first,
        "exit_code": code,
        "tail": tail,
    }


def layout(
    tansu: Any,
    free_port: Any,
    name: str,
    lines: list[bytes],
    examples: int,
    per_message: int,
    target: float | None,
    interval: float,
    repeats: int,
) -> None:
    """Fill a topic with ``examples`` lines, ``per_message`` a message, and measure both."""
    model = ", one-vs-rest" if os.environ.get("STREAMLEARN_ONE_VS_REST") == "true" else ""
    stream = stream_lines(lines, examples)
    values = [b"".join(stream[i : i + per_message]) for i in range(0, examples, per_message)]
    topic = f"bench-{name}-{uuid.uuid4().hex[:8]}"
    tansu.create_topic(topic, 1)
    seconds = produce(tansu.bootstrap, topic, values)
    end = sum(tansu.end_offsets(topic).values())
    print(
        f"\n== {name}: {examples:,} examples, {per_message} per message, {len(values):,} "
        f"messages on 1 partition (produced in {seconds:.1f} s, not measured; "
        f"Tansu end offset {end:,})"
    )
    raw_rates: list[float] = []
    block_rates: list[float] = []
    daemon_rates: list[float] = []
    for repeat in range(repeats):
        print(f"-- repeat {repeat + 1} of {repeats}")
        messages, counted, raw_seconds, poll_seconds, cpu = raw_consumer(
            tansu.bootstrap, topic, examples
        )
        raw_rates.append(counted / raw_seconds)
        print(
            f"raw kafka-python consumer (anchor): {counted:,} lines in {messages:,} messages, "
            f"{raw_seconds:.2f} s first record to last: {raw_rates[-1]:,.0f} lines/s "
            f"({counted / poll_seconds:,.0f} lines/s counting from the first poll, "
            f"{poll_seconds:.2f} s); CPU {cpu:.2f} s, {cpu / counted * 1e6:.2f} us a line"
        )
        messages, counted, block_seconds, cpu = block_consumer(tansu.bootstrap, topic, examples)
        block_rates.append(counted / block_seconds)
        print(
            f"streamlearn KafkaSource, no learning: {counted:,} lines in {messages:,} messages, "
            f"{block_seconds:.2f} s first message to last: {block_rates[-1]:,.0f} lines/s "
            f"({block_rates[-1] / raw_rates[-1]:.3g}x the raw consumer); CPU {cpu:.2f} s, "
            f"{cpu / counted * 1e6:.2f} us a line"
        )
        result = daemon(tansu.bootstrap, topic, examples, free_port(), interval)
        daemon_rates.append(result["rate"])
        window_examples = max(result["learned"] - result["first_count"], 1)
        print(
            f"streamlearn serve (pdm, eps 0.05{model}): {result['learned']:,} learned; "
            "first learned "
            f"example seen {result['first_seen']:.1f} s after launch (group join + numba "
            f"start-up, excluded); {result['learned'] - result['first_count']:,} learned in the "
            f"next {result['window']:.2f} s: {result['rate']:,.0f} examples/s "
            f"({result['rate'] / raw_rates[-1]:.3g}x the raw consumer); CPU in that window "
            f"{result['cpu']:.2f} s, {result['cpu'] / window_examples * 1e6:.2f} us an example"
        )
        print(
            f"  resident memory (VmRSS) after all learned, default buffer (100000 examples): "
            f"{result['rss_mb']:,.0f} MB; exit code after SIGTERM: {result['exit_code']}"
            + (" (ok)" if result["exit_code"] == 0 else " (NOT 0)")
        )
        if result["exit_code"] != 0:
            print(result["tail"])
    raw, blocks, rate = (statistics.median(r) for r in (raw_rates, block_rates, daemon_rates))
    print(
        f"medians of {repeats}: raw consumer {raw:,.0f} lines/s; KafkaSource without learning "
        f"{blocks:,.0f} lines/s ({blocks / raw:.3g}x raw); daemon {rate:,.0f} examples/s "
        f"({rate / raw:.3g}x raw)"
    )
    if target is not None:
        print(f"  target {target:,.0f} examples/s: daemon at {rate / target:.3g}x of target")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--examples", type=int, default=1_000_000, help="100 lines a message")
    parser.add_argument("--single-examples", type=int, default=1_000_000, help="1 a message")
    parser.add_argument("--scrape-interval", type=float, default=0.1, help="seconds")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs of each")
    parser.add_argument(
        "--one-vs-rest",
        action="store_true",
        help="serve --one-vs-rest on yeast's label sets (14 labels, 103 dense features) instead",
    )
    parser.add_argument(
        "--replay-every",
        type=int,
        default=None,
        help="the daemon's --replay-every (by default none: it replays in the time ingestion "
        "leaves; 0 measures online learning alone)",
    )
    args = parser.parse_args()
    if args.replay_every is None:
        print("daemon: its default replay (a share of the time while behind the stream)")
    else:
        os.environ["STREAMLEARN_REPLAY_EVERY"] = str(args.replay_every)  # the daemon inherits it
        print(f"daemon: --replay-every {args.replay_every} (replay passes over the buffer)")

    path = data_file("yeast/yeast.all" if args.one_vs_rest else "adult/a9a.train")
    targets: tuple[float | None, float | None] = (TARGET_BATCHED, TARGET_SINGLE)
    if args.one_vs_rest:  # the targets are for one binary learner
        os.environ["STREAMLEARN_ONE_VS_REST"] = "true"
        targets = (None, None)
    if args.replay_every != 0:  # and for online learning, without replay passes
        print("the targets are for --replay-every 0: none printed")
        targets = (None, None)
    lines = [line.rstrip(b"\r\n") + b"\n" for line in path.read_bytes().splitlines() if line]
    module = services()
    print(
        f"{path.name}: {len(lines):,} lines, repeated; daemon rates exclude the group join and "
        f"numba start-up (timed from the first scrape showing a learned example, every "
        f"{args.scrape_interval} s, to the first showing all)"
    )
    tansu = module.Tansu()
    try:
        layout(
            tansu,
            module.free_port,
            "batched",
            lines,
            args.examples,
            100,
            targets[0],
            args.scrape_interval,
            args.repeats,
        )
        layout(
            tansu,
            module.free_port,
            "single",
            lines,
            args.single_examples,
            1,
            targets[1],
            args.scrape_interval,
            args.repeats,
        )
    finally:
        tansu.stop()


if __name__ == "__main__":
    main()
