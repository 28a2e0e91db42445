"""The first examples, with the defaults: what a model has learned from a short stream.

Two measures, each beside its anchor from the same run:

- scikit-learn on a few rows: ``partial_fit`` (its replay in proportion,
  ``partial_fit_replay=10``), and ``partial_fit_replay=0`` (one pass), against ``fit`` on
  the same rows; held-out accuracy on the rest of river's bundled Phishing (1250
  examples), over several random draws. Target: ``partial_fit`` within 2 points of
  ``fit``.
- ``streamlearn serve`` with its defaults on 100 svmlight lines from standard input, a
  question after every tenth (the line without its label), standard input left open,
  then SIGTERM: the answers, how many have the question's sign, the exit code and the
  examples in the last checkpoint. Target: no answer from a zero model (score 0).

Run: ``python benchmarks/bench_first_examples.py [--rows 100] [--draws 5]``.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from river import datasets

from streamlearn.checkpoint import CheckpointStore
from streamlearn.sklearn import PAUMClassifier, PDMClassifier

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "daemon"))
from test_serve_first_lines import short_stream


def phishing() -> tuple[np.ndarray, np.ndarray]:
    rows = list(datasets.Phishing())
    names = list(rows[0][0])
    X = np.array([[x[name] for name in names] for x, _ in rows], dtype=np.float64)
    return X, np.array([bool(label) for _, label in rows])


def scikit_learn(rows: int, draws: int) -> bool:
    X, y = phishing()
    print(f"scikit-learn on {rows} rows of Phishing, held-out accuracy on the other "
          f"{X.shape[0] - rows}, {draws} draws")  # fmt: skip
    print(f"{'estimator':<16} {'draw':>4} {'fit':>7} {'partial_fit':>12} {'one pass':>9}  gap")
    worst = 0.0
    for cls in (PDMClassifier, PAUMClassifier):
        for draw in range(draws):
            order = np.random.default_rng(draw).permutation(X.shape[0])
            train, test = order[:rows], order[rows:]
            fitted = cls().fit(X[train], y[train]).score(X[test], y[test])
            partial = cls().partial_fit(X[train], y[train], classes=[False, True])
            one_pass = cls(partial_fit_replay=0).partial_fit(X[train], y[train], [False, True])
            a, b = partial.score(X[test], y[test]), one_pass.score(X[test], y[test])
            gap = 100 * (a - fitted)
            worst = max(worst, abs(gap))
            print(f"{cls.__name__:<16} {draw:>4} {fitted:>7.3f} {a:>12.3f} {b:>9.3f}  {gap:+.1f}")
    ok = worst <= 2.0
    print(f"  {'PASS' if ok else 'FAIL'}  largest gap of partial_fit to fit: {worst:.1f} "
          "points (target <= 2)")  # fmt: skip
    return ok


def serve_short_stream() -> bool:
    lines, asked = short_stream()
    with tempfile.TemporaryDirectory() as directory:
        command = [
            sys.executable, "-m", "streamlearn", "serve", "--metrics-addr", "127.0.0.1:0",
            "--http-addr", "127.0.0.1:0", "--checkpoint-dir", directory,
        ]  # fmt: skip
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("\n".join(lines) + "\n")
        process.stdin.flush()
        answers = [float(process.stdout.readline().split()[0]) for _ in asked]
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
        found = CheckpointStore(Path(directory)).latest()
        kept = int(found[1].payload["job"]["stream_examples"]) if found else 0
    right = sum((score > 0) == (label > 0) for score, label in zip(answers, asked, strict=True))
    zero = sum(score == 0.0 for score in answers)
    print("serve, defaults, 100 lines on standard input (left open), then SIGTERM")
    print(f"  answers after lines 5, 15, ..., 95: {answers}")
    print(f"  {right} of {len(asked)} with the question's sign; exit {process.returncode}; "
          f"{kept} examples in the last checkpoint")  # fmt: skip
    ok = zero == 0 and process.returncode == 0 and kept == 100
    print(f"  {'PASS' if ok else 'FAIL'}  answers from a zero model: {zero} (target 0)")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--draws", type=int, default=5)
    args = parser.parse_args()
    ok = scikit_learn(args.rows, args.draws)
    print()
    ok = serve_short_stream() and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
