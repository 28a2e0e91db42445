"""Learning groups: several ``streamlearn serve`` processes of one consumer group learning
one model through a sync topic, against a single plain daemon on the same stream, all
measured in the same run.

A Tansu broker (the one of tests/services.py) is started on a free port. Each run gets
fresh topics: an input topic of 4 partitions and, for a group, a sync topic. Its members
(``serve --source kafka --algo pdm --eps 0.05 --delta 1 --idle-replay off --replay-every
20000 --sync-topic T ...``) are started on the empty input topic
and the stream is produced only once the consumer group has split the partitions among
them (each member owns at least one, checked on their consumer-lag metrics), so that no
member learns alone while the others are still joining. The stream is ``--copies`` copies
of adult/a9a.train, 100 lines a message, messages spread round robin over the partitions.
Three copies (the default) fit one daemon's window of 100,000 examples: with more, the
window evicts.

Replay follows a count (``--replay-every``, a pass over the member's window every 20,000
examples it learns) rather than the default share of the time while behind, which makes
accuracy and margin depend on how fast the stream comes and how loaded the machine is.
Idle replay is off: with it on, members keep replaying once the stream ends, their shares
keep moving, they keep publishing and never answer alike at a well-defined point; off,
every figure is taken at "the stream learned and the members in agreement". The anchor
is the same command without ``--sync-topic``: a plain daemon on the same topic.

A run ends when every member's records on the sync topic (folded as a compacted topic
is: last record per key) stand at the end of every partition and count every example
once, and every member answers ``POST /predict`` on a9a.test with the same scores. Then:

1. accuracy on a9a.test (the labels of a member's answers against the file's) and the
   group's margin (``GET /model`` ``group.margin``; the plain daemon's certificate
   ``margin_achieved``) for the plain daemon and groups of 1, 2 and 4 members;
2. a drifting stream (``--drift-copies`` copies, then ``--flipped-copies`` copies with
   every label flipped, as bench_endless.py; ``--buffer-size`` 32,561 / members so that
   the group's window is one copy of Adult, as the single daemon's) for the plain
   daemon and 2 members: accuracy on a9a.test with its labels flipped;
3. bytes synchronised per example (the record values on the sync topic, summed, over the
   examples of the stream) on ``--sync-copies`` (10) copies in windows that hold the
   whole stream (``--buffer-size`` its length: no window evicts), for groups of
   ``--sync-members`` (2 and 4): ``--sync periodic`` every ``--periods`` examples and
   ``--sync dynamic`` checking every ``--sync-every`` at ``--thresholds``, all with
   ``--sync-share`` 1 (no time budget: the protocols as they are), the stream produced
   as fast as kafka-python can or at ``--sync-rate`` lines a second; beside each, the
   accuracy on a9a.test and the progressive accuracy of the members (every example
   predicted by its member's model just before it is learned, over the whole stream: the
   paper's measure). Then the protocols at equal accuracy, both ways round (as accurate:
   at most ``--equal``, 0.2 point, below): at each periodic run's accuracy the cheapest
   dynamic run as accurate and the ratio of their bytes (target: at most 0.1), at each
   dynamic run's the cheapest periodic run as accurate, if any. Then 2 members at the
   default budget (``--sync-share 0.1``), periodic and dynamic;
4. CPU seconds per example of each member (the seconds its threads ran on a CPU, summed
   from /proc/PID/task/TID/schedstat in nanoseconds: a thread that ends in between is
   not counted, one that starts counts from 0; from the moment the stream starts being
   produced, start-up and group join excluded, to the first scrape that shows every
   example learned, over the examples its records say it learned), printed as examples
   per CPU second relative to the lone member's (groups of 1, 2 and 4); target >= 0.8.
   Beside it, the same from utime + stime of /proc/PID/stat, in ticks of 10 ms: a member
   of 4 on 3 copies runs about 0.1 s, where a tick is a tenth. The window sizes differ: a
   lone member replays (``--replay-every``) a window 4 times as large as a member of 4
   does, so with replay the members of larger groups spend less per example;
   ``--replay-every 0`` compares ingestion and syncing alone;
5. wall throughput of 1 against 2 members on ``--wall-copies`` (20) copies without
   replay (``--replay-every 0``: ingestion alone; windows that hold the stream), and of a
   lone member deciding about once a poll (``--sync-every 100000``): the examples of the
   stream over the time from the start of production to the first records that stand at
   the end of every partition (the records' own wall-clock times; members publish at
   once when they catch up), ``--wall-repeats`` alternated runs, medians; beside it,
   what one member per machine would give: the stream over the slowest member's CPU
   seconds (each member's CPU time taken as its wall time on cores of its own). Part 1
   gives the same throughput for its runs;
6. with ``--plot PATH``: accuracy on a9a.test and the group's margin against examples
   learned (the members' learned counts summed), sampled every ``--sample-interval``
   seconds from the first member's /predict and /model while the stream is learned
   (groups of 1, 2 and 4), in runs of their own on ``--plot-copies`` copies produced at
   ``--rate`` lines a second, so that the curves have points.

7. what deciding inside a poll costs ingestion, in one process without a broker (the
   in-memory source of tests/daemon, polls of 1,000 messages, a sync topic in memory, a
   lone member): CPU seconds of the process to learn ``--pieces-copies`` (10) copies,
   the plain daemon against a member deciding about once a poll, every 1,000 examples
   (the defaults), every 1,000 examples without ever drifting enough to publish
   (``--sync-threshold 1e9``: the pieces and checks alone), and periodic every 1,000
   without a time budget; with the bench's replay and without replay;
   ``--pieces-repeats`` alternated runs, medians.

The machine's load average (``uptime``) is printed at the start and the end: on a shared
2-core machine with a broker, a producer and up to 4 members, CPU per example is the
figure to read, wall times follow the load.

Run: .venv/bin/python benchmarks/bench_group.py [--copies 10] [--plot benchmarks/group.png]
[--parts same,drift,sync,wall,pieces] [--idle-replay on] [--src DIR (members run DIR's
package)]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
from _common import data_lines, flipped, print_equal_accuracy

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "tests"))
sys.path.insert(0, str(REPOSITORY / "tests" / "daemon"))

from group_process import furthest  # noqa: E402
from services import wait_for as wait_until  # noqa: E402

from streamlearn.group.policy import SyncPolicy  # noqa: E402
from streamlearn.group.records import MemberRecord, decode_record  # noqa: E402

T = TypeVar("T")

EPS = 0.05
PARTITIONS = 4
LINES_PER_MESSAGE = 100
ADULT_ROWS = 32_561
MAX_FEATURES = 1 << 20
#: short session timeout: Tansu holds a JoinGroup for half of it (see tests/daemon)
CONSUMER = ("--consumer-option=session_timeout_ms=4000",
            "--consumer-option=heartbeat_interval_ms=1000")  # fmt: skip
SAMPLE = re.compile(r"^(streamlearn_[a-z_]+)(\{[^}]*\})? (\S+)$", re.M)
TIMEOUT = 300.0


def services() -> ModuleType:
    """tests/services.py (Tansu, free_port)."""
    import services as module

    return module


def wait_for(condition: Callable[[], T], what: str, timeout: float = TIMEOUT) -> T:
    """The first truthy value of ``condition()``, polled every 0.1 s; TimeoutError after
    ``timeout`` s (tests/services.py's wait)."""
    return wait_until(condition, timeout=timeout, interval=0.1, what=what)


# -- data -------------------------------------------------------------------------------


def messages_of(lines: list[bytes]) -> list[bytes]:
    """``lines`` as messages of LINES_PER_MESSAGE lines."""
    return [b"".join(lines[i : i + LINES_PER_MESSAGE])
            for i in range(0, len(lines), LINES_PER_MESSAGE)]  # fmt: skip


@dataclass(frozen=True)
class TestSet:
    """a9a.test as a /predict body and its labels (+1/-1)."""

    body: bytes
    labels: np.ndarray

    @staticmethod
    def of(lines: list[bytes]) -> TestSet:
        labels = np.array([1.0 if not line.startswith(b"-") else -1.0 for line in lines])
        return TestSet(b"".join(lines), labels)


# -- a member (or the plain daemon) -----------------------------------------------------------


class Member:
    """One ``streamlearn serve`` process with its HTTP API and metrics."""

    def __init__(self, command: list[str], name: str, http_port: int, metrics_port: int,
                 log_path: Path, src: str | None) -> None:  # fmt: skip
        """``src``: a directory whose ``streamlearn`` package runs instead of this one."""
        self.name = name
        self.http_port = http_port
        self.metrics_port = metrics_port
        self.log_path = log_path
        self._log = log_path.open("ab")
        env = dict(os.environ, PYTHONPATH=src) if src else None
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self._log,
                                        env=env, cwd=src)  # fmt: skip

    def _get(self, url: str, data: bytes | None = None, timeout: float = 30.0) -> bytes:
        headers = {"content-type": "text/plain"} if data is not None else {}
        request = urllib.request.Request(url, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body: bytes = response.read()
        return body

    def model(self) -> dict[str, Any]:
        """``GET /model``."""
        described: dict[str, Any] = json.loads(
            self._get(f"http://127.0.0.1:{self.http_port}/model")
        )
        return described

    def scores(self, test: TestSet) -> np.ndarray:
        """The scores ``POST /predict`` gives the test lines."""
        answer = json.loads(self._get(f"http://127.0.0.1:{self.http_port}/predict", test.body))
        return np.array([p["score"] for p in answer["predictions"]])

    def metrics(self) -> dict[str, float]:
        """One scrape of /metrics: name{labels} -> value ({} when it does not answer)."""
        try:
            text = self._get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).decode()
        except OSError:
            return {}
        return {name + labels: float(value) for name, labels, value in SAMPLE.findall(text)}

    def learned(self, scrape: dict[str, float] | None = None) -> float:
        """streamlearn_examples_total{outcome="learned"} (0 when absent)."""
        scrape = self.metrics() if scrape is None else scrape
        return scrape.get('streamlearn_examples_total{outcome="learned"}', 0.0)

    def partitions(self) -> set[int]:
        """The partitions this member owns, by the last assignment its log reports."""
        found = re.findall(r"partitions assigned: \[([\d, ]*)\]", self.log_tail(20_000))
        return {int(p) for p in found[-1].split(",") if p.strip()} if found else set()

    def cpu_ticks(self) -> float:
        """User + system CPU seconds of the process so far (all its threads, those that
        ended included), from /proc/PID/stat: in clock ticks of 10 ms."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def threads_cpu(self) -> dict[int, float]:
        """Per thread now running in the process: its seconds on a CPU so far, from
        /proc/PID/task/TID/schedstat (nanoseconds)."""
        found: dict[int, float] = {}
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                found[int(task.name)] = int((task / "schedstat").read_text().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                continue  # the thread ended meanwhile
        return found

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self) -> int:
        """SIGTERM; the exit code (killed after 60 s)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(timeout=10)
        self._log.close()
        return code


