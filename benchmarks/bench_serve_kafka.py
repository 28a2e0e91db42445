"""End to end from Kafka into the model: `streamlearn serve --source kafka` against the raw
kafka-python consumer on the same topic, both measured in the same run, with record
batches uncompressed and compressed.

A Tansu broker (the Kafka-compatible broker of tests/services.py) is started on a free port
and topics are filled with lines of adult/a9a.train, repeated to ``--examples`` lines with
100 lines per message, and to ``--single-examples`` lines with one line per message
(producing one message per line with kafka-python is slow; the producing time is not
measured). Either layout is skipped when its count is 0.

With 100 lines per message there is one topic per codec of ``--codecs`` (by default none,
lz4 and zstd; gzip and snappy can be named too): the same messages, produced by
kafka-python's KafkaProducer with ``compression_type`` the codec (None for none), and
for every codec ``linger_ms=50, batch_size=1 MiB, acks=1``, so that the batches hold the
same records (kafka-python fills a batch to 1 MiB of uncompressed records, then
compresses it). Each topic is then read once, untimed, to check what the broker holds:
the number of record batches, their bytes (headers and records, as compressed) per line,
and the compression type their attributes say. The one-line-a-message topic is
uncompressed only. For each topic:

- the anchor: a KafkaConsumer with every partition assigned by hand, read from the start,
  counting lines (b"\\n" in each value); its rate is the lines after its first poll that
  returns records, over the time from the end of that poll to the last, as the daemon's
  rate below leaves out what its first scrape shows (a fetch of 1 MiB of compressed
  batches holds many more lines than one of uncompressed ones);
- the daemon's own consumer without learning: a KafkaSource (record batches decompressed
  by streamlearn/sources/kafka_codecs.py and decoded by the compiled kernel into columns,
  see streamlearn/sources/kafka_blocks.py) polled with the daemon's budget of 1000
  messages, its values joined and their lines counted as the decoder does before parsing,
  timed the same way (its group join, in its first poll, excluded);
- the daemon: ``python -m streamlearn serve --algo pdm --eps 0.05 --source kafka ...
  --idle-replay off`` as a subprocess, its /metrics scraped every ``--scrape-interval`` s;
  its rate is the examples learned between the first scrape that shows any learned example
  and the first that shows all of them, over the time between those scrapes, so the ~5 s
  consumer-group join and the numba start-up are excluded. Its resident memory (VmRSS) is
  read once all are learned, just before SIGTERM, and its exit code must be 0. If what it
  learned stops growing for a minute (three after launch before the first), it is stopped
  and the end of its output printed, with its streamlearn_unreadable_total counts.

CPU seconds (all threads, the broker excluded) over the same windows are printed beside
each rate: on this shared 2-core machine the rates follow the load of other processes,
the CPU cost per line does much less.

Targets: at least 1M examples/s with 100 lines per message and 150k/s with
one example per message, learning included, measured with ``--replay-every 0`` (online
learning alone; by default the daemon also replays, in a share of the time while it is
behind, which bench_endless.py compares with this).

The three are interleaved, ``--repeats`` times each in turn, and so are the codecs: each
repeat measures all three on every codec's topic before the next repeat. For each layout
a table gives, per codec, the medians over the repeats of the raw consumer's lines/s, the
KafkaSource's lines/s and the daemon's examples/s; the daemon / raw consumer ratio (the
median of the ratios of each repeat, and their range); and the CPU per example of the
daemon and per line of the raw consumer. The uncompressed row is the anchor of the
compressed ones: below the table, each codec's daemon rate and CPU per example against it.
A rate is n/a when everything came in the first poll or scrape (too few examples).

``--one-vs-rest`` measures ``serve --one-vs-rest`` instead, on yeast's label sets (14
labels, 103 dense features a line, lines about eight times as long as a9a's): a bank of
14 learners over one buffer, on uncompressed topics only (``--codecs`` is ignored). The
targets are for one binary learner, so none is printed then.

Run: .venv/bin/python benchmarks/bench_serve_kafka.py [--examples N] [--single-examples N]
[--codecs none,lz4,zstd] [--one-vs-rest]
"""

from __future__ import annotations

import argparse
import math
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
UNREADABLE = re.compile(rb'^streamlearn_unreadable_total\{reason="([^"]*)"\} (\S+)$', re.M)
#: the codecs a topic can be produced with, by the compression type of a batch's attributes
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
LINGER_MS = 50  # the producer's, for every codec
BATCH_SIZE = 1 << 20  # bytes of uncompressed records a batch is filled to, for every codec
STALLED = 60.0  # seconds without a newly learned example before the daemon is given up
STARTING = 180.0  # seconds after launch before the first learned example, at most


