"""Progressive validation of streamlearn's learners inside river pipelines, beside river's
Perceptron, PAClassifier and ALMAClassifier.

Each model sits behind ``preprocessing.StandardScaler`` and meets every example once:
predicted first, then learned (``evaluate.progressive_val_score``). The data sets ship
with river, nothing is downloaded: Phishing (1250 web pages, 9 features), Bananas (5300
points, 2 features, not linearly separable) and 5000 examples of river's rotating
``synth.Hyperplane`` stream (10 features, 5% label noise). Prints the progressive accuracy
and the examples per second of the whole pipeline (scaling included).

streamlearn's adapters run with ``delta=1.0`` (after scaling, a tenth of a typical
example's norm); their default ``delta='auto'`` would take it from the examples, learning
from the first one on.

Run: .venv/bin/python examples/river_progressive.py
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from river import compose, datasets, evaluate, linear_model, metrics, preprocessing
from river.datasets import synth

from streamlearn.river import (
    KozinecClassifier,
    PAMClassifier,
    PAUMClassifier,
    PDMClassifier,
    PerceptronClassifier,
)

DATASETS: dict[str, Callable[[], Iterable[tuple[dict[Any, Any], Any]]]] = {
    "Phishing": datasets.Phishing,
    "Bananas": datasets.Bananas,
    "Hyperplane": lambda: synth.Hyperplane(seed=42, n_features=10, noise_percentage=0.05).take(
        5000
    ),
}

MODELS: dict[str, Callable[[], Any]] = {
    "river Perceptron": linear_model.Perceptron,
    "river PAClassifier": lambda: linear_model.PAClassifier(C=0.01, mode=1),
    "river ALMAClassifier": linear_model.ALMAClassifier,
    "streamlearn PerceptronClassifier": lambda: PerceptronClassifier(delta=1.0),
    "streamlearn PAMClassifier": lambda: PAMClassifier(tau=1.0, delta=1.0),
    "streamlearn PAUMClassifier": lambda: PAUMClassifier(tau_neg=-1.0, tau_pos=1.0, delta=1.0),
    "streamlearn PDMClassifier": lambda: PDMClassifier(eps=0.05, delta=1.0),
    "streamlearn KozinecClassifier": lambda: KozinecClassifier(eps=0.01, delta=1.0),
}


def main() -> None:
    for make in MODELS.values():  # load the compiled kernels before timing anything
        evaluate.progressive_val_score(datasets.Phishing().take(50), make(), metrics.Accuracy())
    for data_name, dataset in DATASETS.items():
        print(f"\n{data_name}")
        print(f"{'model':34s} {'accuracy':>9s} {'examples/s':>11s}")
        for model_name, make in MODELS.items():
            model = compose.Pipeline(preprocessing.StandardScaler(), make())
            examples = list(dataset())
            start = time.perf_counter()
            accuracy = evaluate.progressive_val_score(examples, model, metrics.Accuracy())
            seconds = time.perf_counter() - start
            print(f"{model_name:34s} {accuracy.get():9.4f} {len(examples) / seconds:11,.0f}")


if __name__ == "__main__":
    main()