@dataclass(frozen=True)
class CpuReading:
    """One reading of a member's CPU time, both ways."""

    ticks: float
    threads: dict[int, float]

    @staticmethod
    def of(member: Member) -> CpuReading:
        return CpuReading(member.cpu_ticks(), member.threads_cpu())

    def since(self, start: CpuReading) -> tuple[float, float]:
        """Seconds on a CPU from ``start`` to this reading: the sum over threads of
        what each ran meanwhile (a thread that ended in between is not counted), and
        the same from the 10 ms ticks of utime + stime."""
        ran = sum(t - start.threads.get(tid, 0.0) for tid, t in self.threads.items())
        return ran, self.ticks - start.ticks


# -- the sync topic, folded as a compacted topic is -------------------------------------------


class SyncReader:
    """The latest record of every member on the sync topic, read incrementally (Tansu does
    not compact: every record stays, so each read starts where the last one ended)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka import KafkaConsumer

        self.topic = topic
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        self.assigned: list[Any] = []
        self.latest: dict[str, MemberRecord] = {}
        #: per member: records and bytes of record values on the topic
        self.records: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        #: every record's wall time and the offsets it gives (held and released partitions)
        self.history: list[tuple[float, dict[int, int]]] = []

    def update(self) -> dict[str, MemberRecord]:
        """Read to the current end of the topic; the latest record per member."""
        from kafka import TopicPartition

        if not self.assigned:
            found = self.consumer.partitions_for_topic(self.topic) or set()
            if not found:
                return self.latest
            self.assigned = [TopicPartition(self.topic, p) for p in sorted(found)]
            self.consumer.assign(self.assigned)
            self.consumer.seek_to_beginning(*self.assigned)
        ends = self.consumer.end_offsets(self.assigned)
        while any(self.consumer.position(tp) < end for tp, end in ends.items()):
            for batch in self.consumer.poll(timeout_ms=500).values():
                for message in batch:
                    key = message.key.decode()
                    self.records[key] = self.records.get(key, 0) + 1
                    self.bytes[key] = self.bytes.get(key, 0) + len(message.value or b"")
                    if message.value is None:
                        self.latest.pop(key, None)
                        continue
                    record = decode_record(message.value, MAX_FEATURES)
                    offsets = {p: position.offset for p, position in record.released.items()}
                    offsets.update(
                        {p: position.offset for p, position in record.partitions.items()}
                    )
                    self.history.append((record.time, offsets))
                    held = self.latest.get(key)
                    if held is None or held.sequence < record.sequence:
                        self.latest[key] = record
        return self.latest

    def reached(self, ends: dict[int, int]) -> float:
        """The wall time at which the records first stood at ``ends`` in every partition:
        for each partition the first record at its end, the latest of those (NaN when a
        partition's end is in no record)."""
        times = []
        for partition, end in ends.items():
            at_end = [at for at, offsets in self.history if offsets.get(partition) == end]
            if not at_end:
                return math.nan
            times.append(min(at_end))
        return max(times)

    def close(self) -> None:
        self.consumer.close()


# -- one run ------------------------------------------------------------------------------


@dataclass
class Sample:
    """One reading while the stream is learned."""

    at: float
    learned: float
    accuracy: float
    margin: float


@dataclass
class Result:
    """What one run measured."""

    name: str
    members: int
    examples: int
    accuracy: float = math.nan
    margin: float = math.nan
    margin_bound: float = math.nan
    #: from the start of production to the first records at the end of every partition
    consumed_seconds: float = math.nan
    produce_seconds: float = math.nan
    #: the members' progressive accuracy: each example predicted by the member's model
    #: just before it learned it, over the whole stream and all members
    progressive: float = math.nan
    #: per member: examples its records (or, plain, its metrics) say it learned
    member_examples: list[int] = field(default_factory=list)
    #: per member: CPU seconds from the start of production to the end of the run, as
    #: the sum of its threads' schedstat times (nanoseconds)
    member_cpu: list[float] = field(default_factory=list)
    #: the same from utime + stime of /proc/PID/stat (10 ms ticks)
    member_cpu_ticks: list[float] = field(default_factory=list)
    bytes_written: list[int] = field(default_factory=list)
    records_written: list[int] = field(default_factory=list)
    agree_seconds: float = math.nan
    exit_codes: list[int] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: a mean of runs (part 3): the progressive accuracy of each
    runs_progressive: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Examples a second, over the time to consume the topic (groups only)."""
        return self.examples / self.consumed_seconds if self.consumed_seconds > 0 else math.nan

    @property
    def bytes_per_example(self) -> float:
        return sum(self.bytes_written) / self.examples


class Runner:
    """Starts the runs on one broker."""

    def __init__(self, tansu: Any, free_port: Callable[[], int], tmp: Path, test: TestSet,
                 args: argparse.Namespace) -> None:  # fmt: skip
        self.src: str | None = args.src
        self.replay = ("--replay-every", str(args.replay_every), "--idle-replay", args.idle_replay)
        self.interval: float = args.sample_interval
        self.tansu = tansu
        self.free_port = free_port
        self.tmp = tmp
        self.test = test

    def start(self, topic: str, group: str, sync_topic: str | None,
              options: tuple[str, ...]) -> Member:  # fmt: skip
        name = f"m-{uuid.uuid4().hex[:6]}"
        http_port, metrics_port = self.free_port(), self.free_port()
        command = [
            sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", str(EPS),
            "--delta", "1", "--source", "kafka", "--bootstrap-servers", self.tansu.bootstrap,
            "--topic", topic, "--group", group, *self.replay,
            "--metrics-addr", f"127.0.0.1:{metrics_port}",
            "--http-addr", f"127.0.0.1:{http_port}", *CONSUMER, *options,
        ]  # fmt: skip
        if sync_topic is not None:
            command += ["--sync-topic", sync_topic, "--member-id", name]
        else:  # its certificate is read from its last checkpoint (GET /model's can be old)
            command += ["--checkpoint-dir", str(self.tmp / name), "--checkpoint-every",
                        "100000000", "--checkpoint-interval", "1h"]  # fmt: skip
        return Member(command, name, http_port, metrics_port, self.tmp / f"{name}.log", self.src)

    def run(
        self,
        name: str,
        members: int,
        lines: list[bytes],
        *,
        group: bool = True,
        options: tuple[str, ...] = (),
        rate: float | None = None,
        sample: bool = False,
        test: TestSet | None = None,
    ) -> Result:
        """``members`` daemons (``group``: with a sync topic) learn ``lines``; see the module
        doc. ``rate``: lines a second to produce at (None: as fast as kafka-python can);
        ``sample``: the plot's samples of accuracy and margin while the stream is learned."""
        test = test or self.test
        topic, sync_topic = f"in-{uuid.uuid4().hex[:8]}", f"sync-{uuid.uuid4().hex[:8]}"
        self.tansu.create_topic(topic, PARTITIONS)
        consumer_group = f"bench-{uuid.uuid4().hex[:8]}"
        result = Result(name, members, len(lines))
        running = [self.start(topic, consumer_group, sync_topic if group else None, options)
                   for _ in range(members)]  # fmt: skip
        reader = SyncReader(self.tansu.bootstrap, sync_topic) if group else None
        sampler: threading.Thread | None = None
        stop_sampling = threading.Event()
        try:
            self._wait_split(running)
            cpu_start = [CpuReading.of(m) for m in running]
            if sample:
                sampler = threading.Thread(
                    target=self._sample, args=(running, result, test, stop_sampling), daemon=True
                )
                sampler.start()
            scraper = Scraper(running, len(lines))
            scraper.start()
            produce_started = time.time()  # the clock of the records' times
            result.produce_seconds, ends = produce(
                self.tansu.bootstrap, topic, messages_of(lines), rate
            )
            scraper.finish(60.0)
            stop_sampling.set()
            if sampler is not None:
                sampler.join(timeout=30)
            if reader is not None:
                latest = wait_for(
                    lambda: self._complete(reader, ends, len(lines), running),
                    "the records at the end of every partition",
                )
                result.consumed_seconds = reader.reached(ends) - produce_started
            agreed = time.perf_counter()
            scores = wait_for(lambda: self._agree(running, test), "the members to agree", 120)
            result.agree_seconds = time.perf_counter() - agreed
            result.accuracy = accuracy(scores[0], test.labels)
            result.progressive = progressive(running)
            spent = [c.since(c0) for c, c0 in zip(scraper.cpu, cpu_start, strict=True)]
            result.member_cpu = [threads for threads, _ in spent]
            result.member_cpu_ticks = [ticks for _, ticks in spent]
            if reader is not None:
                result.member_examples = [latest[m.name].examples for m in running]
                self._check_group(result, running, latest)
            else:
                result.member_examples = [int(m.learned()) for m in running]
        except Exception as error:
            result.problems.append(f"{type(error).__name__}: {error}")
            for m in running:
                result.problems.append(f"log tail of {m.name} (alive: {m.alive()}):\n"
                                       + m.log_tail(1500))  # fmt: skip
        finally:
            stop_sampling.set()
            result.exit_codes = [m.stop() for m in running]
            for m, code in zip(running, result.exit_codes, strict=True):
                if code != 0:
                    result.problems.append(f"{m.name} exited with {code}:\n{m.log_tail()}")
            if reader is None:
                self._certificate(result, running[0])
            else:
                try:
                    final = reader.update()
                    # each member's last record, written at SIGTERM, carries a fresh
                    # certificate of the common model on its window
                    windows = [r.window for r in final.values() if r.window.examples]
                    result.margin = min((w.margin for w in windows), default=math.nan)
                    result.margin_bound = min((w.bound for w in windows), default=math.nan)
                    result.bytes_written = [reader.bytes.get(m.name, 0) for m in running]
                    result.records_written = [reader.records.get(m.name, 0) for m in running]
                    total = sum(r.examples for r in final.values())
                    if total != len(lines):
                        result.problems.append(
                            f"after SIGTERM the records count {total:,} examples, the stream "
                            f"{len(lines):,}"
                        )
                finally:
                    reader.close()
        return result

    def _wait_split(self, running: list[Member]) -> None:
        """Until each member owns at least one partition and together they own all,
        each exactly once, twice in a row 0.5 s apart."""

        def split() -> bool:
            owned = [m.partitions() for m in running]
            for m in running:
                if not m.alive():
                    raise RuntimeError(f"{m.name} exited: {m.log_tail()}")
            every = sorted(p for held in owned for p in held)
            return every == list(range(PARTITIONS)) and all(owned)

        wait_for(lambda: split() and (time.sleep(0.5) or split()), "the partitions split", 120)

    def _complete(self, reader: SyncReader, ends: dict[int, int], total: int,
                  running: list[Member]) -> dict[str, MemberRecord] | None:  # fmt: skip
        """The records, once they stand at ``ends`` and count ``total`` examples."""
        for m in running:
            if not m.alive():
                raise RuntimeError(f"{m.name} exited: {m.log_tail()}")
        latest = reader.update()
        positions = {p: pos.offset for p, pos in furthest(latest).items()}
        if positions != ends or len(latest) < len(running):
            return None
        return dict(latest)

    def _described(
        self, running: list[Member], latest: dict[str, MemberRecord]
    ) -> list[dict[str, Any]] | None:
        """Every member's /model once each tells the examples of its record and the same
        group margin."""
        described = [m.model() for m in running]
        told = [d["group"]["examples"] for d in described]
        margins = {nan_if_none(d["group"]["margin"]) for d in described}
        if told == [latest[m.name].examples for m in running] and len(margins) <= 1:
            return described
        return None

    def _agree(self, running: list[Member], test: TestSet) -> list[np.ndarray] | None:
        """The scores of the test set (in a list of one) when every member gives the
        same ones."""
        scores = [m.scores(test) for m in running]
        if all(np.array_equal(scores[0], s) for s in scores[1:]):
            return scores[:1]
        return None

    def _check_group(
        self, result: Result, running: list[Member], latest: dict[str, MemberRecord]
    ) -> None:
        """Record anything the group's own accounts get wrong, GET /model included (given
        5 s to tell the records: it shows a snapshot taken every second or more)."""
        total = result.examples
        counted = sum(r.examples for r in latest.values())
        if counted != total:
            result.problems.append(f"the records count {counted:,} examples, the stream {total:,}")
        grouped = sum(p.examples for p in furthest(latest).values())
        if grouped != total:
            result.problems.append(f"the records' positions count {grouped:,} examples, the "
                                   f"stream {total:,}")  # fmt: skip
        for m in running:
            if int(m.learned()) != latest[m.name].examples:
                result.problems.append(f"{m.name}: metrics learned {m.learned():,.0f}, its "
                                       f"record {latest[m.name].examples:,}")  # fmt: skip
        try:
            wait_for(lambda: self._described(running, latest), "/model to tell the records", 5)
        except TimeoutError:
            names = sorted(m.name for m in running)
            for m in running:
                told = m.model()["group"]
                if told["examples"] != latest[m.name].examples or sorted(told["members"]) != names:
                    result.problems.append(
                        f"GET /model of {m.name} is stale 5 s after the members agree: group "
                        f"examples {told['examples']:,} (its record {latest[m.name].examples:,}),"
                        f" members {len(told['members'])}, margin {told['margin']}"
                    )

    def _certificate(self, result: Result, member: Member) -> None:
        """The plain daemon's margin and bound, from its last checkpoint."""
        directory = self.tmp / member.name
        newest = max(directory.rglob("*"), key=lambda p: p.stat().st_mtime, default=None)
        if newest is None:
            result.problems.append(f"{member.name} wrote no checkpoint")
            return
        out = subprocess.run(
            [sys.executable, "-m", "streamlearn", "inspect", "--json", str(newest)],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=self.src)
            if self.src else None, cwd=self.src,
        )  # fmt: skip
        try:
            info = json.loads(out.stdout)
            result.margin = nan_if_none(find_key(info, "margin_achieved"))
            result.margin_bound = nan_if_none(find_key(info, "margin_upper_bound"))
        except ValueError:
            result.problems.append(f"inspect {newest}: {out.stdout[-500:]} {out.stderr[-500:]}")

    def _sample(self, running: list[Member], result: Result, test: TestSet,
                stop: threading.Event) -> None:  # fmt: skip
        """Every ``interval`` s: the learned examples of all, accuracy and the group's
        margin as the first member sees them."""
        started = time.perf_counter()
        while not stop.is_set():
            try:
                learned = sum(m.learned() for m in running)
                if learned > 0:
                    described = running[0].model()
                    margin = (described["group"]["margin"] if "group" in described
                              else described["certificate"]["margin_achieved"])  # fmt: skip
                    scores = running[0].scores(test)
                    result.samples.append(Sample(time.perf_counter() - started, learned,
                                                 accuracy(scores, test.labels),
                                                 nan_if_none(margin)))  # fmt: skip
            except (OSError, KeyError, ValueError):
                pass
            stop.wait(self.interval)