def services() -> ModuleType:
    """tests/services.py (Tansu, free_port), imported from beside this directory."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import services as module

    return module


def codec_names(text: str) -> list[str]:
    """The codecs of ``--codecs``: names of :data:`CODECS`, comma-separated, each once."""
    names = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in CODECS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or 'none given'}: the codecs are {', '.join(CODECS)}"
        )
    return names


def stream_lines(lines: list[bytes], n: int) -> list[bytes]:
    """The first ``n`` lines of ``lines`` repeated, each ending with a newline."""
    return [lines[i % len(lines)] for i in range(n)]


def produce(bootstrap: str, topic: str, values: list[bytes], codec: str = "none") -> float:
    """Send ``values`` to partition 0 of ``topic``, in record batches compressed with
    ``codec`` (one of :data:`CODECS`), and wait for all; the seconds it took."""
    from kafka import KafkaProducer

    start = time.perf_counter()
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=LINGER_MS,
        batch_size=BATCH_SIZE,
        acks=1,
        compression_type=None if codec == "none" else codec,
    )
    try:
        for value in values:
            producer.send(topic, value=value, partition=0)
        producer.flush(timeout=300)
    finally:
        producer.close()
    return time.perf_counter() - start


def stored_batches(bootstrap: str, topic: str, messages: int) -> tuple[int, int, set[int]]:
    """(record batches, their bytes, the compression types of their attributes) of
    ``topic`` as the broker hands them out: read once with a KafkaConsumer, each batch
    counted (once, by its base offset: one partition) as kafka-python's MemoryRecords
    yields it; its bytes are its header and its records as stored, compressed when they
    are."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.record.memory_records import MemoryRecords

    seen: dict[int, tuple[int, int]] = {}  # base offset: (bytes, compression type)
    stock = MemoryRecords.next_batch

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        batch = stock(self, *args, **kwargs)
        if batch is not None and batch.magic == 2:
            seen[batch.base_offset] = (batch.size_in_bytes, batch.compression_type)
        return batch

    MemoryRecords.next_batch = counting
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=30_000
    )
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        consumer.seek_to_beginning()
        read = 0
        deadline = time.monotonic() + 300
        while read < messages and time.monotonic() < deadline:
            read += sum(len(records) for records in consumer.poll(timeout_ms=500).values())
    finally:
        MemoryRecords.next_batch = stock
        consumer.close(autocommit=False)
    return (
        len(seen),
        sum(size for size, _ in seen.values()),
        {kind for _, kind in seen.values()},
    )


def raw_consumer(bootstrap: str, topic: str, expected_lines: int) -> dict[str, float]:
    """A plain KafkaConsumer reading ``topic``: its messages and lines; the lines after its
    first poll that returned records (``timed``) and the seconds and CPU seconds of this
    process from the end of that poll to the last (as the daemon's rate leaves out what its
    first scrape shows); and the seconds from the first poll to the last."""
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
        messages = lines = early = 0
        first = cpu = 0.0
        polling = time.perf_counter()
        deadline = time.monotonic() + 300
        while lines < expected_lines and time.monotonic() < deadline:
            batches = consumer.poll(timeout_ms=500)
            for records in batches.values():
                messages += len(records)
                for record in records:
                    lines += record.value.count(b"\n")
            if batches and not first:
                early = lines
                first = time.perf_counter()
                cpu = time.process_time()
        done = time.perf_counter()
        return {
            "messages": messages,
            "lines": lines,
            "timed": lines - early,
            "seconds": done - first,
            "cpu": time.process_time() - cpu,
            "polling": done - polling,
        }
    finally:
        consumer.close(autocommit=False)


def block_consumer(bootstrap: str, topic: str, expected_lines: int) -> dict[str, float]:
    """The daemon's KafkaSource reading ``topic`` without learning, its values joined and
    their lines counted as the decoder does: its messages and lines; the lines after its
    first poll that returned messages (``timed``, its group join before) and the seconds
    and CPU seconds from the end of that poll to the last."""
    import numpy as np

    from streamlearn.parse.messages import joined_values
    from streamlearn.sources.kafka import KafkaSource

    source = KafkaSource(bootstrap, topic, f"bench-blocks-{uuid.uuid4().hex[:8]}")
    try:
        messages = lines = early = 0
        first = cpu = 0.0
        deadline = time.monotonic() + 300
        while lines < expected_lines and time.monotonic() < deadline:
            batch = source.poll(0.5, 1000)
            messages += len(batch)
            joined, _ = joined_values(batch.data, batch.spans)
            lines += int(np.count_nonzero(joined == 10))
            if len(batch) and not first:
                early = lines
                first = time.perf_counter()
                cpu = time.process_time()
        if not source.block_records:
            print("  (the KafkaSource read records one by one: kafka-python's internals differ)")
        return {
            "messages": messages,
            "lines": lines,
            "timed": lines - early,
            "seconds": time.perf_counter() - first,
            "cpu": time.process_time() - cpu,
        }
    finally:
        source.close()


