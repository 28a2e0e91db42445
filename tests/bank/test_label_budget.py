"""The label bound of a one-vs-rest bank's input: which rows fit, and row selection."""

from __future__ import annotations

import numpy as np
import pytest

from streamlearn.learn.labelsets import (
    LabelledRows,
    apply_label_budget,
    as_labelled_rows,
    within_label_budget,
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
        keep = within_label_budget(rows, known, max_labels)
        held = set(known.tolist())
        for row in range(rows.n_examples):
            brought = set(rows.label_set(row).tolist()) - held
            fits = not brought or len(held) + len(brought) <= max_labels
            assert keep[row] == fits, (max_labels, row)
            if fits:
                held |= brought
        assert len(held) <= max(max_labels, known.shape[0])


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
    kept, rejected = apply_label_budget(rows, np.array([11, 12, 14]), earlier, np.array([1.0]), 2)
    assert kept.labels.tolist() == [1.0, 4.0]
    assert [(r.line, r.reason) for r in rejected] == [
        (10, "bad token"),
        (12, "too many labels"),
        (13, "bad label"),
    ]
    assert rejected[1].text == "2,3.5"
