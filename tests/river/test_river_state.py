"""State round trips of the river adapters: clone, pickle, deepcopy and streamlearn's own
checkpoints keep predictions identical and continue learning exactly."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import pytest
from river_adapter_streams import assert_same_learner, phishing, required

from streamlearn.checkpoint.codec import decode, encode
from streamlearn.checkpoint.store import read_checkpoint, write_checkpoint
from streamlearn.errors import InvalidParameterError, StateError
from streamlearn.river import (
    ADAPTERS,
    LearnerClassifier,
    PAUMClassifier,
    PDMClassifier,
    PDMSuccClassifier,
)

ALL = sorted(ADAPTERS.items())


def _half_trained(adapter: type[LearnerClassifier], **params: Any) -> LearnerClassifier:
    model = adapter(**required(adapter), **params)
    for x, y in phishing()[:600]:
        model.predict_one(x)  # leaves a learned example deferred at the end
        model.learn_one(x, y)
    return model


def _predictions(model: LearnerClassifier) -> list[Any]:
    return [(model.predict_one(x), model.predict_proba_one(x)) for x, _ in phishing()[600:900]]


def _checkpointed(model: LearnerClassifier) -> LearnerClassifier:
    payload = decode(encode(model.state_dict(), created=0.0)).payload
    return type(model).from_state(payload)


ROUND_TRIPS = {
    "pickle": lambda model: pickle.loads(pickle.dumps(model)),
    "deepcopy": copy.deepcopy,
    "checkpoint": _checkpointed,
    "clone_with_attributes": lambda model: model.clone(include_attributes=True),
}


@pytest.mark.parametrize("trip", sorted(ROUND_TRIPS))
@pytest.mark.parametrize(("name", "adapter"), ALL, ids=[name for name, _ in ALL])
def test_round_trip_keeps_predictions_and_continues_exactly(
    name: str, adapter: type[LearnerClassifier], trip: str
) -> None:
    model = _half_trained(adapter, delta=1.0, replay_every=250)
    restored = ROUND_TRIPS[trip](model)
    assert type(restored) is type(model)
    assert _predictions(restored) == _predictions(model)
    for x, y in phishing()[600:]:
        model.learn_one(x, y)
        restored.learn_one(x, y)
    assert_same_learner(restored.learner, model.learner)
    assert restored.weights == model.weights


def test_round_trip_inside_the_auto_delta_window() -> None:
    """A checkpoint taken while delta='auto' has not settled Delta (its first 1000
    examples) continues exactly, through the settling."""
    model = PAUMClassifier(delta="auto")
    for x, y in phishing()[:400]:
        model.learn_one(x, y)
    restored = _checkpointed(model)
    assert restored.learner.state_dict()["window_seen"] == 400
    for x, y in phishing()[400:]:
        model.learn_one(x, y)
        restored.learn_one(x, y)
    assert restored.learner.delta_ is not None
    assert_same_learner(restored.learner, model.learner)


def test_pdm_succ_stage_survives_a_checkpoint() -> None:
    model = PDMSuccClassifier(eps=0.01, delta=1.0)
    for x, y in phishing()[:600]:
        model.learn_one(x, y)
    model.replay(max_passes=30)
    restored = _checkpointed(model)
    assert restored.learner.extra_state()["stage"] == model.learner.extra_state()["stage"] > 0
    for x, y in phishing()[600:]:
        model.learn_one(x, y)
        restored.learn_one(x, y)
    assert_same_learner(restored.learner, model.learner)


def test_checkpoint_file_round_trip(tmp_path: Path) -> None:
    model = _half_trained(PDMClassifier, eps=0.05, n_features=64)
    path = write_checkpoint(tmp_path / "river.ckpt", model.state_dict())
    restored = PDMClassifier.from_state(read_checkpoint(path).payload)
    assert restored.n_features == 64
    assert _predictions(restored) == _predictions(model)


def test_string_names_and_labels_survive_a_checkpoint() -> None:
    model = PDMClassifier(delta=1.0)
    stream = [({f"f{k}": v for k, v in x.items()}, "phish" if y else "ok") for x, y in phishing()]
    for x, y in stream[:500]:
        model.learn_one(x, y)
    restored = _checkpointed(model)
    assert restored.weights == model.weights
    assert [restored.predict_one(x) for x, _ in stream[500:]] == [
        model.predict_one(x) for x, _ in stream[500:]
    ]


def test_clone_is_fresh_with_the_same_parameters() -> None:
    model = _half_trained(PAUMClassifier, tau_neg=-0.5, tau_pos=2.0, delta=1.0)
    clone = model.clone()
    assert clone._get_params() == model._get_params()
    assert clone.learner.examples_presented == 0
    assert clone.predict_proba_one(phishing()[0][0]) == {False: 0.5, True: 0.5}


def test_clone_with_attributes_and_new_parameters() -> None:
    """river's clone(new_params, include_attributes=True): the state, the new parameters."""
    model = _half_trained(PDMClassifier, eps=0.01, delta=1.0)
    clone = model.clone({"eps": 0.2}, include_attributes=True)
    assert clone.eps == clone.learner.eps == 0.2
    assert clone.weights == model.weights
    assert clone.learner.updates == model.learner.updates


@pytest.mark.parametrize(
    "new_params",
    [{"n_features": 8}, {"delta": 2.0}, {"pos_label": False}, {"buffer_size": 50}, {"rho": 2.0}],
)
def test_clone_with_attributes_refuses_what_the_state_was_built_with(
    new_params: dict[str, Any],
) -> None:
    """Hashed names read with weights laid out by a name map, a Delta or positive label
    the state does not use: each would give wrong predictions without a word."""
    model = _half_trained(PDMClassifier, eps=0.01, delta=1.0, pos_label=True)
    with pytest.raises(InvalidParameterError, match=f"cannot change {next(iter(new_params))}"):
        model.clone({**new_params, "eps": 0.2}, include_attributes=True)
    unchanged = model.clone({"delta": 1.0, "pos_label": True}, include_attributes=True)
    assert unchanged.weights == model.weights


def test_from_state_refuses_foreign_states() -> None:
    state = _half_trained(PDMClassifier).state_dict()
    with pytest.raises(StateError, match="PDMClassifier"):
        PAUMClassifier.from_state(state)
    with pytest.raises(StateError, match="format"):
        PDMClassifier.from_state({**state, "format": "other"})
    with pytest.raises(StateError, match="incomplete"):
        PDMClassifier.from_state({k: v for k, v in state.items() if k != "names"})
