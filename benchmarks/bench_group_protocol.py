"""Dynamic against periodic averaging as protocols: learning groups run in one process,
without a broker or timing, so that every figure is a function of the stream alone.

Each member is the group's own code (a PDM learner, ``--eps 0.05 --delta 1``, in a
:class:`~streamlearn.group.member.GroupMember`), its sync topic a log in memory that
every member reads in full after each message (no latency: a record is folded by the
others before they learn their next message). The stream is copies of adult/a9a.train,
100 lines a message, messages round robin over 4 partitions, partition p learned by
member p mod K, the members taking their messages in the stream's order. A replay pass
every 20,000 examples a member learns, as ``serve --replay-every 20000``; no time budget
(``--sync-share 1``) and no idle time.

For each run:

- bytes of records per example of the stream, and the records;
- the progressive accuracy of the members' learners (each message predicted by its
  member's learner just before it learns it: the common model plus the member's own
  progress since its last record);
- the progressive accuracy of the common model (the same messages predicted by the sum
  of the records last published: what every member answers with, and what its
  ``streamlearn_progressive_total`` counts);
- accuracy on a9a.test once every member has published its last record (labels as the
  stream's last phase has them).

The two protocols are compared at equal accuracy, for each of the two progressive
measures and both ways round (a run is as accurate as another at most ``--equal``, 0.2
point, below it: about the standard error of a difference of means over 3 orders): at
each periodic run's accuracy, the cheapest dynamic run as accurate, and the ratio of
their bytes (the issue's target: at most 0.1); at each dynamic run's accuracy, the
cheapest periodic run as accurate, if any. ``--seeds`` runs each setting on several
orders of the stream (each copy shuffled) and reports the means.

Streams: ``--copies`` (10) copies in windows that hold them (``same``), the same in
windows of 200,000 over the group, which evict (``evicting``), and ``--phases`` (4)
phases of ``--phase-copies`` (2) copies with the labels flipped every other phase,
windows of one copy of Adult over the group (``drift``).

Run: .venv/bin/python benchmarks/bench_group_protocol.py [--members 2,4] [--streams
same,evicting,drift] [--seeds 0]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from _common import data_file, print_equal_accuracy

from streamlearn.config import LearnerSpec
from streamlearn.group.member import GroupMember
from streamlearn.group.policy import SyncPolicy
from streamlearn.group.records import decode_record
from streamlearn.learn.contribution import Contribution, summed
from streamlearn.learn.inputs import as_batch
from streamlearn.replay import ReplaySchedule

PARTITIONS = 4
LINES_PER_MESSAGE = 100
MAX_FEATURES = 1 << 20


class Log:
    """A sync topic in memory: every record in order, and the latest share per member."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, bytes | None]] = []
        self.latest: dict[str, Contribution] = {}
        self.bytes = 0


class Reader:
    """One member's view of the :class:`Log` (the member's transport)."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.at = 0
        self.bytes_written = 0
        self.bytes_read = 0

    def read(self, *, to_end: bool, timeout: float = 60.0) -> list[tuple[str, bytes | None]]:
        entries = self.log.entries[self.at :]
        self.at = len(self.log.entries)
        return entries

    def write(self, key: str, value: bytes | None) -> None:
        assert value is not None
        self.log.entries.append((key, value))
        self.log.bytes += len(value)
        self.bytes_written += len(value)
        self.log.latest[key] = decode_record(value, MAX_FEATURES).share


class Ticks:
    """A clock that moves a millisecond at each reading: no interval is ever reached."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


@dataclass
class Stream:
    name: str
    copies: int
    #: copies per label phase (0: one phase)
    phase: int
    #: window of each member: the group's window over K (0: the stream)
    group_window: int


@dataclass
class Run:
    members: int
    mode: str
    setting: float
    records: int = 0
    bytes_per_example: float = 0.0
    local: float = 0.0
    common: float = 0.0
    final: float = 0.0
    seconds: float = 0.0
    #: common progressive accuracy of each order of the stream averaged in this run
    commons: tuple[float, ...] = ()

    @property
    def name(self) -> str:
        if self.mode == "periodic":
            return f"periodic every {self.setting:,.0f}"
        return f"dynamic, threshold {self.setting:g}"


