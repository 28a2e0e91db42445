"""The bounds of a one-vs-rest bank's input (labels, and weights: labels times features):
which rows fit, and row selection."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.learn.labelsets import (
    LabelledRows,
    apply_bank_budget,
    as_labelled_rows,
    within_bank_budget,
)
from streamlearn.parse import Rejected


def random_rows(seed: int, n: int = 60) -> LabelledRows:
    rng = np.random.default_rng(seed)
    sets = [rng.choice(12, size=rng.integers(0, 4), replace=False).tolist() for _ in range(n)]
    X = rng.normal(size=(n, 5)) * (rng.random((n, 5)) < 0.6)
    return as_labelled_rows(X, sets)


@pytest.mark.parametrize("seed", range(8))
def test_the_kept_rows_never_pass_the_bound_and_each_left_out_row_would_have(seed: int) -> None:
    rows = random_rows(seed)
    known = np.array([0.0, 1.0])
    for max_labels in (2, 3, 5, 8, 12):
        refused = within_bank_budget(rows, known, max_labels)
        held = set(known.tolist())
        for row in range(rows.n_examples):
            brought = set(rows.label_set(row).tolist()) - held
            fits = not brought or len(held) + len(brought) <= max_labels
            assert (row not in refused) == fits, (max_labels, row)
            if fits:
                held |= brought
            else:
                assert refused[row] == "too many labels"
        assert len(held) <= max(max_labels, known.shape[0])


def wide_rows(seed: int, n: int = 80) -> LabelledRows:
    """Rows whose largest index is anywhere up to 40, some with none, label sets of 0 to 3
    of 10 labels."""
    rng = np.random.default_rng(seed)
    sets = [rng.choice(10, size=rng.integers(0, 4), replace=False).tolist() for _ in range(n)]
    X = np.zeros((n, 40))
    for row in range(n):
        width = int(rng.integers(0, 41))
        X[row, :width] = rng.random(width) < 0.3
    return as_labelled_rows(X, sets)


@pytest.mark.parametrize("seed", range(8))
def test_the_kept_rows_never_take_labels_times_features_past_the_weights_bound(seed: int) -> None:
    rows = wide_rows(seed)
    for max_labels, max_weights, n_features in ((10, 60, 3), (4, 100, 0), (6, 30, 12)):
        known = np.array([0.0, 1.0])
        refused = within_bank_budget(
            rows, known, max_labels, n_features=n_features, max_weights=max_weights
        )
        held, features = set(known.tolist()), n_features
        for row in range(rows.n_examples):
            lo, hi = rows.indptr[row], rows.indptr[row + 1]
            labels_after = held | set(rows.label_set(row).tolist())
            features_after = max([features, *(rows.indices[lo:hi] + 1).tolist()])
            if labels_after == held and features_after == features:
                assert row not in refused  # nothing new: always kept
                continue
            if len(labels_after) > max_labels:
                assert refused.get(row) == "too many labels", row
            elif len(labels_after) * features_after > max_weights:
                assert refused.get(row) == "too many weights", row
            else:
                assert row not in refused, row
                held, features = labels_after, features_after
        assert len(held) * features <= max(max_weights, len(known) * n_features)
        assert refused, "every setting here must leave some rows out"


def test_a_bank_past_its_bounds_keeps_learning_what_it_holds() -> None:
    """Resumed with lower bounds, a bank still takes rows within its labels and features."""
    rows = as_labelled_rows(np.eye(5), [[1], [2], [1, 2], [], [3]])
    known = np.array([1.0, 2.0])
    assert within_bank_budget(rows, known, 1, n_features=5, max_weights=4) == {4: "too many labels"}
    assert within_bank_budget(rows, known, 5, n_features=4, max_weights=8) == {
        4: "too many weights"
    }
    # an empty label set grows only the features; a bank without labels holds one row
    empty = as_labelled_rows(np.eye(6)[[1, 5]], [[], []])
    assert within_bank_budget(empty, np.array([]), 3, max_weights=5) == {1: "too many weights"}


@pytest.mark.parametrize("seed", range(4))
def test_select_keeps_the_chosen_rows_as_they_were(seed: int) -> None:
    rows = random_rows(seed)
    keep = np.random.default_rng(seed).random(rows.n_examples) < 0.5
    chosen = rows.select(keep)
    parts = [rows.slice(i, i + 1) for i in np.flatnonzero(keep).tolist()]
    expected = LabelledRows.concatenate(parts)
    for name in ("indptr", "indices", "values", "label_ptr", "labels"):
        assert np.array_equal(getattr(chosen, name), getattr(expected, name)), name


def test_left_out_rows_become_rejections_at_their_lines_in_line_order() -> None:
    rows = as_labelled_rows(np.eye(3), [[1], [2, 3.5], [4]])
    earlier = [Rejected(10, "bad token", "x"), Rejected(13, "bad label", "y")]
    kept, rejected = apply_bank_budget(rows, np.array([11, 12, 14]), earlier, np.array([1.0]), 2)
    assert kept.labels.tolist() == [1.0, 4.0]
    assert [(r.line, r.reason) for r in rejected] == [
        (10, "bad token"),
        (12, "too many labels"),
        (13, "bad label"),
    ]
    assert rejected[1].text == "2,3.5"


def test_rows_over_the_weights_bound_become_rejections_with_their_reason() -> None:
    rows = as_labelled_rows(np.eye(4), [[1], [2], [1], [2]])
    kept, rejected = apply_bank_budget(
        rows, np.array([1, 2, 3, 4]), [], np.array([1.0]), 10, n_features=1, max_weights=3
    )
    # [1] at index 0 fits; [2] at index 1 needs 2 x 2; [1] at index 2 needs 1 x 3 and fits;
    # [2] at index 3 needs 2 x 4
    assert kept.label_ptr.tolist() == [0, 1, 2] and kept.indices.tolist() == [0, 2]
    assert [(r.line, r.reason, r.text) for r in rejected] == [
        (2, "too many weights", "2; needs 2 features"),
        (4, "too many weights", "2; needs 4 features"),
    ]
