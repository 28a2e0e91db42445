"""One-vs-rest model banks against LIBLINEAR one-vs-rest, same features, same run.

- Reuters-21578 corn and grain (../shared/data/reuters, tf-idf, unit rows): each topic
  as its own one-label problem, and both together as a two-label problem. The corn and
  grain files hold the same documents in the same order with identical feature vectors
  (checked here, line by line), so a document's label set is {corn if +1 in corn.*} and
  {grain if +1 in grain.*}.
- yeast (../shared/data/yeast/yeast.all, 14 labels): the first 1500 lines train, the
  other 917 test (the literature's 1500/917 split, in file order).
- Fashion-MNIST (built by ../shared/datasets/build.py into ~/.cache/streamlearn/data, or
  found in ../shared/data/fashion): ten classes, the argmax of the bank.

Solvers. PAUM(tau_neg, tau_pos) over the paper's grid, in the paper's form (rho = R,
learning rate 1) with lambda = Delta^2 = 1, replayed to convergence; the grid point
chosen by 3-fold cross-validation of macro average precision on the training set (the
paper chose by 10-fold cross-validation); PAUM with the per-label tau_pos of the
paper's proposal (``tau_pos_kappa``); PDM (eps = 0.01, Delta = 1). Anchors: LIBLINEAR
``-s 3 -c 1 -B R`` (hinge-loss SVM, the paper's SVM) and ``-s 1 -c 0.5 -B R`` (the
2-norm soft-margin problem PDM solves with Delta = 1), one binary model per label.
Figures on the test set: MAP (macro-averaged average precision, the paper's measure),
MAP over the rarest third of the labels (the paper's LAST30, for the few-positive
topics PAUM was made for), macro and micro F1 and training time (median of interleaved
repeats; the grid's points are timed once).

Run: .venv/bin/python benchmarks/bench_multilabel.py [--only reuters,yeast,fashion]
     [--repeats N] [--fashion-train N]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from _common import SHARED_DATA, interleaved, median, timed
from liblinear.liblinearutil import parameter, problem, train

from streamlearn import PAUM, PDM, ModelBank
from streamlearn.evaluation import multilabel_scores
from streamlearn.parse import SvmlightParser

TAU_NEG = (-1.5, -1.0, -0.5, 0.0, 0.1, 0.5, 1.0)
TAU_POS = (-1.0, -0.5, 0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0)
LAMBDA = 1.0  # Delta^2 of PAUM and PDM; LIBLINEAR -s 1 solves PDM's problem with C = 1/(2 lambda)
KAPPAS = (-10.0, -50.0)
FASHION_CACHE = Path(os.environ.get("STREAMLEARN_DATA_CACHE", "~/.cache/streamlearn/data"))
BUILDER = SHARED_DATA.parent / "datasets" / "build.py"


@dataclass
class Split:
    """Train and test rows with label sets as a 0/1 matrix over ``labels``."""

    name: str
    X: sp.csr_matrix
    Y: np.ndarray
    X_test: sp.csr_matrix
    Y_test: np.ndarray
    labels: list[str]

    def label_sets(self) -> list[list[int]]:
        return [np.flatnonzero(row).tolist() for row in self.Y]

    @property
    def radius(self) -> float:
        return float(np.sqrt(self.X.multiply(self.X).sum(axis=1).max()))


# -- data ----------------------------------------------------------------------------------


def read_svmlight(path: Path, n_features: int | None = None) -> tuple[sp.csr_matrix, Any]:
    """CSR features and the parser's rows (for their label sets)."""
    parser = SvmlightParser()
    rows = parser.feed(path.read_bytes())
    tail = parser.finish()
    if rows.rejected or tail.n_rows or tail.rejected:
        sys.exit(f"{path}: unexpected rejected or unterminated lines")
    width = n_features or int(rows.indices.max()) + 1
    X = sp.csr_matrix((rows.values, rows.indices, rows.indptr), shape=(rows.n_rows, width))
    return X, rows