class Scraper(threading.Thread):
    """Scrapes the members' learned counts every 0.05 s until they show ``total``, and
    takes each member's CPU seconds then. Its times are no throughput (a run that ends
    within a scrape is missed): the records' times are (:meth:`SyncReader.reached`)."""

    def __init__(self, running: list[Member], total: int) -> None:
        super().__init__(daemon=True)
        self.running = running
        self.total = total
        self.first: float | None = None
        self.last: float | None = None
        self.learned = 0.0
        self.moved = time.perf_counter()
        #: each member's CPU time at the first scrape showing every example learned
        self.cpu: list[CpuReading] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            learned = sum(m.learned() for m in self.running)
            now = time.perf_counter()
            if learned != self.learned:
                self.learned, self.moved = learned, now
            if learned > 0 and self.first is None:
                self.first = now
            if learned >= self.total:
                self.last = now
                self.cpu = [CpuReading.of(m) for m in self.running]
                self.done.set()
                return
            if not all(m.alive() for m in self.running):
                self.done.set()
                return
            time.sleep(0.05)

    def finish(self, stalled: float) -> float:
        """Seconds from the first learned example to all; TimeoutError when the count
        has not moved for ``stalled`` seconds."""
        while not self.done.wait(1.0):
            if time.perf_counter() - self.moved > stalled:
                self.done.set()
                raise TimeoutError(f"no example learned in {stalled:.0f} s "
                                   f"({self.learned:,.0f} of {self.total:,})")  # fmt: skip
        if self.first is None or self.last is None:
            raise TimeoutError(f"a member exited: {self.learned:,.0f} of {self.total:,} learned")
        return self.last - self.first


