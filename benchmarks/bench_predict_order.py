"""Predictions in stream order, at the batched speed: ``streamlearn serve`` on lines of
adult/a9a.train with a share of prediction requests (lines without a label) mixed in,
against the same lines all labelled, in the same run.

Each unlabelled line is answered by the model that has learned every labelled line
before it, whatever the batching: a poll is cut into runs of labelled lines and of
requests, learned and answered in turn. This measures what that costs.

The stream: ``--copies`` copies of a9a.train; every ``1 / --share``-th line (1% by
default) loses its label (from a9a.test, so that the answers are of unseen examples).
The daemon runs with ``--algo pdm --eps 0.05 --replay-every 0 --idle-replay off``
(online learning alone, the speed under test) from standard input (answers to its
standard output, read and counted) and, unless ``--no-kafka``, from a Tansu topic
(100 lines a message, answers to a predictions topic). Its rate is the examples learned
between the first /metrics scrape that shows one and the first that shows all, so
start-up is excluded. ``--repeats`` alternated runs of each stream, medians.

With ``--baseline-src DIR`` (a checkout of another version, e.g. made with
``git worktree add``) the same streams also run with the package of DIR, alternated.

Target, with ``--baseline-src`` of a version that answered a poll's questions with the
model from before the poll: the mixed stream at least 0.9 of that version's rate on it.

Run: .venv/bin/python benchmarks/bench_predict_order.py [--copies N] [--share S]
[--repeats N] [--baseline-src DIR] [--no-kafka]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from _common import data_file
from bench_endless import Daemon, adult_lines, free_port, ingestion, learned, streamlearn

OPTIONS = ["--algo", "pdm", "--eps", "0.05", "--replay-every", "0", "--idle-replay", "off",
           "--checkpoint-every", "1000000000", "--checkpoint-interval", "1h"]  # fmt: skip


def mixed_stream(lines: list[bytes], share: float) -> tuple[list[bytes], int]:
    """``lines`` with every ``1 / share``-th one replaced by an unlabelled a9a.test line;
    the stream and how many lines keep their label."""
    tests = [
        line.split(b" ", 1)[1].rstrip(b"\r\n") + b"\n"
        for line in data_file("adult/a9a.test").read_bytes().splitlines()
        if line.strip()
    ]
    every = max(1, round(1 / share))
    out = list(lines)
    for k, i in enumerate(range(every - 1, len(out), every)):
        out[i] = tests[k % len(tests)]
    return out, len(out) - len(range(every - 1, len(out), every))


def run_stdin(src: str | None, stream: Path, n: int, tmp: Path) -> tuple[float, int]:
    """(examples/s, answers written) of one daemon on ``stream`` from standard input."""
    command, env = streamlearn(src)
    port = free_port()
    full = [*command, "serve", *OPTIONS, "--checkpoint-dir", str(tmp / uuid.uuid4().hex[:8]),
            "--metrics-addr", f"127.0.0.1:{port}"]  # fmt: skip
    process = subprocess.Popen(
        full, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=env, cwd=src,
    )  # fmt: skip
    answers = [0]

    def count() -> None:
        assert process.stdout is not None
        for _ in process.stdout:
            answers[0] += 1

    reader = threading.Thread(target=count, daemon=True)
    reader.start()
    running = Daemon(process, f"http://127.0.0.1:{port}/metrics", 0.0)
    running.scrape_every(0.02)
    assert process.stdin is not None
    with stream.open("rb") as data:
        while block := data.read(1 << 20):
            process.stdin.write(block)
    process.stdin.close()
    running.wait("every example learned", lambda s: learned(s) >= n, 600)
    running.stop_scraping()
    process.wait(timeout=300)
    reader.join(timeout=60)
    rate, _ = ingestion(running, n)
    return rate, answers[0]


def run_kafka(
    src: str | None, tansu: Any, topic: str, n: int, requests: int, tmp: Path
) -> tuple[float, int]:
    """(examples/s, answers in the predictions topic) of one daemon reading ``topic``."""
    command, env = streamlearn(src)
    port = free_port()
    answers = f"answers-{uuid.uuid4().hex[:8]}"
    tansu.create_topic(answers, 1)
    full = [*command, "serve", *OPTIONS, "--source", "kafka", "--bootstrap-servers",
            tansu.bootstrap, "--topic", topic, "--group", f"order-{uuid.uuid4().hex[:8]}",
            "--predictions-topic", answers, "--checkpoint-dir", str(tmp / uuid.uuid4().hex[:8]),
            "--metrics-addr", f"127.0.0.1:{port}"]  # fmt: skip
    process = subprocess.Popen(
        full, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=src
    )
    running = Daemon(process, f"http://127.0.0.1:{port}/metrics", 0.0)
    running.scrape_every(0.02)
    try:
        running.wait("every example learned", lambda s: learned(s) >= n, 600)
        rate, _ = ingestion(running, n)
        predicted = running.wait(
            "every request answered",
            lambda s: s.get("streamlearn_examples_total", 0.0) >= requests,  # not learned
            60,
        )
    finally:
        running.stop_scraping()
        process.terminate()
        process.wait(timeout=120)
    return rate, requests if predicted is not None else -1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=100, help="copies of a9a.train")
    parser.add_argument("--share", type=float, default=0.01, help="of lines without a label")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of each")
    parser.add_argument("--baseline-src", help="a checkout whose package also runs")
    parser.add_argument("--no-kafka", action="store_true", help="standard input only")
    args = parser.parse_args()

    lines = adult_lines() * args.copies
    mixed, labelled = mixed_stream(lines, args.share)
    requests = len(mixed) - labelled
    streams = {"all labelled": (lines, len(lines)), "mixed": (mixed, labelled)}
    versions: dict[str, str | None] = {"this checkout": None}
    if args.baseline_src:
        versions["baseline"] = str(Path(args.baseline_src).resolve())
    print(
        f"{len(lines):,} lines of a9a.train; mixed: {requests:,} of them ({args.share:.0%}) "
        f"replaced by unlabelled a9a.test lines; serve {' '.join(OPTIONS[:8])}"
    )
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        files = {}
        for name, (stream, _) in streams.items():
            files[name] = tmp / f"{name.replace(' ', '-')}.svm"
            files[name].write_bytes(b"".join(stream))
        rates: dict[tuple[str, str, str], list[float]] = {}
        for _ in range(args.repeats):
            for version, src in versions.items():
                for name, (_, n) in streams.items():
                    rate, answers = run_stdin(src, files[name], n, tmp)
                    rates.setdefault(("standard input", version, name), []).append(rate)
                    want = requests if name == "mixed" else 0
                    print(f"standard input, {version}, {name}: {rate:,.0f} examples/s; "
                          f"answers {answers:,} (expected {want:,})")  # fmt: skip
        if not args.no_kafka:
            kafka(args, streams, versions, requests, rates, tmp)
    print()
    for source in ("standard input", "Kafka"):
        medians = {
            (version, name): statistics.median(rates[(source, version, name)])
            for version in versions
            for name in streams
            if (source, version, name) in rates
        }
        if not medians:
            continue
        for version in versions:
            mixed_rate = medians[(version, "mixed")]
            plain = medians[(version, "all labelled")]
            print(f"{source}, {version}: medians mixed {mixed_rate:,.0f}/s, all labelled "
                  f"{plain:,.0f}/s ({mixed_rate / plain:.2f})")  # fmt: skip
        if "baseline" in versions:
            ratio = medians[("this checkout", "mixed")] / medians[("baseline", "mixed")]
            print(f"{source}: mixed stream, this checkout / baseline: {ratio:.2f} "
                  f"(target >= 0.9): " + ("ok" if ratio >= 0.9 else "NOT MET"))  # fmt: skip


def kafka(
    args: argparse.Namespace,
    streams: dict[str, tuple[list[bytes], int]],
    versions: dict[str, str | None],
    requests: int,
    rates: dict[tuple[str, str, str], list[float]],
    tmp: Path,
) -> None:
    """The same runs from Kafka topics (100 lines a message)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import services
    from bench_serve_kafka import produce

    tansu = services.Tansu()
    try:
        topics = {}
        for name, (stream, _) in streams.items():
            topics[name] = f"order-{uuid.uuid4().hex[:8]}"
            tansu.create_topic(topics[name], 1)
            values = [b"".join(stream[i : i + 100]) for i in range(0, len(stream), 100)]
            produce(tansu.bootstrap, topics[name], values)
        for _ in range(args.repeats):
            for version, src in versions.items():
                for name, (_, n) in streams.items():
                    want = requests if name == "mixed" else 0
                    rate, answered = run_kafka(src, tansu, topics[name], n, want, tmp)
                    rates.setdefault(("Kafka", version, name), []).append(rate)
                    shown = "all" if answered == want else "NOT all"
                    print(f"Kafka, {version}, {name}: {rate:,.0f} examples/s; "
                          f"{shown} of {want:,} requests answered")  # fmt: skip
    finally:
        tansu.stop()


if __name__ == "__main__":
    main()