def reuters_splits() -> list[Split] | None:
    folder = SHARED_DATA / "reuters"
    if not folder.exists():
        print(f"reuters: skipped, {folder} is missing (../shared/data beside the repository)")
        return None
    parts = {}
    for topic in ("corn", "grain"):
        for split in ("train", "test"):
            X, rows = read_svmlight(folder / f"{topic}.{split}", n_features=10873)
            parts[topic, split] = (X, rows.labels > 0)
    splits = []
    for topic in ("corn", "grain"):
        (X, y), (Xt, yt) = parts[topic, "train"], parts[topic, "test"]
        splits.append(Split(topic, X, y[:, None], Xt, yt[:, None], [topic]))
    same = all((parts["corn", s][0] != parts["grain", s][0]).nnz == 0 for s in ("train", "test"))
    if not same:
        print("reuters corn+grain: skipped, the two files' feature vectors differ")
        return splits
    both = [np.column_stack([parts["corn", s][1], parts["grain", s][1]]) for s in ("train", "test")]
    X, Xt = parts["corn", "train"][0], parts["corn", "test"][0]
    splits.append(Split("corn+grain", X, both[0], Xt, both[1], ["corn", "grain"]))
    return splits


def yeast_split() -> Split | None:
    path = SHARED_DATA / "yeast" / "yeast.all"
    if not path.exists():
        print(f"yeast: skipped, {path} is missing (../shared/data beside the repository)")
        return None
    X, rows = read_svmlight(path)
    Y = np.zeros((rows.n_rows, 14), dtype=bool)
    row_of_label = np.repeat(np.arange(rows.n_rows), np.diff(rows.label_ptr))
    Y[row_of_label, rows.labels.astype(int)] = True
    return Split("yeast", X[:1500], Y[:1500], X[1500:], Y[1500:], [str(j) for j in range(14)])


def fashion_files() -> tuple[Path, Path] | None:
    """Fashion-MNIST's files: found, built now from the Debian package, or None."""
    for folder in (SHARED_DATA / "fashion", FASHION_CACHE.expanduser() / "fashion"):
        train_file, test_file = folder / "fashion.train", folder / "fashion.test"
        if train_file.exists() and test_file.exists():
            return train_file, test_file
    if not Path("/usr/share/datasets/fashion-mnist").is_dir():
        print(
            "fashion: skipped, not built and the Debian package dataset-fashion-mnist is "
            "not installed (apt-get install -y dataset-fashion-mnist, then run again)"
        )
        return None
    if not BUILDER.exists():
        print(f"fashion: skipped, the builder {BUILDER} is missing")
        return None
    out = FASHION_CACHE.expanduser()
    print(f"fashion: building it into {out} with {BUILDER} (about a minute)", flush=True)
    subprocess.run([sys.executable, str(BUILDER), str(out), "fashion"], check=True)
    return out / "fashion" / "fashion.train", out / "fashion" / "fashion.test"


# -- solvers ---------------------------------------------------------------------------------


def bank_fit(base: Any, split: Split, **bank_params: Any) -> Callable[[], ModelBank]:
    sets = split.label_sets()
    # declared labels: a label without a training positive still gets its learner
    return lambda: (
        ModelBank(base, **bank_params).declare_labels(range(len(split.labels))).fit(split.X, sets)
    )


def bank_decisions(bank: ModelBank, X: sp.csr_matrix, n_labels: int) -> np.ndarray:
    scores = bank.decision_function(X)
    return scores[:, np.argsort(bank.labels_)][:, :n_labels]


def liblinear_fit(options: str, split: Split) -> Callable[[], list[Any]]:
    """One binary LIBLINEAR model per label (+1: the label, -1: the rest)."""
    problems = [problem(np.where(y, 1.0, -1.0), split.X, bias=split.radius) for y in split.Y.T]
    return lambda: [train(p, parameter(f"{options} -B {split.radius} -q")) for p in problems]


def liblinear_decisions(models: list[Any], X: sp.csr_matrix) -> np.ndarray:
    columns = []
    for model in models:
        w, b = model.get_decfun()
        sign = 1.0 if model.get_labels()[0] == 1 else -1.0
        columns.append(sign * (X @ np.asarray(w)[: X.shape[1]] + b))
    return np.column_stack(columns)


def figures(Y: np.ndarray, decisions: np.ndarray) -> dict[str, Any]:
    return multilabel_scores(Y, decisions, list(range(Y.shape[1])))


def paum(tau_neg: float, tau_pos: float, radius: float) -> PAUM:
    return PAUM(tau_neg=tau_neg, tau_pos=tau_pos, rho=radius, delta=math.sqrt(LAMBDA))


