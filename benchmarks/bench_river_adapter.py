"""Progressive validation on Adult through river's API: ``predict_one`` then ``learn_one``
for each example, streamlearn's river adapters beside river's own ``linear_model.Perceptron``
in the same run.

The data: ../shared/data/adult/a9a.train (32561 examples, 123 binary features) read into
river-style dicts ``{feature index: 1.0}`` with bool labels, once, before timing. Each
repeat builds fresh models and runs them one after the other over the whole stream
(interleaved, so that a noisy machine slows all of them alike); the table gives the
median examples per second (one example = one predict_one + one learn_one), the ratio
to river's Perceptron and the progressive accuracy. The adapters run with their defaults
(``delta='auto'``: learning starts after the first 1000 examples) and with ``delta=1``.

Run: .venv/bin/python benchmarks/bench_river_adapter.py [--repeats N]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from _common import data_file, interleaved, median
from river import linear_model

from streamlearn.river import PAUMClassifier, PDMClassifier

Stream = list[tuple[dict[int, float], bool]]


def load_dicts() -> Stream:
    """a9a.train as river dicts: feature index -> 1.0, label True for +1."""
    stream = []
    for line in data_file("adult/a9a.train").read_text().splitlines():
        label, *features = line.split()
        x = {int(token.split(":")[0]): float(token.split(":")[1]) for token in features}
        stream.append((x, float(label) > 0))
    return stream


def progressive(make: Callable[[], Any], stream: Stream) -> Callable[[], float]:
    """A run: a fresh model, predict then learn each example; returns the accuracy."""

    def run() -> float:
        model = make()
        correct = 0
        for x, y in stream:
            correct += model.predict_one(x) == y
            model.learn_one(x, y)
        return correct / len(stream)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    stream = load_dicts()
    models: dict[str, Callable[[], Any]] = {
        "river linear_model.Perceptron": linear_model.Perceptron,
        "streamlearn PDMClassifier()": PDMClassifier,
        "streamlearn PDMClassifier(delta=1)": lambda: PDMClassifier(delta=1.0),
        "streamlearn PAUMClassifier()": PAUMClassifier,
        "streamlearn PAUMClassifier(delta=1)": lambda: PAUMClassifier(delta=1.0),
    }
    for make in models.values():  # compile the kernels (cached on disk) before timing
        progressive(make, stream[:2000])()
    runs = {name: progressive(make, stream) for name, make in models.items()}
    results = interleaved(runs, args.repeats)
    anchor = median(results["river linear_model.Perceptron"][0])
    print(f"a9a.train: {len(stream)} examples, progressive predict_one + learn_one, "
          f"median of {args.repeats} interleaved repeats")  # fmt: skip
    print(f"{'model':38s} {'examples/s':>12s} {'vs river':>9s} {'accuracy':>9s}")
    for name, (times, accuracy) in results.items():
        seconds = median(times)
        print(f"{name:38s} {len(stream) / seconds:12,.0f} {anchor / seconds:8.2f}x {accuracy:9.4f}")


if __name__ == "__main__":
    main()
