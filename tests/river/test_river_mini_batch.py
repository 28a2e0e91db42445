"""The mini-batch methods on pandas data frames: one learn_one / predict_one per row.

pandas is not among streamlearn's dependencies (river's mini-batch API is the only
user of it); these tests run where it is installed.
"""

from __future__ import annotations

import math

import pytest
from river_adapter_streams import assert_same_learner, phishing

from streamlearn.river import PDMClassifier

pd = pytest.importorskip("pandas", reason="pandas is not installed (river's mini-batch API)")


def test_learn_many_is_learn_one_row_by_row() -> None:
    stream = phishing()[:600]
    one, many = PDMClassifier(delta=1.0), PDMClassifier(delta=1.0)
    for x, y in stream:
        one.learn_one(x, y)
    for start in range(0, len(stream), 128):
        chunk = stream[start : start + 128]
        many.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
    assert_same_learner(many.learner, one.learner)


def test_predict_many_matches_predict_one() -> None:
    model = PDMClassifier(delta=1.0)
    for x, y in phishing()[:600]:
        model.learn_one(x, y)
    rows = [x for x, _ in phishing()[600:700]]
    X = pd.DataFrame(rows, index=range(1000, 1100))
    labels = model.predict_many(X)
    probas = model.predict_proba_many(X)
    assert list(labels.index) == list(X.index) == list(probas.index)
    assert labels.tolist() == [model.predict_one(x) for x in rows]
    for i, x in enumerate(rows):
        one = model.predict_proba_one(x)
        assert {k: probas.iloc[i][k] for k in probas.columns} == one


def test_nan_cells_are_missing_values() -> None:
    model = PDMClassifier(delta=1.0)
    for x, y in phishing()[:300]:
        model.learn_one(x, y)
    x = dict(phishing()[400][0])
    X = pd.DataFrame([x, {k: v for k, v in list(x.items())[:3]}])
    assert math.isnan(X.iloc[1, 5])
    assert (
        model.predict_proba_many(X).iloc[1][True]
        == model.predict_proba_one(dict(list(x.items())[:3]))[True]
    )
