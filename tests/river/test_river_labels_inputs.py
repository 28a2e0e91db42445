"""Labels, feature names, hashing, probabilities and bad input of the river adapters."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from river_adapter_streams import phishing

from streamlearn.errors import InvalidInputError, InvalidParameterError
from streamlearn.river import (
    ADAPTERS,
    KozinecClassifier,
    PAUMClassifier,
    PDMClassifier,
    PerceptronClassifier,
    stable_hash,
)
from streamlearn.river.options import RIVER_DELTA


def _learned(labels: tuple[Any, Any], **params: Any) -> PDMClassifier:
    """PDM on Phishing with True/False relabelled to ``labels``."""
    model = PDMClassifier(delta=1.0, **params)
    for x, y in phishing()[:500]:
        model.learn_one(x, labels[0] if y else labels[1])
    return model


# -- labels ------------------------------------------------------------------------------


def test_bool_labels_map_true_to_plus_one_whatever_comes_first() -> None:
    model = PDMClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, False)
    model.learn_one({"a": -1.0}, True)
    assert model._signs == {False: -1.0, True: 1.0}
    assert model.predict_one({"a": -1.0}) is True


@pytest.mark.parametrize(
    ("labels", "signs"),
    [
        ((1, 0), {1: 1.0, 0: -1.0}),
        ((1, -1), {1: 1.0, -1: -1.0}),
        (("phish", "ok"), {"phish": -1.0, "ok": 1.0}),
        ((7, 3), {7: -1.0, 3: 1.0}),
    ],
)
def test_label_signs(labels: tuple[Any, Any], signs: dict[Any, float]) -> None:
    """Numbers 1 / 0 / -1 keep their meaning; other labels: the first seen is -1."""
    assert phishing()[0][1] is True  # so labels[0] comes first
    model = _learned(labels)
    assert model._signs == signs
    reference = _learned((True, False))
    for x, _ in phishing()[500:700]:
        expected = reference.predict_proba_one(x)
        proba = model.predict_proba_one(x)
        assert set(proba) == set(labels)
        assert math.isclose(proba[labels[0]], expected[True], rel_tol=1e-9, abs_tol=1e-12)
        if expected[True] != 0.5:
            assert model.predict_one(x) == (labels[0] if reference.predict_one(x) else labels[1])


def test_pos_label_chooses_the_positive_class() -> None:
    model = _learned(("phish", "ok"), pos_label="ok")
    assert model._signs == {"ok": 1.0, "phish": -1.0}
    plain = _learned(("phish", "ok"))
    for x, _ in phishing()[500:600]:
        assert model.predict_one(x) == plain.predict_one(x)


def test_paum_margins_follow_pos_label() -> None:
    """tau_pos belongs to pos_label's class: swapping the labels and the taus together
    gives the same model up to the sign of the weights."""
    stream = phishing()[:400]
    a = PAUMClassifier(tau_neg=-1.0, tau_pos=3.0, delta=1.0, pos_label=True)
    b = PAUMClassifier(tau_neg=3.0, tau_pos=-1.0, delta=1.0, pos_label=False)
    for x, y in stream:
        a.learn_one(x, y)
        b.learn_one(x, y)
    assert a.weights == {k: -v for k, v in b.weights.items()}


def test_a_third_label_is_refused() -> None:
    model = PDMClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, "x")
    model.learn_one({"a": 1.0}, "y")
    with pytest.raises(InvalidInputError, match="third label 'z'"):
        model.learn_one({"a": 1.0}, "z")
    with pytest.raises(InvalidInputError, match="pos_label"):
        pos = PDMClassifier(pos_label="x")
        pos.learn_one({"a": 1.0}, "y")
        pos.learn_one({"a": 1.0}, "z")


def test_numpy_bools_are_bools() -> None:
    model = PDMClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, np.bool_(True))
    model.learn_one({"a": -1.0}, np.False_)
    assert set(model.predict_proba_one({"a": 1.0})) == {False, True}
    assert type(model.predict_one({"a": 1.0})) is bool


def test_single_label_seen() -> None:
    model = PDMClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, "spam")
    assert model.predict_proba_one({"a": 1.0}) == {"spam": 1.0}
    assert model.predict_one({"a": -1.0}) == "spam"
    model = PDMClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, True)
    assert set(model.predict_proba_one({"a": 1.0})) == {False, True}


# -- probabilities ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_proba_is_a_monotone_map_of_the_decision_value(name: str) -> None:
    adapter = ADAPTERS[name]
    # the last weights' map (the averaged weights': test_river_defaults.py)
    model = adapter(delta=1.0, average=False, **({"beta": 0.01} if name == "pfm" else {}))
    assert model.predict_proba_one(phishing()[0][0]) == {False: 0.5, True: 0.5}
    for x, y in phishing()[:400]:
        model.learn_one(x, y)
    learner = model.learner
    scale = learner.state.scalars[3]
    points = []
    for x, _ in phishing()[400:700]:
        proba = model.predict_proba_one(x)
        assert math.isclose(sum(proba.values()), 1.0)
        f = model._decision(x)
        points.append((f, proba[True]))
        assert (proba[True] > 0.5) == (f > 0) or f == 0
        assert model.predict_one(x) == (f > 0)
        # the documented map: Platt's sigmoid of f / u, u = ||a||^2 / t (||a||^2 for Kozinec)
        sqnorm, t = learner.state.scalars[1], learner.state.scalars[2]
        unit = sqnorm if model.learner_class.algorithm == "kozinec" else sqnorm / t
        slope = model.learner.calibration().slope
        assert math.isclose(proba[True], 1.0 / (1.0 + math.exp(-slope * f / unit)), rel_tol=1e-9)
    assert scale > 0
    points.sort()
    probas = [p for _, p in points]
    assert probas == sorted(probas)
    assert min(probas) < 0.5 < max(probas)


def test_proba_of_the_margin_unit() -> None:
    """An example at f(x) = u gets the calibration's sigmoid at 1."""
    model = KozinecClassifier(delta=1.0, average=False)
    for x, y in phishing()[:300]:
        model.learn_one(x, y)
    unit = float(model.learner.state.scalars[1])
    slope = model.learner.calibration().slope
    assert slope > 0
    assert math.isclose(model._proba(unit)[True], 1 / (1 + math.exp(-slope)))


