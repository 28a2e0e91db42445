"""The active-set schedule across data sets: the paper's default against ``shrink=True``.

``shrink=True`` keeps in level 3 only the examples its last cycle updated. Both variants
keep PDM's guarantee (the schedule is only an order of presentation); what changes is
how many presentations they need. For each case this prints both variants'
presentations, updates, passes, margin, certified gap and time (medians of interleaved
runs), and the ratios of shrink's time and presentations to the default's, measured in
the same run (the counts do not depend on the machine's noise; the times do).

Cases: Adult (a9a.train) in the PDM paper's setting and three variations of it, Reuters
grain at hard margin, two of yeast's labels one-vs-rest, and river's bundled Phishing.
The data sets of ../shared/data are skipped, with the reason, when it is missing.

Run: .venv/bin/python benchmarks/bench_schedule.py [--repeats N]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from _common import SHARED_DATA, adult, interleaved, median
from scipy.sparse import csr_matrix

from streamlearn import PDM, ActiveSetSchedule, PDMSucc
from streamlearn.learn.base import LinearLearner

SHRINK = ActiveSetSchedule(shrink=True)


@dataclass(frozen=True)
class Case:
    """One learner setting on one data set."""

    name: str
    data: str
    make: Callable[[ActiveSetSchedule], LinearLearner]


CASES = [
    Case("Adult, eps 0.01, Delta 1", "adult", lambda s: PDM(eps=0.01, delta=1.0, active_sets=s)),
    Case("Adult, eps 0.1, Delta 1", "adult", lambda s: PDM(eps=0.1, delta=1.0, active_sets=s)),
    Case("Adult, eps 0.01, Delta 0.5", "adult", lambda s: PDM(eps=0.01, delta=0.5, active_sets=s)),
    Case(
        "Adult, PDM-succ eps 0.01", "adult", lambda s: PDMSucc(eps=0.01, delta=1.0, active_sets=s)
    ),
    Case("grain, eps 0.001, Delta 0", "grain", lambda s: PDM(eps=0.001, delta=0.0, active_sets=s)),
    Case("yeast label 0, eps 0.01", "yeast0", lambda s: PDM(eps=0.01, active_sets=s)),
    Case("yeast label 3, eps 0.01", "yeast3", lambda s: PDM(eps=0.01, active_sets=s)),
    Case("Phishing, eps 0.01", "phishing", lambda s: PDM(eps=0.01, active_sets=s)),
    Case("Phishing, eps 0.001", "phishing", lambda s: PDM(eps=0.001, active_sets=s)),
]


def load(data: str) -> tuple[Any, np.ndarray] | str:
    """(X, y) for a case's data, or the reason it is missing."""
    if data == "phishing":
        from river.datasets import Phishing  # bundled with river: always there

        rows = list(Phishing())
        keys = sorted({key for x, _ in rows for key in x})
        X = np.array([[float(x.get(key, 0.0)) for key in keys] for x, _ in rows])
        return csr_matrix(X), np.array([1.0 if label else -1.0 for _, label in rows])
    if not SHARED_DATA.exists():
        return f"{SHARED_DATA} is missing (../shared/data beside the repository)"
    if data == "adult":
        return adult()
    from sklearn.datasets import load_svmlight_file

    if data == "grain":
        X, y = load_svmlight_file(str(SHARED_DATA / "reuters" / "grain.train"))
        return X.tocsr(), np.where(y > 0, 1.0, -1.0)
    X, label_sets = load_svmlight_file(str(SHARED_DATA / "yeast" / "yeast.all"), multilabel=True)
    label = int(data.removeprefix("yeast"))
    return X.tocsr(), np.array([1.0 if label in labels else -1.0 for labels in label_sets])


def fit(case: Case, schedule: ActiveSetSchedule, X: Any, y: np.ndarray) -> LinearLearner:
    """The case's learner with ``schedule``, fitted to X, y."""
    return case.make(schedule).fit(X, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    PDM(eps=0.5).fit(np.eye(3), np.array([1.0, -1.0, 1.0]))  # compile before timing

    print("default: the PDM paper's schedule; shrink: ActiveSetSchedule(shrink=True)")
    print(f"repeats: {args.repeats} (interleaved), times are medians; ratio = shrink / default")
    print()
    print(row("case", "schedule", "seconds", "present.", "updates", "passes", "margin", "gap"))
    data_sets: dict[str, tuple[Any, np.ndarray] | str] = {}
    ratios: list[tuple[float, float]] = []
    for case in CASES:
        data = data_sets.setdefault(case.data, load(case.data))
        if isinstance(data, str):
            print(f"{case.name}: skipped, {data}")
            continue
        X, y = data
        runs: dict[str, Callable[[], Any]] = {
            "default": partial(fit, case, ActiveSetSchedule(), X, y),
            "shrink": partial(fit, case, SHRINK, X, y),
        }
        results = interleaved(runs, args.repeats)
        seconds = {name: median(times) for name, (times, _) in results.items()}
        for name, (_, model) in results.items():
            s = model.summary()
            print(
                row(
                    case.name if name == "default" else "",
                    name,
                    f"{seconds[name]:.3f}",
                    f"{s['presentations'] / 1e6:.3g}e6",
                    f"{s['updates'] / 1e6:.3g}e6",
                    str(s["passes"]),
                    f"{s['margin_achieved']:.4e}",
                    f"{s['certified_gap']:.4f}",
                )
            )
        ratio = seconds["shrink"] / seconds["default"]
        shown = [results[name][1].summary()["presentations"] for name in ("shrink", "default")]
        ratios.append((ratio, shown[0] / shown[1]))
        print(row("", "ratio", f"{ratio:.2f}", f"{shown[0] / shown[1]:.2f}", "", "", "", ""))
    print()
    for i, what in enumerate(("time", "presentations")):
        values = [r[i] for r in ratios]
        if values:
            print(
                f"shrink / default {what} over {len(values)} cases: {min(values):.2f} to "
                f"{max(values):.2f}, median {median(values):.2f}"
            )


def row(*cells: str) -> str:
    """One line of the table: the first two cells left-aligned, the figures right-aligned."""
    widths = (28, 9, 8, 10, 10, 7, 11, 8)
    head = cells[0].ljust(widths[0]) + cells[1].ljust(widths[1])
    return head + "".join(c.rjust(w) for c, w in zip(cells[2:], widths[2:], strict=True))


if __name__ == "__main__":
    main()