def cross_validated_map(split: Split, tau_neg: float, tau_pos: float, folds: int = 3) -> float:
    """Mean over folds of the macro average precision on the held-out part."""
    n = split.X.shape[0]
    scores = []
    for fold in range(folds):
        held = np.arange(n) % folds == fold
        part = Split("", split.X[~held], split.Y[~held], split.X[held], split.Y[held], split.labels)
        bank = bank_fit(paum(tau_neg, tau_pos, split.radius), part)()
        value = figures(part.Y_test, bank_decisions(bank, part.X_test, len(split.labels)))
        scores.append(value["macro_average_precision"])
    return float(np.nanmean(scores))


def grid(split: Split, cv: bool) -> tuple[dict[tuple[float, float], tuple[float, float]], Any]:
    """Test MAP and seconds at every grid point; the point chosen by cross-validation."""
    out = {}
    chosen, best = None, -math.inf
    for tau_neg in TAU_NEG:
        for tau_pos in TAU_POS:
            seconds, bank = timed(bank_fit(paum(tau_neg, tau_pos, split.radius), split))
            decisions = bank_decisions(bank, split.X_test, len(split.labels))
            out[tau_neg, tau_pos] = (figures(split.Y_test, decisions)["macro_average_precision"],
                                     seconds)  # fmt: skip
            if cv:
                value = cross_validated_map(split, tau_neg, tau_pos)
                if value > best:
                    chosen, best = (tau_neg, tau_pos), value
    return out, chosen


# -- the runs ---------------------------------------------------------------------------------


def compare(split: Split, repeats: int, cv: bool) -> None:
    radius = split.radius
    print(f"\n== {split.name}: {split.X.shape[0]} train / {split.X_test.shape[0]} test, "
          f"{split.X.shape[1]} features, {len(split.labels)} label(s), R = {radius:.4g}; "
          f"positives in train: {split.Y.sum(axis=0).tolist()}, test: "
          f"{split.Y_test.sum(axis=0).tolist()}")  # fmt: skip
    points, chosen = grid(split, cv)
    runs: dict[str, Callable[[], Any]] = {
        "liblinear -s 3 -c 1": liblinear_fit("-s 3 -c 1", split),
        f"liblinear -s 1 -c {1 / (2 * LAMBDA)}": liblinear_fit(
            f"-s 1 -c {1 / (2 * LAMBDA)}", split
        ),
        "pdm eps=0.01": bank_fit(PDM(eps=0.01, rho=radius, delta=math.sqrt(LAMBDA)), split),
        "paum(-1, 1)": bank_fit(paum(-1.0, 1.0, radius), split),
        "paum(1, 50)": bank_fit(paum(1.0, 50.0, radius), split),
    }
    if chosen is not None:
        runs[f"paum{chosen} (cv)"] = bank_fit(paum(*chosen, radius), split)
    for kappa in KAPPAS:
        runs[f"paum(-0.5, 50 k={kappa:g})"] = bank_fit(
            paum(-0.5, 50.0, radius), split, tau_pos_kappa=kappa
        )
    results = interleaved(runs, repeats)
    base = median(results["liblinear -s 3 -c 1"][0])
    rare = rarest_labels(split)
    print(f"rare labels (the third with fewest training positives): {rare}")
    print(row("solver", "MAP", "MAP rare", "macro F1", "micro F1", "seconds", "ratio"))
    for name, (times, model) in results.items():
        if name.startswith("liblinear"):
            decisions = liblinear_decisions(model, split.X_test)
        else:
            decisions = bank_decisions(model, split.X_test, len(split.labels))
        f = figures(split.Y_test, decisions)
        rare_map = np.mean([f["per_label"][j]["average_precision"] for j in rare])
        seconds = median(times)
        print(row(name, f"{f['macro_average_precision']:.4f}", f"{rare_map:.4f}",
                  f"{f['macro_f1']:.4f}", f"{f['micro_f1']:.4f}", f"{seconds:.3f}",
                  f"{seconds / base:.2f}"))  # fmt: skip
    print(f"\nPAUM grid, test MAP (rows tau_neg, columns tau_pos; "
          f"total {sum(s for _, s in points.values()):.1f} s for {len(points)} fits)")  # fmt: skip
    print("tau_neg".rjust(8) + "".join(f"{t:>7g}" for t in TAU_POS))
    for tau_neg in TAU_NEG:
        cells = "".join(f"{points[tau_neg, t][0]:7.3f}" for t in TAU_POS)
        print(f"{tau_neg:>8g}" + cells)
    best = max(points, key=lambda p: points[p][0])
    print(f"best on test (an oracle, not a model choice): paum{best} {points[best][0]:.4f}"
          + (f"; chosen by 3-fold cv on train: paum{chosen} {points[chosen][0]:.4f}"
             if chosen is not None else ""))  # fmt: skip


