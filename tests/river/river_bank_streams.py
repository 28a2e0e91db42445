"""Multi-class and multi-label streams of river dicts for the bank adapter tests."""

from __future__ import annotations

import functools
from collections.abc import Hashable
from typing import Any

import numpy as np
from river import datasets
from sklearn.datasets import make_multilabel_classification

from streamlearn.learn.bank import ModelBank
from streamlearn.learn.labelsets import as_labelled_rows
from streamlearn.learn.state import unpacked_weights
from streamlearn.river import stable_hash
from streamlearn.river.bank import BankClassifierBase
from streamlearn.river.options import replay_schedule

Stream = list[tuple[dict[Hashable, Any], Any]]
#: parameters for learners that have no default for one of them
BANK_REQUIRED = {"pfm": {"beta": 0.01}}


@functools.cache
def image_segments() -> Stream:
    """river's bundled ImageSegments: 2310 dicts of 18 features, 7 string classes."""
    return list(datasets.ImageSegments())


@functools.cache
def multilabel(n: int = 300, seed: int = 0) -> Stream:
    """A synthetic multi-label stream: 12 named features, 6 string labels, y as dicts
    of label: bool (river's multi-label form; a row may carry no label)."""
    X, Y = make_multilabel_classification(
        n_samples=n, n_features=12, n_classes=6, n_labels=2, allow_unlabeled=True,
        random_state=seed,
    )  # fmt: skip
    stream: Stream = []
    for row, labels in zip(X, Y, strict=True):
        x: dict[Hashable, Any] = {f"f{j}": float(v) for j, v in enumerate(row) if v}
        stream.append((x, {f"topic{k}": bool(b) for k, b in enumerate(labels)}))
    return stream


def bank_required(adapter: type[BankClassifierBase]) -> dict[str, Any]:
    return dict(BANK_REQUIRED.get(adapter.learner_class.algorithm, {}))


def dense(stream: Stream, names: list[Hashable]) -> np.ndarray:
    """The stream's features as a dense matrix, columns in the order of ``names``."""
    column = {name: j for j, name in enumerate(names)}
    X = np.zeros((len(stream), len(names)))
    for i, (x, _) in enumerate(stream):
        for name, value in x.items():
            X[i, column[name]] = value
    return X


def bank_twin(
    model: BankClassifierBase, stream: Stream, multilabel_rows: bool = False
) -> ModelBank:
    """The ModelBank fed the same examples as ``model`` through its batch path: the
    model's own feature indices (or hashes) and label positions, zeros left out; for a
    multi-label model, the labels of the first example that are False declared first,
    as the adapter declares them (every example of the streams here names every label)."""
    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    label_ptr = [0]
    labels: list[float] = []
    position = {label: float(i) for i, label in enumerate(model.labels)}
    for x, y in stream:
        for key, value in x.items():
            if value == 0:
                continue
            if model.n_features is None:
                indices.append(int(model._index[key]))
            else:
                indices.append(stable_hash(key) % model.n_features)
            values.append(float(value))
        indptr.append(len(indices))
        if multilabel_rows:
            labels.extend(position[label] for label, on in y.items() if on)
        else:
            labels.append(position[y])
        label_ptr.append(len(labels))
    bank = ModelBank(
        model.learner_class(**model._learner_params()), tau_pos_kappa=model.tau_pos_kappa
    )
    if multilabel_rows:
        bank.declare_labels([position[label] for label, on in stream[0][1].items() if not on])
    rows = (np.array(indptr), np.array(indices, dtype=np.int64), np.array(values))
    labelled = as_labelled_rows(rows, (np.array(label_ptr), np.array(labels)))
    schedule = replay_schedule(model.replay_every, model.replay_passes, bank.buffer.max_examples)
    bank.learn_on_schedule(labelled, schedule, 0)
    return bank


def assert_same_bank(ours: ModelBank, theirs: ModelBank) -> None:
    """Bit-identical labels, weights, scalars, counters and shared buffer."""
    a, b = ours.state_dict(), theirs.state_dict()
    for key in ("label_values", "weights", "scalars", "stats"):
        np.testing.assert_array_equal(unpacked(a, key), unpacked(b, key), err_msg=key)
    for key in ("examples_seen", "n_features", "window_seen"):
        assert a[key] == b[key], key
    assert a["delta_value"] == b["delta_value"] or (
        a["delta_value"] != a["delta_value"] and b["delta_value"] != b["delta_value"]
    )
    assert [s["passes"] for s in a["learners"]] == [s["passes"] for s in b["learners"]]


def unpacked(state: dict[str, Any], key: str) -> Any:
    """``state[key]``, with the weights as one array (a state may store their nonzeros)."""
    return unpacked_weights(state[key]) if key == "weights" else state[key]
