"""Random svmlight lines for the command-line tests."""

from __future__ import annotations

import numpy as np


def svmlight_lines(n: int, seed: int, n_features: int = 12) -> list[str]:
    """``n`` labelled lines of sparse random data with some overlap between classes."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=n_features)
    lines = []
    for _ in range(n):
        chosen = np.sort(rng.choice(n_features, size=4, replace=False))
        values = rng.normal(size=4)
        score = float(values @ direction[chosen]) + rng.normal(scale=0.3)
        label = "+1" if score > 0 else "-1"
        features = " ".join(f"{i + 1}:{v:.6g}" for i, v in zip(chosen, values, strict=True))
        lines.append(f"{label} {features}")
    return lines
