"""The river multi-class and multi-label adapters: the bank's weights, labels that appear
mid-stream, predictions from the decision values, and state round trips."""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from river_bank_streams import (
    Stream,
    assert_same_bank,
    bank_required,
    bank_twin,
    image_segments,
    multilabel,
)

from streamlearn.checkpoint.codec import decode, encode
from streamlearn.errors import InvalidInputError, InvalidParameterError, StateError
from streamlearn.learn import PDM
from streamlearn.river import PDMOneVsRestClassifier as FromRiverModule
from streamlearn.river.bank import (
    MULTILABEL_ADAPTERS,
    ONE_VS_REST_ADAPTERS,
    BankClassifierBase,
    PAUMMultiLabelClassifier,
    PAUMOneVsRestClassifier,
    PDMMultiLabelClassifier,
    PDMOneVsRestClassifier,
)

OVR = sorted(ONE_VS_REST_ADAPTERS.items())
MULTI = sorted(MULTILABEL_ADAPTERS.items())


def _progressive(model: BankClassifierBase, stream: Stream) -> list[Any]:
    predictions = []
    for x, y in stream:
        predictions.append(model.predict_one(x))
        model.learn_one(x, y)
    return predictions


@pytest.mark.parametrize("delta", ["auto", 1.0])
@pytest.mark.parametrize(("name", "adapter"), OVR, ids=[name for name, _ in OVR])
def test_multiclass_weights_equal_the_bank(
    name: str, adapter: type[BankClassifierBase], delta: object
) -> None:
    # a small buffer: eviction is part of the comparison; a replay after evictions runs
    # to convergence, which on this set takes PDM and Kozinec hundreds of passes a label
    model = adapter(delta=delta, buffer_size=500, replay_every=400, max_passes=50,
                    **bank_required(adapter))  # fmt: skip
    stream = image_segments()[:1300]
    _progressive(model, stream)
    assert_same_bank(model.bank, bank_twin(model, stream))
    assert model.bank.n_labels == 7
    assert model.bank.buffer.features.evicted > 0


@pytest.mark.parametrize(("name", "adapter"), MULTI, ids=[name for name, _ in MULTI])
def test_multilabel_weights_equal_the_bank(name: str, adapter: type[BankClassifierBase]) -> None:
    model = adapter(delta=1.0, **bank_required(adapter))
    stream = multilabel()
    _progressive(model, stream)
    assert_same_bank(model.bank, bank_twin(model, stream, multilabel_rows=True))
    assert model.labels == [f"topic{k}" for k in range(6)]


def test_first_label_equals_the_standalone_learner() -> None:
    """The label present from the first example: the engine learner on +1/-1 labels."""
    stream = image_segments()[:800]
    model = PDMOneVsRestClassifier(eps=0.05, delta=1.0)
    _progressive(model, stream)
    first = model.labels[0]
    names = list(model._index)
    X = np.zeros((len(stream), len(names)))
    for i, (x, _) in enumerate(stream):
        for j, name in enumerate(names):
            X[i, j] = x.get(name, 0.0)
    signs = np.array([1 if y == first else -1 for _, y in stream])
    learner = PDM(eps=0.05, delta=1.0).learn(X, signs)
    np.testing.assert_array_equal(model.bank.learner(0.0).coef_, learner.coef_)
    assert model.weights[first] == dict(zip(names, learner.coef_.tolist(), strict=True))


def test_hashed_features_with_collisions_equal_the_bank() -> None:
    model = PAUMOneVsRestClassifier(tau_pos=2.0, delta=1.0, n_features=7)
    stream = image_segments()[:600]
    _progressive(model, stream)
    assert_same_bank(model.bank, bank_twin(model, stream))
    assert model.bank.n_features_in_ <= 7


def test_new_labels_mid_stream() -> None:
    """A class that first appears late starts a learner that saw the buffer as
    negatives, exactly as the bank does; probabilities list it from then on."""
    stream = image_segments()[:900]
    late = stream[0][1]
    reordered = [e for e in stream if e[1] != late] + [e for e in stream if e[1] == late]
    model = PDMOneVsRestClassifier(delta=1.0)
    before = None
    for position, (x, y) in enumerate(reordered):
        if y == late and before is None:
            before = model.predict_proba_one(x)
            first_late = position
        model.learn_one(x, y)
    assert before is not None and late not in before
    assert model.labels[-1] == late
    assert set(model.predict_proba_one(reordered[0][0])) == set(model.labels)
    assert model.bank.learner(6.0).examples_presented == len(reordered)
    assert first_late > 0
    assert_same_bank(model.bank, bank_twin(model, reordered))


