"""Progressive validation on Adult through river's API: ``predict_one`` then ``learn_one``
for each example, streamlearn's river adapters beside river's own ``linear_model.Perceptron``
and ``linear_model.LogisticRegression`` in the same run.

The data: ../shared/data/adult/a9a.train (32561 examples, 123 binary features) read into
river-style dicts ``{feature index: 1.0}`` with bool labels, once, before timing. Each
repeat builds fresh models and feeds them the stream in 64 pieces, every model taking
its turn on each piece (in a rotating order) before the next piece, so that a noisy
machine slows all of them alike; the table gives the median over repeats of the
examples per second (one example = one predict_one + one learn_one), the ratio to
river's Perceptron, the progressive accuracy and, after the pass, the log loss of
``predict_proba_one`` on a9a.test with its ratio to river's logistic regression's. The
adapters run with their defaults (``replay_every='auto'``: replays on the growing
schedule; ``delta='first'``), with ``delta=1``, and as a pure online pass
(``replay_every=None``).

Run: .venv/bin/python benchmarks/bench_river_adapter.py [--repeats N]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

from _common import data_file, median
from river import linear_model

from streamlearn.river import PAUMClassifier, PDMClassifier

Stream = list[tuple[dict[int, float], bool]]


def load_dicts(name: str = "a9a.train") -> Stream:
    """An Adult file as river dicts: feature index -> 1.0, label True for +1."""
    stream = []
    for line in data_file(f"adult/{name}").read_text().splitlines():
        label, *features = line.split()
        x = {int(token.split(":")[0]): float(token.split(":")[1]) for token in features}
        stream.append((x, float(label) > 0))
    return stream


def progressive(
    makers: dict[str, Callable[[], Any]], stream: Stream, pieces: int = 64
) -> tuple[dict[str, tuple[float, float]], dict[str, Any]]:
    """One repeat: fresh models, predict then learn each example, the stream cut in
    ``pieces`` that every model takes in turn. Returns (seconds, accuracy) per model, and
    the models."""
    models = {name: make() for name, make in makers.items()}
    seconds = dict.fromkeys(models, 0.0)
    correct = dict.fromkeys(models, 0)
    size = -(-len(stream) // pieces)
    names = list(models)
    for number, start in enumerate(range(0, len(stream), size)):
        piece = stream[start : start + size]
        for name in names[number % len(names) :] + names[: number % len(names)]:
            model = models[name]
            hits = 0
            began = time.perf_counter()
            for x, y in piece:
                hits += model.predict_one(x) == y
                model.learn_one(x, y)
            seconds[name] += time.perf_counter() - began
            correct[name] += hits
    return {name: (seconds[name], correct[name] / len(stream)) for name in names}, models


def log_loss(model: Any, test: Stream) -> float:
    """Mean negative log-likelihood of the true labels under ``predict_proba_one``."""
    total = 0.0
    for x, y in test:
        p = min(max(model.predict_proba_one(x).get(y, 0.0), 1e-15), 1.0)
        total -= math.log(p)
    return total / len(test)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    stream = load_dicts()
    models: dict[str, Callable[[], Any]] = {
        "river linear_model.Perceptron": linear_model.Perceptron,
        "river linear_model.LogisticRegression": linear_model.LogisticRegression,
        "streamlearn PDMClassifier()": PDMClassifier,
        "streamlearn PDMClassifier(delta=1)": lambda: PDMClassifier(delta=1.0),
        "streamlearn PDMClassifier(replay_every=None)": lambda: PDMClassifier(replay_every=None),
        "streamlearn PAUMClassifier()": PAUMClassifier,
        "streamlearn PAUMClassifier(replay_every=None)": lambda: PAUMClassifier(replay_every=None),
    }
    progressive(models, stream[:2000])  # load the compiled kernels before timing
    runs = [progressive(models, stream) for _ in range(args.repeats)]
    times = {name: [run[0][name][0] for run in runs] for name in models}
    test = load_dicts("a9a.test")
    losses = {name: log_loss(model, test) for name, model in runs[-1][1].items()}
    anchor = median(times["river linear_model.Perceptron"])
    reference = losses["river linear_model.LogisticRegression"]
    print(f"a9a.train: {len(stream)} examples, progressive predict_one + learn_one, "
          f"median of {args.repeats} interleaved repeats; "
          "log loss on a9a.test after the pass")  # fmt: skip
    print(f"{'model':46s} {'examples/s':>11s} {'vs river':>9s} {'accuracy':>9s} "
          f"{'log loss':>9s} {'vs LR':>6s}")  # fmt: skip
    for name in models:
        seconds = median(times[name])
        accuracy = runs[-1][0][name][1]
        print(f"{name:46s} {len(stream) / seconds:11,.0f} {anchor / seconds:8.2f}x "
              f"{accuracy:9.4f} {losses[name]:9.4f} {losses[name] / reference:6.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
