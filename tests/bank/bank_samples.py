"""Synthetic multi-label streams for the model bank tests."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def multilabel_stream(
    n: int = 240, n_features: int = 12, n_labels: int = 4, seed: int = 0
) -> tuple[sp.csr_matrix, list[list[int]]]:
    """Sparse rows and label sets from random linear rules; label k (values 10, 20, ...)
    can only appear from row 40 k on, so labels arrive mid-stream."""
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(n, n_features)) * (rng.random((n, n_features)) < 0.5)
    rules = rng.normal(size=(n_labels, n_features))
    scores = dense @ rules.T
    label_sets = []
    for i in range(n):
        members = [10 * (k + 1) for k in range(n_labels) if scores[i, k] > 0.3 and i >= 40 * k]
        label_sets.append(members[::-1] if i % 2 else members)
    return sp.csr_matrix(dense), label_sets


def one_label_targets(label_sets: list[list[int]], value: int) -> np.ndarray:
    """+1 where ``value`` is in the row's label set, -1 elsewhere."""
    return np.array([1 if value in members else -1 for members in label_sets])