def mean_run(runs: list[Run]) -> Run:
    """The mean of ``runs`` (one setting over orders of the stream)."""
    first = runs[0]
    return Run(
        first.members, first.mode, first.setting,
        round(float(np.mean([r.records for r in runs]))),
        float(np.mean([r.bytes_per_example for r in runs])),
        float(np.mean([r.local for r in runs])), float(np.mean([r.common for r in runs])),
        float(np.mean([r.final for r in runs])), float(sum(r.seconds for r in runs)),
        tuple(r.common for r in runs),
    )  # fmt: skip


def common_scores(log: Log, X: Any, rho: float) -> np.ndarray:
    """Decision values of the sum of the latest records (0 before any)."""
    if not log.latest:
        return np.zeros(X.shape[0])
    shares = list(log.latest.values())
    weights, (beta, _, _) = summed(shares, max(share.exponent for share in shares))
    dense = np.zeros(X.shape[1])
    n = min(weights.shape[0], X.shape[1])
    dense[:n] = weights[:n]
    scores: np.ndarray = np.asarray(X @ dense) + rho * beta
    return scores


def stream_order(n: int, copies: int, seed: int) -> np.ndarray:
    """Row of Adult at each position of the stream: the copies one after another, each
    in the file's order (``seed`` 0) or shuffled (each copy its own order)."""
    if seed == 0:
        return np.tile(np.arange(n), copies)
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.permutation(n) for _ in range(copies)])