def test_predictions_follow_the_decision_values() -> None:
    model = PAUMOneVsRestClassifier(delta=1.0)
    stream = image_segments()
    _progressive(model, stream[:1500])
    assert model.bank.class_calibration().scale > 0.0
    for x, _ in stream[1500:1600]:
        f, _ = model._decisions(x)
        assert model.predict_one(x) == model.labels[int(np.argmax(f))]
        assert model.rank_one(x)[0] == model.predict_one(x)
        proba = model.predict_proba_one(x)
        assert list(proba) == model.labels
        p = np.array(list(proba.values()))
        # a softmax of the decision values with one positive scale: the same order
        assert model.labels[int(np.argmax(p))] == model.predict_one(x)
        assert np.all(np.diff(p[np.argsort(f, kind="stable")]) >= -1e-15)
        assert math.isclose(float(p.sum()), 1.0)
    # raw, unscaled features: far above the 1/7 of chance all the same
    accuracy = np.mean([model.predict_one(x) == y for x, y in stream[1500:]])
    assert accuracy > 0.35


def test_multilabel_predictions_are_the_positive_decision_values() -> None:
    model = PDMMultiLabelClassifier(eps=0.1, delta=1.0)
    stream = multilabel(400)
    _progressive(model, stream[:300])
    for x, _ in stream[300:]:
        f, _ = model._decisions(x)
        predicted = model.predict_one(x)
        assert predicted == {label: v > 0 for label, v in zip(model.labels, f, strict=True)}
        proba = model.predict_proba_one(x)
        for label, v in zip(model.labels, f, strict=True):
            assert (proba[label][True] > 0.5) == (v > 0)
            assert math.isclose(proba[label][True] + proba[label][False], 1.0)
    hits = [model.predict_one(x)[label] == on for x, y in stream[300:] for label, on in y.items()]
    assert np.mean(hits) > 0.7


def test_labels_seen_only_false_get_learners() -> None:
    model = PDMMultiLabelClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, {"spam": True, "ham": False})
    model.learn_one({"b": 1.0}, {"eggs": False})
    assert model.labels == ["spam", "ham", "eggs"]
    assert model.bank.n_labels == 3
    assert set(model.predict_one({"a": 1.0})) == {"spam", "ham", "eggs"}
    assert model.predict_one({"a": 1.0})["spam"] is True


def test_before_any_label() -> None:
    model = PDMOneVsRestClassifier()
    assert model.predict_one({"a": 1.0}) is None
    assert model.predict_proba_one({"a": 1.0}) == {}
    assert PDMMultiLabelClassifier().predict_one({"a": 1.0}) == {}


def test_a_refused_example_leaves_no_label_or_name_behind() -> None:
    model = PDMOneVsRestClassifier(delta=1.0)
    model.learn_one({"a": 1.0}, "x")
    for bad in ({"b": math.nan}, {"a": 1e200}):
        with pytest.raises(InvalidInputError, match=r"not finite|too large"):
            model.learn_one(bad, "ghost")
    assert list(model.predict_proba_one({"a": 1.0})) == ["x"]
    assert model.state_dict()["names"] == ["a"]
    multi = PDMMultiLabelClassifier(delta=1.0)
    multi.learn_one({"a": 1.0}, {"x": True})
    with pytest.raises(InvalidInputError, match="not finite"):
        multi.learn_one({"a": math.inf}, {"x": False, "ghost": False})
    assert list(multi.predict_one({"a": 1.0})) == ["x"]
    assert multi._bank.n_labels == 1


def test_bad_inputs_are_named() -> None:
    model = PDMOneVsRestClassifier(delta=1.0)
    with pytest.raises(InvalidInputError, match="'a'"):
        model.learn_one({"a": "text"}, 1)
    with pytest.raises(InvalidInputError, match="not finite"):
        model.learn_one({"a": math.inf}, 1)
    with pytest.raises(InvalidInputError, match="hashable"):
        model.learn_one({"a": 1.0}, [1])
    with pytest.raises(InvalidInputError, match="dict"):
        PDMMultiLabelClassifier().learn_one({"a": 1.0}, "spam")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        PDMOneVsRestClassifier(n_features=0)
    with pytest.raises(InvalidParameterError):
        PDMOneVsRestClassifier(replay_every=-1)


def test_importable_from_the_river_module() -> None:
    assert FromRiverModule is PDMOneVsRestClassifier


def _checkpointed(model: BankClassifierBase) -> BankClassifierBase:
    payload = decode(encode(model.state_dict(), created=0.0)).payload
    return type(model).from_state(payload)