def produce(
    bootstrap: str, topic: str, values: list[bytes], rate: float | None
) -> tuple[float, dict[int, int]]:
    """Send ``values`` round robin over the partitions (at ``rate`` lines a second, or as
    fast as possible) and wait for all; the seconds it took and the end offset of each
    partition, from the offsets the broker gave the messages (Tansu 0.6 answers
    ListOffsets with the base offset of the last batch + 1, short of the end when a batch
    holds several messages)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=1 << 20,
                             acks=1, max_request_size=1 << 24)  # fmt: skip
    started = time.perf_counter()
    futures = []
    try:
        sent_lines = 0
        for i, value in enumerate(values):
            futures.append(producer.send(topic, value=value, partition=i % PARTITIONS))
            sent_lines += value.count(b"\n")
            if rate is not None:
                ahead = started + sent_lines / rate - time.perf_counter()
                if ahead > 0:
                    producer.flush()
                    time.sleep(ahead)
        producer.flush(timeout=300)
        seconds = time.perf_counter() - started
        ends: dict[int, int] = {}
        for future in futures:
            metadata = future.get(timeout=60)
            ends[metadata.partition] = max(ends.get(metadata.partition, 0), metadata.offset + 1)
    finally:
        producer.close()
    return seconds, ends


def progressive(running: list[Member]) -> float:
    """The members' progressive accuracy, over all of them (their metrics)."""
    correct = mistakes = 0.0
    for m in running:
        scrape = m.metrics()
        correct += scrape.get('streamlearn_progressive_predictions_total{result="correct"}', 0.0)
        mistakes += scrape.get('streamlearn_progressive_predictions_total{result="mistake"}', 0.0)
    return correct / (correct + mistakes) if correct + mistakes else math.nan