def fashion(repeats: int, n_train: int) -> None:
    files = fashion_files()
    if files is None:
        return
    X, rows = read_svmlight(files[0], n_features=784)
    Xt, rows_t = read_svmlight(files[1], n_features=784)
    y, yt = rows.labels, rows_t.labels
    if n_train:
        X, y = X[:n_train], y[:n_train]
    bank = ModelBank(PDM(eps=0.1, buffer_nnz=40_000_000))
    delta = bank.learn(X[:1000], y[:1000]).flush().delta_
    assert delta is not None
    C = 1.0 / (2.0 * delta * delta)
    print(f"\n== fashion: {X.shape[0]} train / {Xt.shape[0]} test, 784 features, 10 classes; "
          f"Delta = R/10 = {delta:.4g} from the first 1000, LIBLINEAR C = 1/(2 Delta^2) "
          f"= {C:.4g}")  # fmt: skip
    runs: dict[str, Callable[[], Any]] = {
        f"liblinear -s 1 -c {C:.4g} (ovr)": lambda: train(
            problem(y, X, bias=1.0), parameter(f"-s 1 -c {C} -B 1 -q")
        ),
        "pdm eps=0.1": lambda: ModelBank(PDM(eps=0.1, delta=delta, buffer_nnz=40_000_000)).fit(
            X, y
        ),
        "paum(-1, 1)": lambda: ModelBank(
            PAUM(tau_neg=-1.0, tau_pos=1.0, delta=delta, buffer_nnz=40_000_000)
        ).fit(X, y),
    }
    results = interleaved(runs, repeats)
    base = median(next(iter(results.values()))[0])
    print(row("solver", "accuracy", "", "", "", "seconds", "ratio"))
    for name, (times, model) in results.items():
        if name.startswith("liblinear"):
            decfuns = [model.get_decfun(j) for j in range(10)]
            scores = np.column_stack([Xt @ np.asarray(w)[:784] + b for w, b in decfuns])
            predicted = np.asarray(model.get_labels(), dtype=float)[np.argmax(scores, axis=1)]
        else:
            predicted = model.predict(Xt)
        accuracy = float(np.mean(predicted == yt))
        seconds = median(times)
        print(row(name, f"{accuracy:.4f}", "", "", "", f"{seconds:.2f}", f"{seconds / base:.2f}"))


def rarest_labels(split: Split) -> list[int]:
    """The third of the labels (at least one) with the fewest training positives."""
    count = max(1, len(split.labels) // 3)
    return sorted(np.argsort(split.Y.sum(axis=0), kind="stable")[:count].tolist())


def row(*cells: str) -> str:
    widths = (32, 8, 10, 10, 10, 10, 7)
    return cells[0].ljust(widths[0]) + "".join(
        c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="reuters,yeast,fashion")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--fashion-train", type=int, default=20000,
        help="train on the first N Fashion-MNIST examples (0: all 60000)",
    )  # fmt: skip
    parser.add_argument("--no-cv", action="store_true", help="skip the grid's cross-validation")
    args = parser.parse_args()
    only = set(args.only.split(","))
    ModelBank(PAUM(delta=1.0)).fit(np.eye(4), [[0], [1], [0, 1], []])  # compile before timing
    print(f"repeats: {args.repeats} (interleaved), times are medians; PAUM and PDM use "
          f"lambda = Delta^2 = {LAMBDA:g} and rho = R")  # fmt: skip
    if "reuters" in only:
        for split in reuters_splits() or []:
            compare(split, args.repeats, cv=not args.no_cv)
    if "yeast" in only:
        split = yeast_split()
        if split is not None:
            compare(split, args.repeats, cv=not args.no_cv)
    if "fashion" in only:
        fashion(max(1, args.repeats // 3), args.fashion_train)


if __name__ == "__main__":
    main()