def run(
    stream: Stream, members: int, mode: str, setting: float, data: Any, args: Any, seed: int = 0
) -> Run:
    X, y, Xt, yt = data
    n = X.shape[0]
    total = n * stream.copies
    order = stream_order(n, stream.copies, seed)
    window = (stream.group_window or total) // members
    spec = LearnerSpec.from_options("pdm", {"eps": 0.05, "delta": "1", "buffer_size": window})
    if mode == "periodic":
        policy = SyncPolicy("periodic", every=int(setting), share=1.0, max_interval=1e12)
    else:
        policy = SyncPolicy("dynamic", every=args.sync_every, threshold=setting, share=1.0,
                            max_interval=1e12)  # fmt: skip
    log = Log()
    group = [
        GroupMember(spec.build(), Reader(log), member_id=f"m{k}", model={"algorithm": "pdm"},
                    policy=policy, max_features=MAX_FEATURES, clock=Ticks(), wall=Ticks())
        for k in range(members)
    ]  # fmt: skip
    for k, member in enumerate(group):
        member.take({p for p in range(PARTITIONS) if p % members == k})
    schedule = ReplaySchedule(every=args.replay_every, passes=1)
    seen = [0] * members
    offsets = dict.fromkeys(range(PARTITIONS), 0)
    right_local = right_common = 0
    rho = group[0].learner.rho
    flip = 1.0
    started = time.perf_counter()
    for start in range(0, total, LINES_PER_MESSAGE):
        message = start // LINES_PER_MESSAGE
        partition = message % PARTITIONS
        k = partition % members
        member = group[k]
        rows = order[start : start + LINES_PER_MESSAGE]
        flip = -1.0 if stream.phase and (start // (n * stream.phase)) % 2 else 1.0
        Xb, yb = X[rows], y[rows] * flip
        right_local += int(np.sum(np.where(member.learner.decision_function(Xb) > 0, 1, -1) == yb))
        right_common += int(np.sum(np.where(common_scores(log, Xb, rho) > 0, 1, -1) == yb))
        seen[k] = member.learner.learn_on_schedule(as_batch(Xb, yb), schedule, seen[k])
        offsets[partition] += 1
        member.learned({partition: len(rows)}, {partition: offsets[partition]})
        member.sync()
    for member in group:  # the last word of each member, as at the end of serve
        member.publish()
    final = float(np.mean(np.where(common_scores(log, Xt, rho) > 0, 1, -1) == yt * flip))
    return Run(members, mode, setting, len(log.entries), log.bytes / total,
               right_local / total, right_common / total, final,
               time.perf_counter() - started)  # fmt: skip


def matched(runs: list[Run], measure: str, tolerance: float) -> None:
    """Dynamic against periodic runs at equal ``measure`` accuracy, both ways round."""
    points = {mode: [(r.name, getattr(r, measure), r.bytes_per_example) for r in runs
                     if r.mode == mode] for mode in ("periodic", "dynamic")}  # fmt: skip
    print_equal_accuracy(points["periodic"], points["dynamic"], tolerance, measure)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", default="2,4")
    parser.add_argument("--streams", default="same,evicting,drift")
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--phase-copies", type=int, default=2)
    parser.add_argument("--phases", type=int, default=4)
    parser.add_argument("--periods", default="500,1000,2000,4000,8000,16000")
    parser.add_argument("--thresholds", default="0.2,0.4,0.6,0.7,0.8,0.9")
    parser.add_argument("--sync-every", type=int, default=1000)
    parser.add_argument("--replay-every", type=int, default=20_000)
    parser.add_argument("--seeds", default="1,2,3",
                        help="orders of the stream: 0 the file's, others each copy shuffled; "
                        "figures are means over them")  # fmt: skip
    parser.add_argument("--equal", type=float, default=0.002,
                        help="an accuracy at most this far below is as accurate")  # fmt: skip
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    from sklearn.datasets import load_svmlight_file  # as benchmarks/_common.py's adult()

    X, y = load_svmlight_file(str(data_file("adult/a9a.train")), n_features=123)
    Xt, yt = load_svmlight_file(str(data_file("adult/a9a.test")), n_features=123)
    data = (X.tocsr(), np.where(y > 0, 1.0, -1.0), Xt.tocsr(), np.where(yt > 0, 1.0, -1.0))
    adult = X.shape[0]
    streams = {
        "same": Stream("same", args.copies, 0, 0),
        "evicting": Stream("evicting", args.copies, 0, 0),
        "drift": Stream("drift", args.phases * args.phase_copies, args.phase_copies, adult),
    }
    settings = [("periodic", float(p)) for p in args.periods.split(",")]
    settings += [("dynamic", float(t)) for t in args.thresholds.split(",")]
    for name in args.streams.split(","):
        stream = streams[name]
        for members in (int(m) for m in args.members.split(",")):
            if name == "evicting":  # the group's window 200,000: every member's evicts
                stream = Stream("evicting", args.copies, 0, 200_000)
            window = (stream.group_window or adult * stream.copies) // members
            print(f"\n== {name}: {adult * stream.copies:,} lines ({stream.copies} copies"
                  f"{f', labels flipped every {stream.phase}' if stream.phase else ''}), "
                  f"{members} members, windows of {window:,}")  # fmt: skip
            print(f"  {'sync':<24} {'records':>7} {'B/example':>9} {'members':>8} "
                  f"{'common':>8} {'a9a.test':>8}   (progressive: members' models, "
                  "common)")  # fmt: skip
            runs = []
            for mode, setting in settings:
                r = mean_run([run(stream, members, mode, setting, data, args, seed)
                              for seed in seeds])  # fmt: skip
                runs.append(r)
                spread = (f"   common per order: {', '.join(f'{c:.4f}' for c in r.commons)}"
                          if len(seeds) > 1 else "")  # fmt: skip
                print(f"  {r.name:<24} {r.records:>7} {r.bytes_per_example:>9.3f} "
                      f"{r.local:>8.4f} {r.common:>8.4f} {r.final:>8.4f}{spread}",
                      flush=True)  # fmt: skip
            matched(runs, "local", args.equal)
            matched(runs, "common", args.equal)


if __name__ == "__main__":
    main()