def find_key(document: Any, key: str) -> Any:
    """The first value of ``key`` anywhere in a JSON document (None: none)."""
    if isinstance(document, dict):
        if key in document:
            return document[key]
        document = list(document.values())
    if isinstance(document, list):
        for item in document:
            found = find_key(item, key)
            if found is not None:
                return found
    return None


def nan_if_none(value: float | None) -> float:
    """JSON's null (a NaN of the daemon) as NaN."""
    return math.nan if value is None else float(value)


def accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    """The share of scores whose sign is the label's (a score of 0 counts as +1)."""
    return float(np.mean(np.where(scores >= 0, 1.0, -1.0) == labels))


# -- the report ---------------------------------------------------------------------------


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def describe(result: Result) -> str:
    """One line per run."""
    cpu_us = [c / max(e, 1) * 1e6 for c, e in zip(result.member_cpu, result.member_examples,
                                                   strict=False)]  # fmt: skip
    ticks = zip(result.member_cpu_ticks, result.member_examples, strict=False)
    ticks_us = [c / max(e, 1) * 1e6 for c, e in ticks]
    parts = [
        f"{result.name:<28}",
        f"acc {result.accuracy:.4f}",
        f"margin {result.margin:.3e} (bound {result.margin_bound:.3e})",
        f"consumed in {result.consumed_seconds:.2f} s ({result.rate:,.0f}/s; produced in "
        f"{result.produce_seconds:.2f} s)",
        f"progressive accuracy {result.progressive:.4f}",
        "examples/member " + "/".join(f"{e:,}" for e in result.member_examples),
        f"CPU us/example/member {'/'.join(f'{c:.2f}' for c in cpu_us)} (threads' schedstat; "
        f"utime+stime in 10 ms ticks: {'/'.join(f'{c:.2f}' for c in ticks_us)})",
    ]
    if result.bytes_written:
        parts.append(f"sync {sum(result.bytes_written):,} B in "
                     f"{sum(result.records_written)} records = "
                     f"{result.bytes_per_example:.2f} B/example")  # fmt: skip
    parts.append(f"agreed {result.agree_seconds:.1f} s after all learned")
    return "\n    ".join(parts)


def report(result: Result) -> Result:
    """Print what ``result`` measured; returns it."""
    print(describe(result), flush=True)
    for problem in result.problems:
        print(f"  PROBLEM: {problem}", flush=True)
    return result