def per(count: float, seconds: float) -> float:
    """``count`` / ``seconds``, or NaN when nothing was counted (all came in the first poll
    or scrape: too few examples to time)."""
    return count / seconds if count > 0 and seconds > 0 else float("nan")


def micro(cpu: float, count: float) -> float:
    """Microseconds of ``cpu`` seconds for each of ``count``, or NaN when none."""
    return cpu / count * 1e6 if count > 0 else float("nan")


def scrape(metrics_url: str) -> bytes | None:
    """The body of one scrape of /metrics, or None if the daemon does not answer yet."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=2) as answer:
            return bytes(answer.read())
    except OSError:
        return None


def learned(body: bytes | None) -> int | None:
    """streamlearn_examples_total{outcome="learned"} of one scrape, or None if none yet."""
    match = LEARNED.search(body) if body else None
    return int(float(match.group(1))) if match else None


def unreadable(body: bytes | None) -> dict[str, int]:
    """The nonzero streamlearn_unreadable_total counts of one scrape, by reason."""
    found = UNREADABLE.findall(body) if body else []
    counts = {reason.decode(): int(float(value)) for reason, value in found}
    return {reason: n for reason, n in counts.items() if n}


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
    """Run the daemon on ``topic`` until ``expected`` examples are learned (or until it
    stalls, see :data:`STALLED`); its figures."""
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
    body: bytes | None = None
    stalled = ""
    with tempfile.TemporaryFile() as log:
        launched = time.perf_counter()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            first: tuple[float, int] | None = None
            last: tuple[float, int] | None = None
            cpu_first = cpu_last = 0.0
            grown, patience = launched, STARTING
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and process.poll() is None:
                body = scrape(url) or body
                count = learned(body)
                now = time.perf_counter()
                if count:
                    cpu_now = cpu_seconds(process.pid)
                    if first is None:
                        first, cpu_first = (now, count), cpu_now
                    if last is None or count > last[1]:
                        grown, patience = now, STALLED
                    last, cpu_last = (now, count), cpu_now
                    if count >= expected:
                        break
                if now - grown > patience:
                    stalled = f"nothing newly learned for {now - grown:.0f} s: stopped"
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
    skipped = unreadable(body)
    if first is None or last is None or last[1] < expected:
        print(
            f"daemon did not learn {expected} examples (last: {last}; {stalled or 'exited'}; "
            f"unreadable: {skipped or 'none'}); its output:\n{tail}"
        )
    elif skipped:
        print(f"  the daemon counted unreadable batches or records: {skipped}")
    window = (last[0] - first[0]) if first and last else 0.0
    window_examples = (last[1] - first[1]) if first and last else 0
    return {
        "learned": last[1] if last else 0,
        "first_seen": (first[0] - launched) if first else float("nan"),
        "first_count": first[1] if first else 0,
        "window": window,
        "rate": per(window_examples, window),
        "rss_mb": rss,
        "cpu": cpu_last - cpu_first,
        "exit_code": code,
        "unreadable": skipped,
        "tail": tail,
    }


def fill(tansu: Any, name: str, values: list[bytes], examples: int, codec: str) -> dict[str, Any]:
    """A new topic holding ``values`` in batches compressed with ``codec``; its name and
    the bytes of its batches on the broker, printed with how they were found."""
    topic = f"bench-{name}-{codec}-{uuid.uuid4().hex[:8]}"
    tansu.create_topic(topic, 1)
    seconds = produce(tansu.bootstrap, topic, values, codec)
    end = sum(tansu.end_offsets(topic).values())
    batches, size, kinds = stored_batches(tansu.bootstrap, topic, len(values))
    names = ", ".join(sorted(n for n, kind in CODECS.items() if kind in kinds)) or "none read"
    print(
        f"{codec}: produced in {seconds:.1f} s (not measured), Tansu end offset {end:,}; "
        f"{batches:,} record batches, {size / 1e6:,.1f} MB, {size / examples:.1f} bytes a "
        f"line, compressed with: {names}"
        + ("" if kinds == {CODECS[codec]} else f" (NOT only {codec}: check the producer)")
    )
    return {"codec": codec, "topic": topic, "bytes": size}


def measure(
    tansu: Any, free_port: Any, topic: str, examples: int, interval: float, label: str
) -> dict[str, float]:
    """The raw consumer, the KafkaSource and the daemon on ``topic``, one after the other;
    the figures of each, printed as they come."""
    model = ", one-vs-rest" if os.environ.get("STREAMLEARN_ONE_VS_REST") == "true" else ""
    raw = raw_consumer(tansu.bootstrap, topic, examples)
    raw_rate = per(raw["timed"], raw["seconds"])
    raw_cpu = micro(raw["cpu"], raw["timed"])
    print(
        f"{label}raw kafka-python consumer (anchor): {raw['lines']:,} lines in "
        f"{raw['messages']:,} messages; {raw['timed']:,} after the first poll in "
        f"{raw['seconds']:.2f} s: {raw_rate:,.0f} lines/s ({raw['lines'] / raw['polling']:,.0f} "
        f"lines/s all counted from the first poll, {raw['polling']:.2f} s); CPU "
        f"{raw['cpu']:.2f} s, {raw_cpu:.2f} us a line"
    )
    blocks = block_consumer(tansu.bootstrap, topic, examples)
    block_rate = per(blocks["timed"], blocks["seconds"])
    print(
        f"{label}streamlearn KafkaSource, no learning: {blocks['lines']:,} lines in "
        f"{blocks['messages']:,} messages; {blocks['timed']:,} after the first poll in "
        f"{blocks['seconds']:.2f} s: {block_rate:,.0f} lines/s ({block_rate / raw_rate:.3g}x "
        f"the raw consumer); CPU {blocks['cpu']:.2f} s, "
        f"{micro(blocks['cpu'], blocks['timed']):.2f} us a line"
    )
    result = daemon(tansu.bootstrap, topic, examples, free_port(), interval)
    daemon_cpu = micro(result["cpu"], result["learned"] - result["first_count"])
    print(
        f"{label}streamlearn serve (pdm, eps 0.05{model}): {result['learned']:,} learned; "
        "first learned "
        f"example seen {result['first_seen']:.1f} s after launch (group join + numba "
        f"start-up, excluded); {result['learned'] - result['first_count']:,} learned in the "
        f"next {result['window']:.2f} s: {result['rate']:,.0f} examples/s "
        f"({result['rate'] / raw_rate:.3g}x the raw consumer); CPU in that window "
        f"{result['cpu']:.2f} s, {daemon_cpu:.2f} us an example"
    )
    print(
        f"  resident memory (VmRSS) after all learned, default buffer (100000 examples): "
        f"{result['rss_mb']:,.0f} MB; exit code after SIGTERM: {result['exit_code']}"
        + (" (ok)" if result["exit_code"] == 0 else " (NOT 0)")
    )
    if result["exit_code"] != 0:
        print(result["tail"])
    return {
        "raw": raw_rate,
        "raw_cpu": raw_cpu,
        "source": block_rate,
        "daemon": result["rate"],
        "daemon_cpu": daemon_cpu,
        "ratio": result["rate"] / raw_rate,
        "exit_code": result["exit_code"],
        "complete": float(result["learned"] >= examples),
    }


def median(values: list[float]) -> float:
    """The median of the values that are not NaN, or NaN when all are."""
    kept = [value for value in values if not math.isnan(value)]
    return float(statistics.median(kept)) if kept else float("nan")


def shown(value: float, spec: str, width: int) -> str:
    """``value`` formatted with ``spec``, right-aligned in ``width``; n/a when NaN."""
    return f"{'n/a' if math.isnan(value) else format(value, spec):>{width}}"


def table(
    topics: list[dict[str, Any]], runs: dict[str, list[dict[str, float]]], examples: int
) -> dict[str, dict[str, float]]:
    """Print the medians over the repeats of each codec, one row each, and the compressed
    rows against the uncompressed one; the medians."""
    medians = {
        codec: {key: median([run[key] for run in done]) for key in done[0]}
        for codec, done in runs.items()
    }
    header = (
        f"{'codec':<7}{'B/line':>7}{'raw lines/s':>13}{'source lines/s':>16}"
        f"{'daemon ex/s':>13}  {'daemon/raw [range]':<21}{'us/ex':>6}{'raw us/line':>12}  exit"
    )
    print(header)
    print("-" * len(header))
    for topic in topics:
        codec = topic["codec"]
        m = medians[codec]
        ratios = [run["ratio"] for run in runs[codec] if not math.isnan(run["ratio"])]
        codes = ",".join(str(int(run["exit_code"])) for run in runs[codec])
        spread = f"{m['ratio']:.3f} [{min(ratios):.3f}-{max(ratios):.3f}]" if ratios else "n/a"
        print(
            f"{codec:<7}{topic['bytes'] / examples:>7.1f}{shown(m['raw'], ',.0f', 13)}"
            f"{shown(m['source'], ',.0f', 16)}{shown(m['daemon'], ',.0f', 13)}  {spread:<21}"
            f"{shown(m['daemon_cpu'], '.2f', 6)}{shown(m['raw_cpu'], '.2f', 12)}  {codes}"
            + ("" if all(run["complete"] for run in runs[codec]) else " INCOMPLETE")
        )
    anchor = medians.get("none")
    for codec, m in medians.items():
        if anchor is not None and codec != "none":
            print(
                f"  {codec} against none: daemon {m['daemon'] / anchor['daemon']:.3g}x the "
                f"examples/s, {m['daemon_cpu'] - anchor['daemon_cpu']:+.2f} us of CPU an "
                f"example; raw consumer {m['raw'] / anchor['raw']:.3g}x the lines/s, "
                f"{m['raw_cpu'] - anchor['raw_cpu']:+.2f} us a line"
            )
    return medians


def layout(
    tansu: Any,
    free_port: Any,
    name: str,
    lines: list[bytes],
    examples: int,
    per_message: int,
    codecs: list[str],
    target: float | None,
    interval: float,
    repeats: int,
) -> None:
    """Fill a topic per codec with ``examples`` lines, ``per_message`` a message, and
    measure the three on each, interleaved."""
    stream = stream_lines(lines, examples)
    values = [b"".join(stream[i : i + per_message]) for i in range(0, examples, per_message)]
    print(
        f"\n== {name}: {examples:,} examples, {per_message} per message, {len(values):,} "
        f"messages on 1 partition, a topic per codec ({', '.join(codecs)}; linger_ms "
        f"{LINGER_MS}, batch_size {BATCH_SIZE:,})"
    )
    topics = [fill(tansu, name, values, examples, codec) for codec in codecs]
    runs: dict[str, list[dict[str, float]]] = {codec: [] for codec in codecs}
    for repeat in range(repeats):
        print(f"-- repeat {repeat + 1} of {repeats}")
        for topic in topics:
            label = f"[{topic['codec']}] " if len(topics) > 1 else ""
            runs[topic["codec"]].append(
                measure(tansu, free_port, topic["topic"], examples, interval, label)
            )
    print(
        f"medians of {repeats} ({name}; daemon/raw: the median of each repeat's ratio and "
        "their range; us/ex: the daemon's CPU an example; B/line: batches on the broker):"
    )
    medians = table(topics, runs, examples)
    if target is not None:
        at = ", ".join(f"{c} {m['daemon'] / target:.3g}x" for c, m in medians.items())
        print(f"  target {target:,.0f} examples/s: daemon at {at} of target")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--examples", type=int, default=1_000_000, help="100 lines a message (0: skipped)"
    )
    parser.add_argument(
        "--single-examples", type=int, default=1_000_000, help="1 a message (0: skipped)"
    )
    parser.add_argument(
        "--codecs",
        type=codec_names,
        default=["none", "lz4", "zstd"],
        help="compression of the 100-lines-a-message topics, one topic each, comma-separated: "
        f"{', '.join(CODECS)} (default none,lz4,zstd; ignored with --one-vs-rest; the "
        "one-line-a-message topic is uncompressed)",
    )
    parser.add_argument("--scrape-interval", type=float, default=0.1, help="seconds")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs of each")
    parser.add_argument(
        "--one-vs-rest",
        action="store_true",
        help="serve --one-vs-rest on yeast's label sets (14 labels, 103 dense features) "
        "instead, uncompressed only (--codecs is ignored)",
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
    codecs: list[str] = args.codecs
    if args.one_vs_rest:  # the targets are for one binary learner
        os.environ["STREAMLEARN_ONE_VS_REST"] = "true"
        targets = (None, None)
        if codecs != ["none"]:
            print(f"--one-vs-rest: uncompressed topics only (--codecs {','.join(codecs)} ignored)")
        codecs = ["none"]
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
        if args.examples > 0:
            layout(
                tansu,
                module.free_port,
                "batched",
                lines,
                args.examples,
                100,
                codecs,
                targets[0],
                args.scrape_interval,
                args.repeats,
            )
        if args.single_examples > 0:
            layout(
                tansu,
                module.free_port,
                "single",
                lines,
                args.single_examples,
                1,
                ["none"],
                targets[1],
                args.scrape_interval,
                args.repeats,
            )
    finally:
        tansu.stop()


if __name__ == "__main__":
    main()
