"""Multi-class progressive validation through river's API: streamlearn's one-vs-rest
bank adapters beside river's ``multiclass.OneVsRestClassifier(linear_model.Perceptron())``
in the same run.

The data: river's bundled ImageSegments (2310 examples, 18 numeric features, 7
classes), each feature standardised once with the mean and standard deviation of the
whole set (before timing, the same dicts for every model), the stream repeated
``--copies`` times. Each repeat builds fresh models and feeds them the stream in 64
pieces, every model taking its turn on each piece (in a rotating order); the table gives
the median over repeats of the examples per second (one example = one predict_one +
one learn_one), the ratio to river's one-vs-rest Perceptron and the progressive
accuracy of the last repeat.

Run: .venv/bin/python benchmarks/bench_river_multiclass.py [--repeats N] [--copies N]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Hashable
from typing import Any

from _common import median
from bench_river_adapter import progressive
from river import datasets, linear_model, multiclass

from streamlearn.river import PAUMOneVsRestClassifier, PDMOneVsRestClassifier

ANCHOR = "river OneVsRest(Perceptron)"


def standardised_segments() -> list[tuple[dict[Hashable, float], Any]]:
    """ImageSegments with every feature standardised over the whole set."""
    stream = list(datasets.ImageSegments())
    names = list(stream[0][0])
    mean = {n: statistics.fmean(float(x[n]) for x, _ in stream) for n in names}
    std = {n: statistics.pstdev(float(x[n]) for x, _ in stream) or 1.0 for n in names}
    return [({n: (float(x[n]) - mean[n]) / std[n] for n in names}, y) for x, y in stream]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()
    stream = standardised_segments() * args.copies
    models: dict[str, Callable[[], Any]] = {
        ANCHOR: lambda: multiclass.OneVsRestClassifier(linear_model.Perceptron()),
        "streamlearn PDMOneVsRestClassifier(delta=1)": lambda: PDMOneVsRestClassifier(delta=1.0),
        "streamlearn PAUMOneVsRestClassifier(delta=1)": lambda: PAUMOneVsRestClassifier(delta=1.0),
        "streamlearn PDMOneVsRestClassifier()": PDMOneVsRestClassifier,
        "streamlearn PDMOneVsRestClassifier(delta=1, replay_every=None)": lambda: (
            PDMOneVsRestClassifier(delta=1.0, replay_every=None)
        ),
    }
    progressive(models, stream[:500])  # load the compiled kernels before timing
    runs = [progressive(models, stream)[0] for _ in range(args.repeats)]
    times = {name: [run[name][0] for run in runs] for name in models}
    anchor = median(times[ANCHOR])
    print(f"ImageSegments x{args.copies}: {len(stream)} examples, 7 classes, progressive "
          f"predict_one + learn_one, median of {args.repeats} interleaved repeats")  # fmt: skip
    print(f"{'model':62s} {'examples/s':>12s} {'vs river':>9s} {'accuracy':>9s}")
    for name in models:
        seconds = median(times[name])
        accuracy = runs[-1][name][1]
        print(f"{name:62s} {len(stream) / seconds:12,.0f} {anchor / seconds:8.2f}x {accuracy:9.4f}")


if __name__ == "__main__":
    main()
