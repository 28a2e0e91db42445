"""Endless streams: PDM's certificate on the sliding window, checked by an independent
solver, and replay that never holds ingestion back, measured as a user meets them.

Three parts (``--part``; all of them by default). Every window is checked the same way:
``streamlearn inspect MODEL --export-buffer FILE`` writes the window, LIBLINEAR
(``-s 1 -e 0.0001 -c 1/(2 Delta^2) -B rho``) finds its maximum margin gamma*, and the
learner's ``margin_achieved`` is compared with (1 - eps) gamma* and its
``margin_upper_bound`` with gamma*.

learn
    ``streamlearn learn`` on two streams longer than its buffer:

    - repeat: ``--copies`` (30) copies of adult/a9a.train with the defaults but for
      ``--algo pdm --eps 0.05`` (buffer of 100,000 examples);
    - drift: two copies of a9a.train, then three with every label flipped, with
      ``--delta 1 --eps 0.05 --buffer-size 32561``: the final window is one flipped copy,
      whose maximum margin is Adult's. Its accuracy on a9a.test with flipped labels is
      printed too.

    With ``--baseline-src DIR`` (a checkout of another version, e.g. made with
    ``git worktree add``) each command also runs with the package of DIR, alternated with
    this one, so that both times come from the same run.
serve
    The drift stream through ``streamlearn serve`` from standard input, written at
    ``--rate`` lines a second; /metrics is scraped every ``--scrape-interval`` seconds.
    Once the input is written the pipe stays open, the daemon is idle and replays, until
    its certified gap is at most eps (or ``--idle-timeout``). Then the pipe is closed, the
    daemon writes its last checkpoint and exits, and its window is checked. The plot
    (``--plot``, PNG, needs matplotlib) shows margin achieved, upper bound and certified gap
    against examples seen and against time, with the window's maximum margin (LIBLINEAR
    on the last 32,561 lines seen, at ``--reference-points`` points) as the reference.
rates
    ``--copies`` copies of a9a.train through ``streamlearn serve --algo pdm --eps 0.05``
    with the default replay (a share of the time while behind, all idle time once caught
    up) and with ``--replay-every 0 --idle-replay off`` (no replay), alternated, from
    standard input and from Kafka (a Tansu broker, the one of tests/services.py, topic
    filled beforehand with 100 lines a message). The ingestion rate is the examples
    learned between the first scrape showing one and the first showing all, over that
    time (the start-up and the consumer-group join excluded); the target is a ratio of
    at least 0.5. The default daemon then stays connected until idle replay reaches the
    certified gap (its time is printed) and its window is checked. On Kafka the largest
    consumer lag seen is printed, and a last run feeds the topic at
    ``--kafka-input-share`` of the measured no-replay rate while the default daemon
    learns: its lag must stay bounded (printed every few seconds; the largest lag of the
    second half of the feed must not exceed that of the first half, or one second of
    input if more).

Run: .venv/bin/python benchmarks/bench_endless.py [--part learn|serve|rates]
[--copies N] [--baseline-src DIR] [--plot endless.png]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from _common import data_lines, flipped
from liblinear.liblinearutil import parameter, problem, train

EPS = 0.05
ADULT_ROWS = 32_561
DRIFT = ("--delta", "1", "--buffer-size", str(ADULT_ROWS))
SAMPLE = re.compile(rb"^(streamlearn_[a-z_]+)(\{[^}]*\})? (\S+)$", re.M)


# -- streams ------------------------------------------------------------------------------


def drift_stream(lines: list[bytes]) -> list[bytes]:
    """Two copies of Adult, then three with every label flipped."""
    return lines * 2 + flipped(lines) * 3


# -- the window check -----------------------------------------------------------------------


def streamlearn(src: str | None) -> tuple[list[str], dict[str, str]]:
    """The command that runs streamlearn (this checkout's, or the package in ``src``) and
    its environment. Run it with ``cwd=src``: ``python -m`` looks in the working
    directory first."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    return [sys.executable, "-m", "streamlearn"], env


def fields(text: str) -> dict[str, str]:
    """``key value`` lines of learn's summary and inspect's report."""
    out = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            out[parts[0]] = parts[1].strip()
    return out


def liblinear_maximum(X: Any, y: np.ndarray, rho: float, delta: float) -> float:
    """gamma* of the window: the margin of LIBLINEAR's solution in the extended space,
    a = (w, b, xi / Delta) with xi_k = max(0, 1 - l_k f(x_k)) (at the optimum, the
    maximum; a lower bound of it otherwise)."""
    c = 1.0 / (2.0 * delta * delta)
    model = train(problem(y, X), parameter(f"-s 1 -c {c!r} -B {rho!r} -e 0.0001 -q"))
    coef, bias = model.get_decfun()
    sign = 1.0 if int(model.get_labels()[0]) == 1 else -1.0
    w = np.zeros(X.shape[1])
    w[: min(len(coef), X.shape[1])] = np.asarray(coef)[: X.shape[1]]
    scores = y * (X @ (sign * w) + sign * bias)
    xi = np.maximum(0.0, 1.0 - scores)
    norm = math.sqrt(float(w @ w) + (bias / rho) ** 2 + float(xi @ xi) / (delta * delta))
    return float(np.min(scores + xi) / norm)


def read_svmlight(path: Path, n_features: int) -> tuple[Any, np.ndarray]:
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(path), n_features=n_features)
    return X.tocsr(), np.where(y > 0, 1.0, -1.0)


