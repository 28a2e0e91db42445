"""Progressive validation through river's API: ``predict_one`` then ``learn_one`` for
each example, streamlearn's river adapters beside river's own ``linear_model.Perceptron``
and ``linear_model.LogisticRegression`` in the same run, on Adult and on river's
Phishing; then the targets of the river defaults, each figure beside its anchor.

Adult: ../shared/data/adult/a9a.train (32561 examples, 123 binary features) read into
river-style dicts ``{feature index: 1.0}`` with bool labels, once, before timing. Each
repeat builds fresh models and feeds them the stream in 64 pieces, every model taking
its turn on each piece (in a rotating order) before the next piece, so that a noisy
machine slows all of them alike; the table gives the median over repeats of the
examples per second (one example = one predict_one + one learn_one), the ratio to
river's Perceptron, the progressive accuracy and, after the pass, the log loss of
``predict_proba_one`` on a9a.test with its ratio to river's logistic regression's.

Phishing: river's bundled ``datasets.Phishing`` (1250 examples), the accuracy of
``evaluate.progressive_val_score`` for each model, raw and behind river's
``preprocessing.StandardScaler``.

The rows: the adapters with their defaults (``average=True``: predictions from the
weights averaged over the stream; ``replay_every=None``; ``delta='auto'``, the engine's
Delta rule), with Delta from the first example alone (``delta='first'``), with the last
weights (``average=False``: a pure online pass), with replays on the growing schedule
(``replay_every='auto'``), and with the defaults before the averaged weights
(``replay_every='auto', average=False``).

Targets (issue 37), for ``PDMClassifier()``: at least 2x river's Perceptron's
examples/s, a log loss on a9a.test within 10% of river's LogisticRegression's, and a
progressive accuracy on Phishing of at least 0.85. A missed target prints FAIL and the
script exits with status 1.

Run: .venv/bin/python benchmarks/bench_river_adapter.py [--repeats N]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import data_file, median
from river import compose, datasets, evaluate, linear_model, metrics, preprocessing

from streamlearn.river import PAUMClassifier, PDMClassifier

Stream = list[tuple[dict[int, float], bool]]

PERCEPTRON = "river linear_model.Perceptron"
LOGISTIC = "river linear_model.LogisticRegression"
DEFAULTS = "streamlearn PDMClassifier()"
#: the targets: examples/s over the Perceptron's, log loss over logistic regression's,
#: Phishing's progressive accuracy
MIN_SPEEDUP, MAX_LOSS_RATIO, MIN_PHISHING = 2.0, 1.10, 0.85


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


def phishing_accuracy(make: Callable[[], Any], scaled: bool) -> float:
    """``evaluate.progressive_val_score``'s accuracy on river's Phishing."""
    model = compose.Pipeline(preprocessing.StandardScaler(), make()) if scaled else make()
    score = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    return float(score.get())


def check(name: str, value: float, anchor_text: str, passed: bool) -> bool:
    """Print one target's line; returns whether it passed."""
    print(f"  {'PASS' if passed else 'FAIL'}  {name}: {value:.4f} ({anchor_text})")
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    stream = load_dicts()
    models: dict[str, Callable[[], Any]] = {
        PERCEPTRON: linear_model.Perceptron,
        LOGISTIC: linear_model.LogisticRegression,
        DEFAULTS: PDMClassifier,
        "streamlearn PDMClassifier(delta='first')": lambda: PDMClassifier(delta="first"),
        "streamlearn PDMClassifier(average=False)": lambda: PDMClassifier(average=False),
        "streamlearn PDMClassifier(replay_every='auto')": lambda: PDMClassifier(
            replay_every="auto"
        ),
        "streamlearn PDMClassifier(replay_every='auto', average=False)": lambda: PDMClassifier(
            replay_every="auto", average=False
        ),
        "streamlearn PAUMClassifier()": PAUMClassifier,
        "streamlearn PAUMClassifier(average=False)": lambda: PAUMClassifier(average=False),
    }
    progressive(models, stream[:2000])  # load the compiled kernels before timing
    runs = [progressive(models, stream) for _ in range(args.repeats)]
    times = {name: [run[0][name][0] for run in runs] for name in models}
    test = load_dicts("a9a.test")
    losses = {name: log_loss(model, test) for name, model in runs[-1][1].items()}
    anchor = median(times[PERCEPTRON])
    reference = losses[LOGISTIC]
    print(f"a9a.train: {len(stream)} examples, progressive predict_one + learn_one, "
          f"median of {args.repeats} interleaved repeats; "
          "log loss on a9a.test after the pass")  # fmt: skip
    print(f"{'model':62s} {'examples/s':>11s} {'vs river':>9s} {'accuracy':>9s} "
          f"{'log loss':>9s} {'vs LR':>6s}")  # fmt: skip
    for name in models:
        seconds = median(times[name])
        accuracy = runs[-1][0][name][1]
        print(f"{name:62s} {len(stream) / seconds:11,.0f} {anchor / seconds:8.2f}x "
              f"{accuracy:9.4f} {losses[name]:9.4f} {losses[name] / reference:6.3f}")  # fmt: skip

    phishing_models = {name: models[name] for name in list(models)[:5]}
    print("\nPhishing (river's datasets.Phishing, 1250 examples): "
          "evaluate.progressive_val_score accuracy")  # fmt: skip
    print(f"{'model':62s} {'raw':>7s} {'scaled':>7s}")
    phishing = {}
    for name, make in phishing_models.items():
        phishing[name] = phishing_accuracy(make, scaled=False)
        scaled = phishing_accuracy(make, scaled=True)
        print(f"{name:62s} {phishing[name]:7.4f} {scaled:7.4f}")

    speedup = anchor / median(times[DEFAULTS])
    loss_ratio = losses[DEFAULTS] / reference
    print(f"\ntargets for {DEFAULTS} (issue 37), anchors from this run:")
    passed = [
        check("examples/s over river's Perceptron's", speedup,
              f"{len(stream) / median(times[DEFAULTS]):,.0f} against {len(stream) / anchor:,.0f}"
              f"; target >= {MIN_SPEEDUP}x", speedup >= MIN_SPEEDUP),
        check("log loss on a9a.test over LogisticRegression's", loss_ratio,
              f"{losses[DEFAULTS]:.4f} against {reference:.4f}; target <= {MAX_LOSS_RATIO}",
              loss_ratio <= MAX_LOSS_RATIO),
        check("Phishing progressive accuracy", phishing[DEFAULTS],
              f"river's Perceptron {phishing[PERCEPTRON]:.4f}, LogisticRegression "
              f"{phishing[LOGISTIC]:.4f}; target >= {MIN_PHISHING}",
              phishing[DEFAULTS] >= MIN_PHISHING),
    ]  # fmt: skip
    if not all(passed):
        print("FAIL: a target of the river defaults was missed")
        sys.exit(1)
    print("all targets met")


if __name__ == "__main__":
    main()