# -- feature names and values -------------------------------------------------------------


def test_names_get_indices_in_order_of_first_appearance() -> None:
    model = PerceptronClassifier(delta=1.0)
    model.learn_one({"b": 1.0, ("t", 1): 2.0, 3: 0.0}, True)
    model.learn_one({"z": 1.0, "b": 1.0}, False)
    model.predict_one({"unseen": 5.0})
    assert list(model._index) == ["b", ("t", 1), 3, "z"]
    assert model.learner.n_features_in_ == 4  # the last name had a nonzero value
    assert set(model.weights) == {"b", ("t", 1), 3, "z"}


def test_unseen_names_weigh_nothing() -> None:
    model = _learned((True, False))
    x = dict(phishing()[600][0])
    assert model.predict_proba_one({**x, "never seen": 123.0}) == model.predict_proba_one(x)


def test_hashing_is_stable_across_processes() -> None:
    code = (
        "from streamlearn.river import stable_hash; "
        "print([stable_hash(k) for k in ('age', 3, ('a', 1.5), None)])"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
        outputs.add(done.stdout)
    assert outputs == {str([stable_hash(k) for k in ("age", 3, ("a", 1.5), None)]) + "\n"}


def test_hashing_mode_weights_by_index() -> None:
    model = PDMClassifier(delta=1.0, n_features=16)
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    assert set(model.weights) == {stable_hash("a") % 16, stable_hash("b") % 16}
    assert model.state_dict()["names"] == []


@pytest.mark.parametrize(
    ("x", "message"),
    [
        ({"a": "1.5"}, "feature 'a' has the value '1.5': values must be real numbers"),
        ({"a": 1.0, "b": None}, "feature 'b' has the value None"),
        ({"a": math.nan}, "feature 'a' has the value nan: not finite"),
        ({"a": 1.0, "b": -math.inf}, "feature 'b' has the value -inf: not finite"),
        ({"a": 1 + 2j}, "values must be real numbers"),
    ],
)
@pytest.mark.parametrize("method", ["learn_one", "predict_one", "predict_proba_one"])
def test_bad_values_are_refused_by_name(x: dict[str, Any], message: str, method: str) -> None:
    model = _learned((True, False))
    model._index.setdefault("a", float(len(model._index)))  # known names: the fast path
    model._index.setdefault("b", float(len(model._index)))
    model._path.ensure_weights(len(model._index))
    before = model.state_dict()
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace("+", r"\+")):
        getattr(model, method)(*((x, True) if method == "learn_one" else (x,)))
    after = model.state_dict()
    assert after["learner"]["stats"].tolist() == before["learner"]["stats"].tolist()
    assert after["learner"]["weights"].tolist() == before["learner"]["weights"].tolist()


