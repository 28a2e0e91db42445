"""Multi-class progressive validation of streamlearn's one-vs-rest banks in river
pipelines, beside river's ``multiclass.OneVsRestClassifier(linear_model.Perceptron())``.

Each model sits behind ``preprocessing.StandardScaler`` and meets every example once:
predicted first, then learned (``evaluate.progressive_val_score``). The data: river's
bundled ImageSegments (2310 image regions, 18 features, 7 classes; nothing is
downloaded). Prints the progressive accuracy, macro F1 and the examples per second of
the whole pipeline (scaling included). A multi-label classifier
(``PDMMultiLabelClassifier``) takes ``y`` as a dict of label: bool instead.

streamlearn's adapters run with ``delta=1.0``: with the default ``delta='auto'``,
learning waits for the first 1000 examples to fix Delta.

Run: .venv/bin/python examples/river_multiclass.py
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from river import compose, datasets, evaluate, linear_model, metrics, multiclass, preprocessing

from streamlearn.river import (
    KozinecOneVsRestClassifier,
    PAUMOneVsRestClassifier,
    PDMOneVsRestClassifier,
    PerceptronOneVsRestClassifier,
)

MODELS: dict[str, Callable[[], Any]] = {
    "river OneVsRest(Perceptron)": lambda: multiclass.OneVsRestClassifier(
        linear_model.Perceptron()
    ),
    "streamlearn PerceptronOneVsRestClassifier": lambda: PerceptronOneVsRestClassifier(delta=1.0),
    "streamlearn PAUMOneVsRestClassifier": lambda: PAUMOneVsRestClassifier(delta=1.0),
    "streamlearn PDMOneVsRestClassifier": lambda: PDMOneVsRestClassifier(eps=0.05, delta=1.0),
    "streamlearn KozinecOneVsRestClassifier": lambda: KozinecOneVsRestClassifier(
        eps=0.01, delta=1.0
    ),
}


def main() -> None:
    examples = list(datasets.ImageSegments())
    for make in MODELS.values():  # load the compiled kernels before timing anything
        evaluate.progressive_val_score(examples[:50], make(), metrics.Accuracy())
    print(f"ImageSegments: {len(examples)} examples, 7 classes, progressive validation")
    print(f"{'model':42s} {'accuracy':>9s} {'macro F1':>9s} {'examples/s':>11s}")
    for name, make in MODELS.items():
        model = compose.Pipeline(preprocessing.StandardScaler(), make())
        scores = metrics.Accuracy() + metrics.MacroF1()
        start = time.perf_counter()
        evaluate.progressive_val_score(examples, model, scores)
        seconds = time.perf_counter() - start
        accuracy, f1 = (metric.get() for metric in scores)
        print(f"{name:42s} {accuracy:9.4f} {f1:9.4f} {len(examples) / seconds:11,.0f}")


if __name__ == "__main__":
    main()