def plot(path: str, results: list[Result]) -> None:
    """Accuracy and group margin against examples learned, one line per group size."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for result in results:
        if not result.samples:
            continue
        learned = [s.learned for s in result.samples]
        top.plot(learned, [s.accuracy for s in result.samples], ".-", label=result.name)
        bottom.plot(learned, [s.margin for s in result.samples], ".-", label=result.name)
    top.set_ylabel("accuracy on a9a.test")
    bottom.set_ylabel("group margin (min over members)")
    bottom.set_xlabel("examples learned (all members)")
    top.set_title(f"pdm eps {EPS}, delta 1, a9a.train copies on {PARTITIONS} partitions")
    for axis in (top, bottom):
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


# -- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=3,
                        help="copies of a9a.train (3 fit one 100,000-example window)")  # fmt: skip
    parser.add_argument("--repeats", type=int, default=1,
                        help="alternated runs of the plain daemon, groups of 1, 2, 4")  # fmt: skip
    parser.add_argument("--drift-copies", type=int, default=2, help="before the labels flip")
    parser.add_argument("--flipped-copies", type=int, default=2, help="with labels flipped")
    parser.add_argument("--plot-copies", type=int, default=3, help="copies in the plot's runs")
    parser.add_argument("--rate", type=float, default=20_000.0,
                        help="lines/s produced in the plot's runs")  # fmt: skip
    parser.add_argument("--sample-interval", type=float, default=0.5, help="seconds")
    parser.add_argument("--sync-copies", type=int, default=10,
                        help="copies of a9a.train in the sync part")  # fmt: skip
    parser.add_argument("--periods", default="1000,2000,4000,8000,16000",
                        help="--sync-every values of the periodic runs")  # fmt: skip
    parser.add_argument("--thresholds", default="0.4,0.6,0.8,0.9,1e9",
                        help="--sync-threshold values of the dynamic runs")  # fmt: skip
    parser.add_argument("--sync-every", type=int, default=1000,
                        help="every run's but the periodic ones of the sync part")  # fmt: skip
    parser.add_argument("--sync-members", default="2,4",
                        help="group sizes of the sync part")  # fmt: skip
    parser.add_argument("--equal", type=float, default=0.002,
                        help="part 3: an accuracy this far below is as accurate")  # fmt: skip
    parser.add_argument("--sync-streams", default="same,drift",
                        help="part 3's streams: copies (same), label phases (drift)")  # fmt: skip
    parser.add_argument("--phase-copies", type=int, default=2,
                        help="part 3's drift stream: copies a label phase")  # fmt: skip
    parser.add_argument("--sync-repeats", type=int, default=3,
                        help="part 3: alternated runs of each setting, averaged")  # fmt: skip
    parser.add_argument("--sync-rate", type=float, default=0.0,
                        help="part 3: lines/s produced (0: unpaced)")  # fmt: skip
    parser.add_argument("--sync-share", default="1",
                        help="--sync-share of the sync sweep (1: no budget)")  # fmt: skip
    parser.add_argument("--wall-copies", type=int, default=10,
                        help="copies of a9a.train in the wall part")  # fmt: skip
    parser.add_argument("--wall-repeats", type=int, default=3,
                        help="alternated runs of 1 and 2 members in the wall part")  # fmt: skip
    parser.add_argument("--pieces-copies", type=int, default=10,
                        help="copies of a9a.train in the pieces part")  # fmt: skip
    parser.add_argument("--pieces-repeats", type=int, default=3,
                        help="alternated runs in the pieces part")  # fmt: skip
    parser.add_argument("--replay-every", type=int, default=20_000,
                        help="every daemon's: a pass per N of its examples")  # fmt: skip
    parser.add_argument("--idle-replay", choices=["on", "off"], default="off")
    parser.add_argument("--plot", default="", help="PNG file ('' for none)")
    parser.add_argument("--src", help="run the members from the streamlearn package in DIR")
    parser.add_argument("--parts", default="same,drift,sync,wall,pieces",
                        help="same (1, 4), drift (2), sync (3), wall (5), pieces (7); "
                        "6: --plot")  # fmt: skip
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    print(f"load at start: {uptime()}")
    if args.src:
        print(f"members run the streamlearn package of {args.src}")
    train = data_lines("adult/a9a.train")
    test_lines = data_lines("adult/a9a.test")
    test = TestSet.of(test_lines)
    if "pieces" in parts:  # no broker: first, alone on the machine's cores
        part_pieces(train * args.pieces_copies, args)
    if not parts & {"same", "drift", "sync", "wall"} and not args.plot:
        print(f"\nload at end: {uptime()}")
        return
    module = services()
    tansu = module.Tansu()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runner = Runner(tansu, module.free_port, Path(tmp), test, args)
            sync = ("--sync-every", str(args.sync_every))
            if "same" in parts:
                part_same(runner, train * args.copies, args, sync)
            if "drift" in parts:
                part_drift(runner, train, TestSet.of(flipped(test_lines)), args, sync)
            if "sync" in parts:
                part_sync(runner, train, test_lines, args, sync)
            if "wall" in parts:
                part_wall(runner, train * args.wall_copies, args, sync)
            if args.plot:
                part_plot(runner, train * args.plot_copies, args, sync)
    finally:
        tansu.stop()
    print(f"\nload at end: {uptime()}")


SAME = (("plain daemon (anchor)", 1, False), ("group of 1", 1, True),
        ("group of 2", 2, True), ("group of 4", 4, True))  # fmt: skip


def part_same(
    runner: Runner, stream: list[bytes], args: argparse.Namespace, sync: tuple[str, ...]
) -> None:
    """Parts 1 and 4: the plain daemon and groups of 1, 2 and 4 on the same stream."""
    print(f"\n== 1, 4: {len(stream):,} lines ({args.copies} copies of a9a.train), "
          f"{PARTITIONS} partitions, {LINES_PER_MESSAGE} lines a message, produced unpaced; "
          f"groups: --sync dynamic --sync-every {args.sync_every} --sync-threshold "
          f"{SyncPolicy().threshold} (the defaults)")  # fmt: skip
    results: dict[str, list[Result]] = {name: [] for name, _, _ in SAME}
    for _ in range(args.repeats):
        for name, members, grouped in SAME:
            result = runner.run(name, members, stream, group=grouped, options=sync)
            report(result)
            results[name].append(result)
    same_stream_table(results)


def part_drift(
    runner: Runner, train: list[bytes], test: TestSet, args: argparse.Namespace,
    sync: tuple[str, ...],
) -> None:  # fmt: skip
    """Part 2: the drifting stream, the plain daemon against 2 members."""
    stream = train * args.drift_copies + flipped(train) * args.flipped_copies
    print(f"\n== 2: drift, {args.drift_copies} copies then {args.flipped_copies} flipped "
          f"({len(stream):,} lines), --buffer-size {ADULT_ROWS:,} / members; accuracy on "
          "a9a.test with its labels flipped")  # fmt: skip
    drift: dict[str, Result] = {}
    for name, members, grouped in (("drift: plain daemon", 1, False),
                                   ("drift: group of 2", 2, True)):  # fmt: skip
        window = ("--buffer-size", str(ADULT_ROWS // members))
        drift[name] = runner.run(
            name, members, stream, group=grouped, options=(*sync, *window), test=test
        )
        report(drift[name])
    plain, group = drift.values()
    print(f"flipped a9a.test: plain daemon {plain.accuracy:.4f}, group of 2 "
          f"{group.accuracy:.4f} ({group.accuracy - plain.accuracy:+.4f})")  # fmt: skip


def part_sync(
    runner: Runner, train: list[bytes], test_lines: list[bytes], args: argparse.Namespace,
    sync: tuple[str, ...],
) -> None:  # fmt: skip
    """Part 3: bytes on the sync topic per example, periodic against dynamic averaging,
    for each stream and group size, with the plain daemon's accuracy beside them
    (``--sync-repeats`` alternated runs of each, means); then both protocols at their
    default time budget (``--sync-share 0.1``)."""
    share = ("--sync-share", args.sync_share)
    rate = args.sync_rate or None
    paced = f"produced at {rate:,.0f} lines/s" if rate else "unpaced"
    for kind in args.sync_streams.split(","):
        if kind == "drift":  # phases of --phase-copies copies, the labels flipped every other
            phases = [train if phase % 2 == 0 else flipped(train) for phase in range(4)]
            stream = [line for lines in phases for line in lines * args.phase_copies]
            test = TestSet.of(flipped(test_lines))  # as the last phase has them
            windows = {m: ADULT_ROWS // m for m in (1, *map(int, args.sync_members.split(",")))}
            what = (f"4 phases of {args.phase_copies} copies, the labels flipped every "
                    f"other; windows of {ADULT_ROWS:,} over the group")  # fmt: skip
        else:
            stream = train * args.sync_copies
            test = runner.test
            windows = {m: len(stream) for m in (1, *map(int, args.sync_members.split(",")))}
            what = f"{args.sync_copies} copies, windows that hold the stream"
        print(f"\n== 3: sync traffic, {kind}: {len(stream):,} lines ({what}), groups of "
              f"{args.sync_members}; periodic every {args.periods} examples, dynamic "
              f"checking every {args.sync_every} at thresholds {args.thresholds}; "
              f"--sync-share {args.sync_share}; {paced}; means of {args.sync_repeats} "
              "runs")  # fmt: skip
        plain = mean_result([
            report(runner.run("sync: plain daemon (anchor)", 1, stream, group=False,
                              options=("--buffer-size", str(windows[1])), test=test,
                              rate=rate))
            for _ in range(args.sync_repeats)
        ])  # fmt: skip
        for members in (int(m) for m in args.sync_members.split(",")):
            window = ("--buffer-size", str(windows[members]))
            runs = [(f"periodic every {every}", ("--sync", "periodic", "--sync-every", every))
                    for every in args.periods.split(",")]  # fmt: skip
            runs += [(f"dynamic threshold {threshold}",
                      ("--sync", "dynamic", *sync, "--sync-threshold", threshold))
                     for threshold in args.thresholds.split(",")]  # fmt: skip
            done: dict[str, list[Result]] = {name: [] for name, _ in runs}
            for _ in range(args.sync_repeats):
                for name, options in runs:
                    done[name].append(report(runner.run(
                        f"sync: {kind}, {members} members, {name}", members, stream,
                        options=(*options, *share, *window), test=test, rate=rate,
                    )))  # fmt: skip
            traffic = {"plain daemon (anchor)": plain}
            traffic.update({name: mean_result(results) for name, results in done.items()})
            print(f"\n-- {kind}, {members} members, --sync-share {args.sync_share}")
            sync_table(traffic, args.equal)
    stream = train * args.sync_copies
    window = ("--buffer-size", str(len(stream)))
    print("\n-- 2 members at the default time budget (--sync-share 0.1, the default "
          "threshold)")  # fmt: skip
    budget = {"plain daemon (anchor)": report(runner.run(
        "sync: plain daemon (anchor)", 1, stream, group=False, options=window))}  # fmt: skip
    for name, options in ((f"periodic every {args.sync_every}", ("--sync", "periodic", *sync)),
                          ("dynamic", ("--sync", "dynamic", *sync))):  # fmt: skip
        budget[name] = report(runner.run(f"sync: 2 members, {name}, share 0.1", 2, stream,
                                         options=(*options, *window)))  # fmt: skip
    sync_table(budget, args.equal)


def mean_result(results: list[Result]) -> Result:
    """One setting's runs as one: accuracies and traffic averaged, the progressive
    accuracy of each run kept in ``runs_progressive``."""
    first = results[0]
    mean = Result(first.name, first.members, first.examples)
    mean.accuracy = float(np.mean([r.accuracy for r in results]))
    mean.progressive = float(np.mean([r.progressive for r in results]))
    mean.bytes_written = [round(float(np.mean([sum(r.bytes_written) for r in results])))]
    mean.records_written = [round(float(np.mean([sum(r.records_written) for r in results])))]
    mean.runs_progressive = [r.progressive for r in results]
    return mean


def part_wall(
    runner: Runner, stream: list[bytes], args: argparse.Namespace, sync: tuple[str, ...]
) -> None:
    """Part 5: wall throughput of 1 against 2 members, from the time to consume the
    topic (the records' times), without replay (``--replay-every 0``): ingestion alone;
    and a lone member deciding every --sync-every examples against one deciding about
    once a poll (``--sync-every 100000``: a poll holds up to 1,000 messages of 100 lines)."""
    options = ("--replay-every", "0", "--buffer-size", str(len(stream)))
    print(f"\n== 5: wall throughput, {len(stream):,} lines ({args.wall_copies} copies), "
          f"alternated {args.wall_repeats} times, {' '.join(options)}; from the start of "
          "production to the first records at the end of every partition")  # fmt: skip
    kinds = (("1 member", 1, sync), ("1 member, a decision a poll", 1, ("--sync-every", "100000")),
             ("2 members", 2, sync))  # fmt: skip
    runs: dict[str, list[Result]] = {name: [] for name, _, _ in kinds}
    for _ in range(args.wall_repeats):
        for name, members, every in kinds:
            result = runner.run(f"wall: {name}", members, stream, options=(*every, *options))
            report(result)
            runs[name].append(result)
    wall_table(runs)


class MemoryTopic:
    """A sync topic in memory for a lone member: it counts what is written."""

    def __init__(self) -> None:
        self.bytes_written = 0
        self.bytes_read = 0
        self.records = 0

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]:
        return []

    def write(self, key: str, value: bytes | None) -> None:
        self.bytes_written += len(value or b"")
        self.records += 1


def part_pieces(stream: list[bytes], args: argparse.Namespace) -> None:
    """Part 7: what deciding inside a poll costs ingestion, in one process without a
    broker (tests/daemon's in-memory source: polls of 1,000 messages of 100 lines over 4
    partitions, decoded ahead as serve does; a sync topic in memory): CPU seconds of the
    process (all its threads) to learn the stream, a lone member against the plain
    daemon, alternated, medians. With the bench's replay (a pass every
    ``--replay-every`` examples) and without replay (ingestion alone)."""
    from memory_source import MemorySource

    from streamlearn.config import LearnerSpec
    from streamlearn.daemon import Daemon, DaemonSettings
    from streamlearn.group.member import GroupMember
    from streamlearn.group.policy import SyncPolicy
    from streamlearn.parse.messages import MessageDecoder
    from streamlearn.replay import ReplaySchedule

    values = messages_of(stream)
    parts = {p: values[p::PARTITIONS] for p in range(PARTITIONS)}
    spec = LearnerSpec.from_options("pdm", {"eps": EPS, "delta": "1", "buffer_size": len(stream)})
    every = 1000
    kinds: tuple[tuple[str, SyncPolicy | None], ...] = (
        ("plain daemon (anchor)", None),
        ("decisions a poll apart", SyncPolicy(every=100 * every)),
        (f"decisions every {every}", SyncPolicy(every=every)),
        (f"every {every}, threshold 1e9", SyncPolicy(every=every, threshold=1e9)),
        (f"periodic every {every}, share 1", SyncPolicy("periodic", every=every, share=1.0)),
    )

    def decode(batch: Any) -> Any:
        return MessageDecoder().decode_columns(batch.data, batch.spans)

    def run(replay: int, policy: SyncPolicy | None) -> tuple[float, int]:
        topic = MemoryTopic()

        def member(model: Any) -> GroupMember:
            assert policy is not None
            return GroupMember(model, topic, member_id="m", model={"algorithm": "pdm"},
                               policy=policy, max_features=MAX_FEATURES)  # fmt: skip

        settings = DaemonSettings(replay=ReplaySchedule(every=replay, passes=1),
                                  idle_replay=False, checkpoint_interval=1e9)  # fmt: skip
        source = MemorySource(parts, per_poll=1000 // PARTITIONS)
        daemon = Daemon(spec, source, decode=decode, settings=settings,
                        group=None if policy is None else member)  # fmt: skip
        daemon.restore()
        if policy is not None:
            daemon.partitions_assigned(set(parts))
        started = time.process_time()
        daemon.run()
        return time.process_time() - started, topic.records

    print(f"\n== 7: deciding inside a poll, {len(stream):,} lines ({args.pieces_copies} copies) "
          f"from memory, no broker, a lone member, --buffer-size {len(stream):,}, "
          f"{args.pieces_repeats} alternated runs (medians)")  # fmt: skip
    for replay in (args.replay_every, 0):
        run(replay, None)  # warm-up
        cpu: dict[str, list[float]] = {name: [] for name, _ in kinds}
        records: dict[str, int] = {}
        for _ in range(args.pieces_repeats):
            for name, policy in kinds:
                seconds, records[name] = run(replay, policy)
                cpu[name].append(seconds)
        medians = {name: float(np.median(v)) for name, v in cpu.items()}
        poll = medians["decisions a poll apart"]
        plain = medians["plain daemon (anchor)"]
        print(f"\n--replay-every {replay}: {'run':<34} {'CPU us/example':>14} {'vs plain':>8} "
              f"{'vs a poll apart':>15} {'records':>7}   (runs: CPU s)")  # fmt: skip
        for name, median in medians.items():
            runs = " ".join(f"{c:.2f}" for c in cpu[name])
            print(f"{'':<19}{name:<34} {median / len(stream) * 1e6:>14.2f} "
                  f"{median / plain:>8.3f} {median / poll:>15.3f} "
                  f"{records[name]:>7}   ({runs})")  # fmt: skip


def part_plot(
    runner: Runner, stream: list[bytes], args: argparse.Namespace, sync: tuple[str, ...]
) -> None:
    """Part 6: groups of 1, 2 and 4 sampled while a paced stream is learned."""
    print(f"\n== 6: {len(stream):,} lines produced at {args.rate:,.0f} lines/s, the first "
          f"member's /predict and /model every {args.sample_interval} s")  # fmt: skip
    sampled = []
    for name, members, grouped in SAME[1:]:
        result = runner.run(name, members, stream, group=grouped, options=sync, rate=args.rate,
                            sample=True)  # fmt: skip
        report(result)
        print(f"  {len(result.samples)} samples")
        sampled.append(result)
    plot(args.plot, sampled)


def same_stream_table(results: dict[str, list[Result]]) -> None:
    """Parts 1 and 4: accuracy, margin, CPU per example and throughput against the
    anchors (the last run of each; throughputs: medians, groups only)."""
    last = {name: runs[-1] for name, runs in results.items()}
    anchor = last["plain daemon (anchor)"]
    lone = last["group of 1"]
    lone_rate = lone.member_examples[0] / lone.member_cpu[0]
    lone_ticks = lone.member_examples[0] / lone.member_cpu_ticks[0]
    print(f"\n{'run':<22} {'accuracy':>8} {'vs plain':>8} {'margin':>9} {'vs plain':>8} "
          f"{'examples/s':>10} {'vs 1':>5}  examples per CPU s of each member (vs the lone "
          "member's; target >= 0.8)")  # fmt: skip
    rates = {name: float(np.median([r.rate for r in runs])) for name, runs in results.items()}
    for name, r in last.items():
        per_cpu = [e / c for e, c in zip(r.member_examples, r.member_cpu, strict=True)]
        relative = " ".join(f"{p / lone_rate:.2f}" for p in per_cpu)
        print(f"{name:<22} {r.accuracy:>8.4f} {r.accuracy - anchor.accuracy:>+8.4f} "
              f"{r.margin:>9.3e} {r.margin / anchor.margin:>8.3f} {rates[name]:>10,.0f} "
              f"{rates[name] / rates['group of 1']:>5.2f}  "
              f"{' '.join(f'{p:,.0f}' for p in per_cpu)} ({relative})")  # fmt: skip
    print("the same from utime + stime (10 ms ticks), as this part measured until it read "
          "the threads' schedstat times:")  # fmt: skip
    for name, r in last.items():
        per_tick = [e / c for e, c in zip(r.member_examples, r.member_cpu_ticks, strict=True)]
        relative = " ".join(f"{p / lone_ticks:.2f}" for p in per_tick)
        print(f"{name:<22} {' '.join(f'{p:,.0f}' for p in per_tick)} ({relative})")


def sync_table(traffic: dict[str, Result], tolerance: float) -> None:
    """Part 3: accuracy and bytes per example of each run; then dynamic against periodic
    runs at equal accuracy (final on a9a.test, and progressive), both ways round."""
    plain = traffic["plain daemon (anchor)"]
    print(f"\n{'sync':<26} {'a9a.test':>9} {'vs plain':>9} {'progressive':>12} {'vs plain':>9} "
          f"{'B/example':>10} {'records':>8}")  # fmt: skip
    for name, r in traffic.items():
        shown = ""
        if r.members > 1:
            shown = f"{r.bytes_per_example:>10.3f} {sum(r.records_written):>8}"
        if len(r.runs_progressive) > 1:
            shown += f"   progressive per run: {', '.join(f'{p:.4f}' for p in r.runs_progressive)}"
        print(f"{name:<26} {r.accuracy:>9.4f} {r.accuracy - plain.accuracy:>+9.4f} "
              f"{r.progressive:>12.4f} {r.progressive - plain.progressive:>+9.4f} "
              f"{shown:>19}")  # fmt: skip
    for measure, label in (("accuracy", "a9a.test"), ("progressive", "progressive")):
        points = {mode: [(name, getattr(r, measure), r.bytes_per_example)
                         for name, r in traffic.items() if name.startswith(mode)]
                  for mode in ("periodic", "dynamic")}  # fmt: skip
        if points["periodic"] and points["dynamic"]:
            print()
            print_equal_accuracy(points["periodic"], points["dynamic"], tolerance, label)


def wall_table(runs: dict[str, list[Result]]) -> None:
    """Part 5: medians of the time to consume the topic, the rate and its ratio to one
    member's, CPU per example, and what one member per machine would give: each
    member's CPU seconds as its wall time on cores of its own (the group ends with its
    slowest member)."""
    lone = runs["1 member"]
    lone_wall = float(np.median([r.rate for r in lone]))
    lone_cpu = float(np.median([r.examples / max(r.member_cpu) for r in lone]))
    print(f"\n{'run':<28} {'consumed s':>10} {'examples/s':>11} {'vs 1':>5}  "
          f"{'CPU us/example/member':>22}  {'examples / slowest CPU s':>24} {'vs 1':>5}  "
          f"(medians of {len(lone)} runs)")  # fmt: skip
    for name, results in runs.items():
        wall = float(np.median([r.rate for r in results]))
        seconds = float(np.median([r.consumed_seconds for r in results]))
        cpu = float(np.median([r.examples / max(r.member_cpu) for r in results]))
        members = len(results[0].member_cpu)
        per_example = "/".join(
            f"{np.median([r.member_cpu[i] / r.member_examples[i] for r in results]) * 1e6:.2f}"
            for i in range(members)
        )
        print(f"{name:<28} {seconds:>10.2f} {wall:>11,.0f} {wall / lone_wall:>5.2f}  "
              f"{per_example:>22}  {cpu:>24,.0f} {cpu / lone_cpu:>5.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