def check_window(model: Path) -> dict[str, Any]:
    """Export the model's window and compare its certificate with LIBLINEAR's maximum
    (this checkout's ``inspect`` reads the files of earlier versions too)."""
    command, env = streamlearn(None)
    with tempfile.TemporaryDirectory() as tmp:
        exported = Path(tmp) / "window.svm"
        out = subprocess.run(
            [*command, "inspect", str(model), "--export-buffer", str(exported)],
            env=env, check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        info = fields(out)
        X, y = read_svmlight(exported, int(info["n_features"]))
    rho = float(info["params"].split("rho=")[1].split(",")[0])
    delta = float(info["delta"])
    maximum = liblinear_maximum(X, y, rho, delta)
    achieved = float(info["margin_achieved"])
    bound = float(info["margin_upper_bound"])
    return {
        "examples": X.shape[0],
        "maximum": maximum,
        "achieved": achieved,
        "bound": bound,
        "gap": float(info["certified_gap"]),
        "ratio": achieved / maximum,
        "stopped_by": info.get("stopped_by", "-"),
        "labels": y,
    }


def window_line(check: dict[str, Any]) -> str:
    ok = check["ratio"] >= 1.0 - EPS and check["maximum"] <= check["bound"] * (1 + 1e-9)
    return (
        f"window of {check['examples']:,} examples: LIBLINEAR maximum "
        f"{check['maximum'] * 1e4:.2f}e-4, "
        f"margin achieved {check['achieved'] * 1e4:.2f}e-4 = {check['ratio']:.4f} of it "
        f"(target >= {1 - EPS:.2f}), upper bound {check['bound'] * 1e4:.2f}e-4 "
        f"(>= the maximum: {check['maximum'] <= check['bound'] * (1 + 1e-9)}), certified gap "
        f"{check['gap']:.4f} (target <= {EPS}), stopped by {check['stopped_by']}: "
        + ("ok" if ok and check["gap"] <= EPS else "NOT MET")
    )


# -- part learn ---------------------------------------------------------------------------


def run_learn(
    stream: Path, options: tuple[str, ...], model: Path, src: str | None
) -> tuple[float, dict[str, str], str]:
    command, env = streamlearn(src)
    started = time.perf_counter()
    with stream.open("rb") as data:
        done = subprocess.run(
            [*command, "learn", "--algo", "pdm", "--eps", str(EPS), *options,
             "--model", str(model)],
            stdin=data, env=env, cwd=src, check=True, capture_output=True, text=True,
        )  # fmt: skip
    seconds = time.perf_counter() - started
    return seconds, fields(done.stdout), done.stderr.strip()


def accuracy(model: Path, test: Path) -> float:
    command, env = streamlearn(None)
    out = subprocess.run(
        [*command, "eval", "--model", str(model), str(test)],
        env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return float(fields(out)["accuracy"])


def part_learn(args: argparse.Namespace, tmp: Path) -> None:
    lines = data_lines("adult/a9a.train")
    cases = {
        "repeat": (lines * args.copies, ()),
        "drift": (drift_stream(lines), DRIFT),
    }
    test = tmp / "a9a.test.flipped"
    test.write_bytes(b"".join(flipped(data_lines("adult/a9a.test"))))
    for name, (stream_lines, options) in cases.items():
        stream = tmp / f"{name}.svm"
        stream.write_bytes(b"".join(stream_lines))
        extra = " ".join(options)
        print(
            f"\n== learn, {name}: {len(stream_lines):,} lines, streamlearn learn --algo pdm "
            f"--eps {EPS} {extra}".rstrip()
        )
        versions = {"this checkout": None} | (
            {f"baseline {args.baseline_src}": args.baseline_src} if args.baseline_src else {}
        )
        times: dict[str, list[float]] = {version: [] for version in versions}
        for repeat in range(args.repeats):
            for version, src in versions.items():
                model = tmp / f"{name}-{len(times[version])}-{'b' if src else 'a'}.ckpt"
                seconds, summary, warning = run_learn(stream, options, model, src)
                times[version].append(seconds)
                print(
                    f"{version}, run {repeat + 1}: {seconds:.1f} s; converged "
                    f"{summary['converged']}, "
                    f"passes {summary['passes']}, margin_achieved {summary['margin_achieved']}, "
                    f"upper bound {summary['margin_upper_bound']}, certified_gap "
                    f"{summary['certified_gap']}"
                )
                if repeat == 0:
                    if warning:
                        print(f"  its warning: {warning}")
                    print("  " + window_line(check_window(model)))
                    if name == "drift":
                        print(
                            "  accuracy on a9a.test with flipped labels: "
                            f"{accuracy(model, test):.4f}"
                        )
        if len(times) == 2:
            ours, base = (statistics.median(t) for t in times.values())
            print(
                f"median seconds: this checkout {ours:.1f}, baseline {base:.1f}: "
                f"ratio {ours / base:.2f}"
            )


# -- a daemon, scraped ----------------------------------------------------------------------


@dataclass
class Scrape:
    """One reading of /metrics: seconds since launch and the samples by name (labels
    folded: counters and gauges summed over them)."""

    at: float
    values: dict[str, float]

    def get(self, name: str, default: float = math.nan) -> float:
        return self.values.get(name, default)


@dataclass
class Daemon:
    """A ``streamlearn serve`` subprocess and its scrapes."""

    process: subprocess.Popen[bytes]
    url: str
    launched: float
    scrapes: list[Scrape] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def scrape_every(self, interval: float) -> threading.Thread:
        def loop() -> None:
            while not self._stop.is_set() and self.process.poll() is None:
                reading = scrape(self.url)
                if reading:
                    self.scrapes.append(Scrape(time.perf_counter() - self.launched, reading))
                self._stop.wait(interval)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread

    def stop_scraping(self) -> None:
        self._stop.set()

    def latest(self) -> Scrape | None:
        return self.scrapes[-1] if self.scrapes else None

    def wait(self, what: str, ready: Callable[[Scrape], bool], timeout: float) -> float | None:
        """Seconds until a scrape meets ``ready`` (None after ``timeout`` or an exit)."""
        started = time.perf_counter()
        seen = len(self.scrapes)
        while time.perf_counter() - started < timeout and self.process.poll() is None:
            for reading in self.scrapes[seen:]:
                seen += 1
                if ready(reading):
                    return time.perf_counter() - started
            time.sleep(0.02)
        print(f"  (no scrape showed {what} within {timeout:.0f} s)")
        return None


def scrape(url: str) -> dict[str, float] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            body = answer.read()
    except OSError:
        return None
    values: dict[str, float] = {}
    for name, labels, value in SAMPLE.findall(body):
        key = name.decode()
        if labels and b'outcome="learned"' in labels:
            key += ":learned"
        values[key] = values.get(key, 0.0) + float(value)
    return values


@contextmanager
def daemon(options: list[str], stdin: int | IO[bytes] | None, port: int) -> Iterator[Daemon]:
    command, env = streamlearn(None)
    full = [*command, "serve", "--algo", "pdm", "--eps", str(EPS), *options,
            "--metrics-addr", f"127.0.0.1:{port}"]  # fmt: skip
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the daemon has stopped
    process = subprocess.Popen(full, stdin=stdin, stdout=subprocess.DEVNULL, stderr=log, env=env)
    running = Daemon(process, f"http://127.0.0.1:{port}/metrics", time.perf_counter())
    try:
        yield running
    finally:
        running.stop_scraping()
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.returncode != 0:
            log.seek(0)
            print(
                f"  daemon exit code {process.returncode}; its log:\n{log.read().decode()[-3000:]}"
            )
        log.close()


def learned(reading: Scrape) -> float:
    return reading.get("streamlearn_examples_total:learned", 0.0)


def replay_while_learning(running: Daemon, n: int) -> str:
    """Replay seconds until the first scrape showing all ``n`` learned, and their share of
    the time since the first learned example."""
    first = next((s for s in running.scrapes if learned(s) > 0), None)
    last = next((s for s in running.scrapes if learned(s) >= n), None)
    if first is None or last is None or last.at <= first.at:
        return "replay while learning: not measured"
    seconds = last.get("streamlearn_replay_seconds_total", 0.0)
    return (
        f"replay while learning: {seconds:.2f} s, {seconds / (last.at - first.at):.2f} of the time"
    )


def ingestion(running: Daemon, n: int) -> tuple[float, float]:
    """(examples/s, seconds) from the first scrape showing a learned example to the first
    showing all ``n``."""
    first = next((s for s in running.scrapes if learned(s) > 0), None)
    last = next((s for s in running.scrapes if learned(s) >= n), None)
    if first is None or last is None or last.at <= first.at:
        return math.nan, math.nan
    return (learned(last) - learned(first)) / (last.at - first.at), last.at - first.at


def certified(reading: Scrape, n: int) -> bool:
    """Whether the certificate, taken after all ``n`` examples, has reached eps."""
    taken_after = reading.get("streamlearn_certificate_examples", 0.0)
    return taken_after >= n and reading.get("streamlearn_certified_gap") <= EPS


#: the anchor: online learning alone, no replay at all
NO_REPLAY = ["--replay-every", "0", "--idle-replay", "off"]


def newest_checkpoint(directory: Path) -> Path:
    return sorted(directory.glob("*.ckpt"))[-1]


def quiet_options(checkpoints: Path) -> list[str]:
    """Checkpoints only at the end (the last one is checked)."""
    return ["--checkpoint-dir", str(checkpoints), "--checkpoint-every", "1000000000",
            "--checkpoint-interval", "1h"]  # fmt: skip


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- part serve: the picture ----------------------------------------------------------------


def feed(pipe: IO[bytes], lines: list[bytes], rate: float, fed: list[int]) -> None:
    """Write ``lines`` at ``rate`` lines a second, in chunks of a tenth of a second."""
    chunk = max(1, int(rate / 10))
    started = time.perf_counter()
    for first in range(0, len(lines), chunk):
        pipe.write(b"".join(lines[first : first + chunk]))
        pipe.flush()
        fed[0] = min(first + chunk, len(lines))
        ahead = started + fed[0] / rate - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)


def part_serve(args: argparse.Namespace, tmp: Path) -> None:
    lines = drift_stream(data_lines("adult/a9a.train"))
    n = len(lines)
    checkpoints = tmp / "serve-checkpoints"
    print(
        f"\n== serve: the drift stream ({n:,} lines) from standard input at {args.rate:,.0f} "
        f"lines/s, streamlearn serve --algo pdm --eps {EPS} {' '.join(DRIFT)}"
    )
    with daemon([*DRIFT, *quiet_options(checkpoints)], subprocess.PIPE, free_port()) as running:
        assert running.process.stdin is not None
        running.scrape_every(args.scrape_interval)
        fed = [0]
        feed(running.process.stdin, lines, args.rate, fed)
        fed_at = time.perf_counter() - running.launched
        print(f"input written in {fed_at:.1f} s after launch; the pipe stays open")
        took = running.wait("the certified gap", lambda s: certified(s, n), args.idle_timeout)
        if took is not None:
            print(f"certified gap <= {EPS} {took:.1f} s after the input was written")
        time.sleep(2 * args.scrape_interval)
        running.stop_scraping()
        running.process.stdin.close()
        code = running.process.wait(timeout=300)
        print(f"stdin closed: the daemon wrote its last checkpoint and exited with {code}")
    check = check_window(newest_checkpoint(checkpoints))
    print(window_line(check))
    last_window = [float(line.split(b" ", 1)[0]) for line in lines[-ADULT_ROWS:]]
    print(f"the exported window is the stream's last {ADULT_ROWS:,} lines: "
          f"{bool(np.array_equal(check['labels'], np.sign(last_window)))}")  # fmt: skip
    references = reference_points(lines, running.scrapes, args.reference_points)
    for seen, maximum in references:
        print(f"  window maximum after {seen:,} examples: {maximum * 1e4:.2f}e-4")
    if args.plot:
        plot(args.plot, running.scrapes, references, fed_at, check["maximum"])


def reference_points(
    lines: list[bytes], scrapes: list[Scrape], points: int
) -> list[tuple[int, float]]:
    """LIBLINEAR's maximum margin over the last ADULT_ROWS lines seen, at ``points``
    evenly spaced counts of examples seen."""
    from sklearn.datasets import load_svmlight_file

    seen = sorted({int(learned(s)) for s in scrapes if learned(s) > 0})
    if not seen:
        return []
    picks = sorted({seen[int(i)] for i in np.linspace(0, len(seen) - 1, points)})
    out = []
    for count in picks:
        window = lines[max(0, count - ADULT_ROWS) : count]
        with tempfile.NamedTemporaryFile(suffix=".svm") as f:
            f.write(b"".join(window))
            f.flush()
            X, y = load_svmlight_file(f.name, n_features=123)
        out.append((count, liblinear_maximum(X.tocsr(), np.where(y > 0, 1.0, -1.0), 1.0, 1.0)))
    return out


def plot(
    path: str,
    scrapes: list[Scrape],
    references: list[tuple[int, float]],
    fed_at: float,
    final_maximum: float,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [
        s
        for s in scrapes
        if learned(s) > 0 and math.isfinite(s.get("streamlearn_margin_upper_bound"))
    ]
    seen = np.array([learned(s) for s in shown])
    at = np.array([s.at for s in shown])
    achieved = np.array([s.get("streamlearn_margin_achieved") for s in shown]) * 1e4
    bound = np.array([s.get("streamlearn_margin_upper_bound") for s in shown]) * 1e4
    gap = np.array([s.get("streamlearn_certified_gap") for s in shown])
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex="col")
    (margins_n, margins_t), (gaps_n, gaps_t) = axes
    for axis, x in ((margins_n, seen), (margins_t, at)):
        axis.plot(x, bound, label="upper bound ||a|| / t")
        axis.plot(x, achieved, label="margin achieved")
        axis.set_ylabel("margin (1e-4)")
        axis.set_ylim(0, max(3 * final_maximum * 1e4, float(np.nanmax(achieved)) * 1.2))
    margins_n.plot(
        [r[0] for r in references], [r[1] * 1e4 for r in references], "k.",
        label="window maximum (LIBLINEAR)",
    )  # fmt: skip
    margins_t.axhline(final_maximum * 1e4, color="k", linestyle=":", label="final window maximum")
    for axis, x in ((gaps_n, seen), (gaps_t, at)):
        axis.semilogy(x, np.maximum(gap, 1e-4), label="certified gap")
        axis.axhline(EPS, color="r", linestyle="--", label=f"eps = {EPS}")
        axis.set_ylabel("1 - achieved / bound")
    for axis in (margins_t, gaps_t):
        axis.axvline(fed_at, color="grey", linestyle=":", label="input ends")
    gaps_n.set_xlabel("examples seen")
    gaps_t.set_xlabel("seconds since launch")
    margins_n.set_title("Adult x2, then labels flipped x3; window 32,561")
    margins_t.set_title("the same, against time (idle replay after the input)")
    for axis in axes.flat:
        axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


# -- part rates ---------------------------------------------------------------------------


def part_rates(args: argparse.Namespace, tmp: Path) -> None:
    lines = data_lines("adult/a9a.train") * args.copies
    n = len(lines)
    stream = tmp / "rates.svm"
    stream.write_bytes(b"".join(lines))
    print(f"\n== rates: {n:,} lines, streamlearn serve --algo pdm --eps {EPS}")
    runs = {"default replay": [], "no replay": NO_REPLAY}
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for repeat in range(args.repeats):
        for name, options in runs.items():
            rate = stdin_run(name, options, stream, n, tmp / f"stdin-{repeat}-{len(name)}", args)
            rates[name].append(rate)
    ratio_line("standard input", rates)
    if args.no_kafka:
        return
    kafka_rates(args, lines, tmp)


def ratio_line(source: str, rates: dict[str, list[float]]) -> None:
    default, plain = (statistics.median(r) for r in rates.values())
    print(
        f"{source}: medians default {default:,.0f}/s, no replay {plain:,.0f}/s: ratio "
        f"{default / plain:.2f} (target >= 0.5): " + ("ok" if default / plain >= 0.5 else "NOT MET")
    )


def stdin_run(
    name: str, options: list[str], stream: Path, n: int, checkpoints: Path, args: argparse.Namespace
) -> float:
    with daemon([*options, *quiet_options(checkpoints)], subprocess.PIPE, free_port()) as running:
        assert running.process.stdin is not None
        running.scrape_every(args.scrape_interval)
        with stream.open("rb") as data:
            while block := data.read(1 << 20):
                running.process.stdin.write(block)
        running.process.stdin.flush()
        running.wait("every example learned", lambda s: learned(s) >= n, 600)
        rate, seconds = ingestion(running, n)
        print(
            f"standard input, {name}: {n:,} learned in {seconds:.2f} s: {rate:,.0f} examples/s; "
            + replay_while_learning(running, n)
        )
        if not options:
            idle(running, n, args)
        running.process.stdin.close()
        running.process.wait(timeout=300)
    if not options:
        print("  " + window_line(check_window(newest_checkpoint(checkpoints))))
    return rate


def idle(running: Daemon, n: int, args: argparse.Namespace) -> None:
    reading = running.latest()
    gap = reading.get("streamlearn_certified_gap") if reading else math.nan
    shown = f"{gap:.3f}" if math.isfinite(gap) else "none reported yet"
    print(f"  certified gap when the last example was learned: {shown}")
    took = running.wait("the certified gap", lambda s: certified(s, n), args.idle_timeout)
    if took is not None:
        print(f"  idle replay: certified gap <= {EPS} after {took:.1f} s more")


def kafka_rates(args: argparse.Namespace, lines: list[bytes], tmp: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import services
    from bench_serve_kafka import produce

    n = len(lines)
    values = [b"".join(lines[i : i + 100]) for i in range(0, n, 100)]
    tansu = services.Tansu()
    try:
        topic = f"endless-{uuid.uuid4().hex[:8]}"
        tansu.create_topic(topic, 1)
        produced = produce(tansu.bootstrap, topic, values)
        print(
            f"\nKafka: {len(values):,} messages of 100 lines on 1 partition "
            f"(produced in {produced:.1f} s)"
        )
        runs = {"default replay": [], "no replay": NO_REPLAY}
        rates: dict[str, list[float]] = {name: [] for name in runs}
        for repeat in range(args.repeats):
            for name, options in runs.items():
                checkpoints = tmp / f"kafka-{repeat}-{len(name)}"
                rates[name].append(kafka_run(tansu, topic, name, options, n, checkpoints, args))
        ratio_line("Kafka", rates)
        steady_input(tansu, values, statistics.median(rates["no replay"]), tmp, args)
    finally:
        tansu.stop()


def largest_lag(running: Daemon, begin: float, seconds: float) -> float:
    """The largest consumer lag scraped from ``begin`` (seconds since launch) on."""
    lags = [
        s.get("streamlearn_consumer_lag_messages", 0.0)
        for s in running.scrapes
        if begin <= s.at < begin + seconds
    ]
    return max(lags, default=math.nan)


def kafka_options(tansu: Any, topic: str, checkpoints: Path) -> list[str]:
    return ["--source", "kafka", "--bootstrap-servers", tansu.bootstrap, "--topic", topic,
            "--group", f"endless-{uuid.uuid4().hex[:8]}", *quiet_options(checkpoints)]  # fmt: skip


def kafka_run(
    tansu: Any,
    topic: str,
    name: str,
    options: list[str],
    n: int,
    checkpoints: Path,
    args: argparse.Namespace,
) -> float:
    with daemon(
        [*options, *kafka_options(tansu, topic, checkpoints)], None, free_port()
    ) as running:
        running.scrape_every(args.scrape_interval)
        running.wait("every example learned", lambda s: learned(s) >= n, 600)
        rate, seconds = ingestion(running, n)
        lag = max(
            (s.get("streamlearn_consumer_lag_messages", 0.0) for s in running.scrapes),
            default=math.nan,
        )
        print(
            f"Kafka, {name}: {n:,} learned in {seconds:.2f} s: {rate:,.0f} examples/s; "
            f"largest consumer lag seen {lag:,.0f} messages (the topic was filled beforehand); "
            + replay_while_learning(running, n)
        )
        if not options:
            idle(running, n, args)
    if not options:
        print("  " + window_line(check_window(newest_checkpoint(checkpoints))))
    return rate


def steady_input(
    tansu: Any, values: list[bytes], plain_rate: float, tmp: Path, args: argparse.Namespace
) -> None:
    """Feed a new topic at a share of the no-replay rate while the default daemon learns."""
    from kafka import KafkaProducer

    topic = f"endless-steady-{uuid.uuid4().hex[:8]}"
    tansu.create_topic(topic, 1)
    target = args.kafka_input_share * plain_rate / 100.0  # messages a second
    print(
        f"\nKafka, steady input: the default daemon on a topic fed at {args.kafka_input_share} of "
        f"the no-replay rate ({target * 100:,.0f} lines/s asked)"
    )
    options = kafka_options(tansu, topic, tmp / "kafka-steady")
    with daemon(options, None, free_port()) as running:
        running.scrape_every(args.scrape_interval)
        running.wait("the daemon ready", lambda s: s.get("streamlearn_ready") == 1.0, 120)
        producer = KafkaProducer(bootstrap_servers=tansu.bootstrap, linger_ms=5, acks=1)
        started = time.perf_counter()
        report = started
        sent = 0
        try:
            for value in values:
                producer.send(topic, value=value, partition=0)
                sent += 1
                ahead = started + sent / target - time.perf_counter()
                if ahead > 0:
                    time.sleep(ahead)
                if time.perf_counter() - report >= 5.0:
                    producer.flush()  # "sent" means in the topic: the asked rate may be more
                    report = time.perf_counter()
                    reading = running.latest()
                    lag = (
                        reading.get("streamlearn_consumer_lag_messages", 0.0)
                        if reading
                        else math.nan
                    )
                    print(
                        f"  {report - started:5.1f} s: {sent * 100:,} lines sent, "
                        f"consumer lag {lag:,.0f} messages"
                    )
            producer.flush()
        finally:
            producer.close()
        feeding = time.perf_counter() - started
        begin = started - running.launched
        per_second = sent / feeding
        halves = [largest_lag(running, begin + h * feeding / 2, feeding / 2) for h in (0, 1)]
        bounded = halves[1] <= max(halves[0], per_second)
        print(
            f"  fed {sent:,} messages in {feeding:.1f} s ({per_second * 100:,.0f} lines/s); "
            f"largest consumer lag in the first half of the feed {halves[0]:,.0f} messages "
            f"({halves[0] / per_second:.2f} s of input), in the second half {halves[1]:,.0f} "
            f"({halves[1] / per_second:.2f} s): " + ("bounded" if bounded else "GROWING")
        )
        idle(running, sum(value.count(b"\n") for value in values[:sent]), args)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", choices=["learn", "serve", "rates", "all"], default="all")
    parser.add_argument("--copies", type=int, default=30, help="copies of a9a.train (learn, rates)")
    parser.add_argument("--repeats", type=int, default=1, help="alternated runs of each")
    parser.add_argument("--baseline-src", help="a checkout whose package learn also runs")
    parser.add_argument("--rate", type=float, default=8000.0, help="serve: lines a second")
    parser.add_argument("--scrape-interval", type=float, default=0.05, help="seconds")
    parser.add_argument("--idle-timeout", type=float, default=300.0, help="seconds")
    parser.add_argument("--reference-points", type=int, default=12)
    parser.add_argument("--plot", default="endless.png", help="serve: PNG file ('' for none)")
    parser.add_argument("--no-kafka", action="store_true", help="rates: standard input only")
    parser.add_argument("--kafka-input-share", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if args.part in ("learn", "all"):
            part_learn(args, tmp)
        if args.part in ("serve", "all"):
            part_serve(args, tmp)
        if args.part in ("rates", "all"):
            part_rates(args, tmp)


if __name__ == "__main__":
    main()