@pytest.mark.parametrize("method", ["learn_one", "predict_one", "predict_proba_one"])
def test_values_whose_squares_overflow_are_refused(method: str) -> None:
    """1e200 is finite, its square is not (and 1e30's is, beyond the bound of 1e50 that
    keeps every learner's products finite): learned, they could make the weights
    infinite."""
    model = _learned((True, False))
    before = model.state_dict()
    for large in (1e200, 1e30):
        x = {**phishing()[0][0], "https": large}  # known names: predicting does not skip them
        with pytest.raises(InvalidInputError, match="too large: the sum of their squares is above"):
            getattr(model, method)(*((x, True) if method == "learn_one" else (x,)))
    x = {**phishing()[0][0], "https": 1e200}
    with pytest.raises(InvalidInputError, match="too large: the sum of their squares is above"):
        getattr(model, method)(*((x, True) if method == "learn_one" else (x,)))
    after = model.state_dict()
    assert after["learner"]["stats"].tolist() == before["learner"]["stats"].tolist()
    assert after["learner"]["weights"].tolist() == before["learner"]["weights"].tolist()
    assert math.isfinite(model.learner.summary()["margin_upper_bound"])


@pytest.mark.parametrize("delta", [1.0, "auto"])
def test_a_refused_example_leaves_no_label_behind(delta: float | str) -> None:
    """A refused example's new label would otherwise take the second label's place."""
    model = PDMClassifier(delta=delta)
    model.learn_one({"a": 1.0}, "spam")
    with pytest.raises(InvalidInputError, match="not finite"):
        model.learn_one({"a": math.nan}, "ham_typo")
    model.learn_one({"a": -1.0}, "ham")
    assert model._labelling.labels == ["spam", "ham"]


def test_unhashable_labels_are_refused() -> None:
    model = PDMClassifier(delta=1.0)
    with pytest.raises(InvalidInputError, match="labels must be hashable"):
        model.learn_one({"a": 1.0}, ["x"])
    assert model._signs == {}


@pytest.mark.parametrize(
    "params",
    [
        {"n_features": 0},
        {"n_features": 2.5},
        {"replay_every": 0},
        {"replay_passes": 0},
        {"eps": 2.0},
        {"pos_label": ["x"]},
        {"unknown": 1},
    ],
)
def test_bad_parameters_are_refused(params: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError):
        PDMClassifier(**params)


def test_parameters_match_the_engine_classes() -> None:
    import inspect

    for adapter in ADAPTERS.values():
        ours = inspect.signature(adapter).parameters
        engine = inspect.signature(adapter.learner_class).parameters
        assert list(ours)[: len(engine)] == list(engine)
        for name, parameter in engine.items():  # the same defaults, but Delta's
            expected = RIVER_DELTA if name == "delta" else parameter.default
            assert ours[name].default == expected
        assert list(ours)[len(engine) :] == [
            "n_features", "pos_label", "replay_every", "replay_passes", "average"
        ]  # fmt: skip


def test_streamlearn_imports_without_river() -> None:
    """Nothing but streamlearn.river imports river: streamlearn works without it."""
    code = (
        "import sys; sys.modules['river'] = None; "
        "import streamlearn, streamlearn.cli, streamlearn.daemon, streamlearn.jobs; "
        "assert 'streamlearn.river' not in sys.modules; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_bad_values_inside_the_auto_delta_window() -> None:
    model = PDMClassifier(delta="auto")  # Delta provisional until 1000 examples settle it
    for x, y in phishing()[:10]:
        model.learn_one(x, y)
    with pytest.raises(InvalidInputError, match="feature 'https' has the value nan"):
        model.learn_one({**phishing()[10][0], "https": math.nan}, True)
    assert model.learner.examples_presented == 10


def test_the_hash_cache_starts_over_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    import streamlearn.river.features as adapters

    stream = phishing()[:300]
    large = PDMClassifier(delta=1.0, n_features=32)
    for x, y in stream:
        large.learn_one(x, y)
    monkeypatch.setattr(adapters, "HASH_CACHE_SIZE", 5)
    small = PDMClassifier(delta=1.0, n_features=32)
    for x, y in stream:
        small.learn_one(x, y)
    assert len(small._index) <= 5 < len(large._index)
    assert small.weights == large.weights


def test_numbers_of_any_numeric_type_are_values() -> None:
    from decimal import Decimal
    from fractions import Fraction

    plain, typed = PDMClassifier(delta=1.0), PDMClassifier(delta=1.0)
    for model, x in (
        (plain, {"a": 1.0, "b": 0.5, "c": 2.0, "d": 1.0}),
        (typed, {"a": True, "b": Fraction(1, 2), "c": np.float32(2.0), "d": Decimal(1)}),
    ):
        model.learn_one(x, True)
        model.learn_one({"a": -1.0, "e": 3}, False)
    assert typed.weights == plain.weights


def test_kernel_arrays_of_another_dtype_are_refused() -> None:
    """The hot kernels run compiled for fixed dtypes: the adapter checks before using them."""
    from streamlearn.errors import StateError

    model = PDMClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, True)
    model._learner.state.weights = model._learner.state.weights.astype(np.float32)
    with pytest.raises(StateError, match="float32"):
        model._path.refresh()