ROUND_TRIPS: dict[str, Callable[[Any], Any]] = {
    "pickle": lambda model: pickle.loads(pickle.dumps(model)),
    "deepcopy": copy.deepcopy,
    "checkpoint": _checkpointed,
    "clone_with_attributes": lambda model: model.clone(include_attributes=True),
}
KINDS: dict[str, tuple[Callable[[], BankClassifierBase], Stream]] = {
    "ovr-pdm": (
        lambda: PDMOneVsRestClassifier(delta=1.0, replay_every=200),
        image_segments()[:1200],
    ),
    "ovr-paum-kappa": (
        lambda: PAUMOneVsRestClassifier(tau_pos=5.0, tau_pos_kappa=-3.0, n_features=32),
        image_segments()[:1200],
    ),
    "multilabel-pdm": (lambda: PDMMultiLabelClassifier(eps=0.1, delta=1.0), multilabel()),
    "multilabel-paum": (lambda: PAUMMultiLabelClassifier(replay_every=50), multilabel()),
}


@pytest.mark.parametrize("trip", sorted(ROUND_TRIPS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_round_trip_keeps_predictions_and_continues_exactly(kind: str, trip: str) -> None:
    make, stream = KINDS[kind]
    half = len(stream) // 2
    model = make()
    _progressive(model, stream[:half])
    restored = ROUND_TRIPS[trip](model)
    assert type(restored) is type(model)
    assert restored._get_params() == model._get_params()
    probe = stream[half : half + 100]
    assert [restored.predict_proba_one(x) for x, _ in probe] == [
        model.predict_proba_one(x) for x, _ in probe
    ]
    assert _progressive(restored, stream[half:]) == _progressive(model, stream[half:])
    assert_same_bank(restored.bank, model.bank)
    assert restored.weights == model.weights


def test_round_trip_inside_the_auto_delta_window() -> None:
    model = PDMOneVsRestClassifier(delta="auto")
    stream = image_segments()
    _progressive(model, stream[:400])
    restored = _checkpointed(model)  # Delta provisional: 1000 examples settle it
    _progressive(model, stream[400:1500])
    _progressive(restored, stream[400:1500])
    assert restored.bank.delta_ is not None
    assert_same_bank(restored.bank, model.bank)


def test_clone_is_fresh_and_from_state_refuses_foreign_states() -> None:
    model = PDMOneVsRestClassifier(eps=0.2, delta=1.0)
    _progressive(model, image_segments()[:100])
    clone = model.clone()
    assert clone._get_params() == model._get_params() and clone.labels == []
    state = model.state_dict()
    with pytest.raises(StateError, match="PDMOneVsRestClassifier"):
        PAUMOneVsRestClassifier.from_state(state)
    with pytest.raises(StateError, match="format"):
        PDMOneVsRestClassifier.from_state({**state, "format": "other"})
    with pytest.raises(StateError, match="incomplete"):
        PDMOneVsRestClassifier.from_state({k: v for k, v in state.items() if k != "labels"})


def test_decisions_are_the_banks_and_never_stale() -> None:
    """The one-call path gives the bank's decision values; an example predicted, then
    another learned, then predicted again gets the decisions of the model as it is."""
    model = PDMOneVsRestClassifier(delta=1.0)
    stream = image_segments()
    _progressive(model, stream[:300])
    names = list(model._index)
    for x, y in stream[300:340]:
        row = np.array([[x.get(name, 0.0) for name in names]])
        expected = model.bank.decision_function(row)[0]  # PDM: engine units are coef_ units
        _, by_id = model._decisions(x)
        np.testing.assert_allclose(by_id, expected, rtol=1e-12, atol=1e-12)
        model.predict_one(x)
        model.learn_one(*stream[0])  # another example: the model changes
        again, _ = model._decisions(x)
        fresh = PDMOneVsRestClassifier.from_state(model.state_dict())._decisions(x)[0]
        np.testing.assert_allclose(again, fresh, rtol=1e-12, atol=1e-12)
        model.learn_one(x, y)


@pytest.mark.parametrize("value", ["no", "", float("nan"), 2, 0.5, None])
def test_a_multilabel_target_says_true_or_false(value: object) -> None:
    """Python takes "no" and NaN as true: they learned as positives. They are refused,
    and the refused example leaves the model as it was."""
    model = PDMMultiLabelClassifier(eps=0.1, delta=1.0)
    model.learn_one({"a": 1.0}, {"spam": True, "ham": False})
    before = model.bank.state_dict()
    with pytest.raises(InvalidInputError, match="True or False"):
        model.learn_one({"a": 2.0}, {"spam": value})
    after = model.bank.state_dict()
    assert after["examples_seen"] == before["examples_seen"]
    model.learn_one({"a": 3.0}, {"spam": np.True_, "ham": 0, "eggs": 1})
    assert model.labels == ["spam", "ham", "eggs"]
