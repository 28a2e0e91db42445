"""A state with a valid checksum but a weight that is not finite is refused wherever a
state loads (a file changed by hand, or written by another program): before, it loaded
and its model answered ``nan``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from streamlearn.checkpoint.store import read_checkpoint, write_checkpoint
from streamlearn.cli import app
from streamlearn.errors import StateError
from streamlearn.jobs.learn import save_model
from streamlearn.learn import PDM, ModelBank, model_from_state
from streamlearn.sklearn import PDMClassifier

runner = CliRunner()
X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, -1.0]])
y = np.array([1, -1, 1, -1])


def spoiled(state: dict[str, Any], key: str, value: float) -> dict[str, Any]:
    """``state`` with the first number of ``state[key]`` replaced by ``value``."""
    array = np.array(state[key], dtype=np.float64)
    array.flat[0] = value
    return {**state, key: array}


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("key", ["weights", "scalars"])
@pytest.mark.parametrize("kind", ["learner", "bank"])
def test_a_state_with_a_value_that_is_not_finite_is_refused(
    kind: str, key: str, value: float
) -> None:
    model = (
        PDM(delta=1.0).fit(X, y)
        if kind == "learner"
        else ModelBank(PDM(delta=1.0)).fit(X, [[1], [2], [1, 2], [2]])
    )
    state = model.state_dict()
    model_from_state(state)  # as written: loads
    with pytest.raises(StateError, match="not finite"):
        model_from_state(spoiled(state, key, value))


def test_inspect_and_predict_refuse_a_checksummed_file_with_a_nan_weight(tmp_path: Path) -> None:
    path = tmp_path / "m.ckpt"
    save_model(str(path), PDM(delta=1.0).fit(X, y), 4)
    payload = dict(read_checkpoint(path).payload)
    payload["learner"] = spoiled(dict(payload["learner"]), "weights", np.nan)
    write_checkpoint(path, payload)  # a fresh, valid checksum
    data = tmp_path / "x.svm"
    data.write_text("1:1 2:1\n")
    for command in (["inspect", str(path)], ["predict", "--model", str(path), str(data)]):
        result = runner.invoke(app, command)
        assert result.exit_code != 0 and "not finite" in result.output, (command, result.output)
        assert "nan" not in result.stdout


def test_the_scikit_learn_estimators_refuse_it_too() -> None:
    state = PDMClassifier(delta=1.0).fit(X, y).state_dict()
    learner = spoiled(dict(state["learner"]), "weights", np.nan)
    with pytest.raises(StateError, match="not finite"):
        PDMClassifier.from_state({**state, "learner": learner})
