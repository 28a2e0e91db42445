"""The model interface (:class:`streamlearn.learn.Model`): a binary learner and a
one-vs-rest bank answer the same calls, each in its own terms."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamlearn.errors import InvalidInputError, InvalidParameterError
from streamlearn.learn import PDM, LabelledRows, Model, ModelBank, ModelLimits
from streamlearn.parse import ParsedRows, SvmlightParser
from streamlearn.replay import ReplaySchedule
from streamlearn.types import Batch

LINES = b"+1 1:1 2:0.5\n-1 2:1\nbad line\n+1 1:2\n-1 2:2 3:1\n"


def parsed() -> ParsedRows:
    return SvmlightParser().feed(LINES)


def models() -> list[Model]:
    return [PDM(eps=0.1, delta=1.0), ModelBank(PDM(eps=0.1, delta=1.0))]


@pytest.mark.parametrize("model", models(), ids=["binary", "bank"])
def test_admit_learn_and_answer(model: Model) -> None:
    rows = parsed()
    examples, rejected = model.admit(rows, ModelLimits(max_labels=10, max_weights=100))
    assert [r.line for r in rejected] == [3]
    seen = model.learn_on_schedule(examples, ReplaySchedule(every=2, passes=1), 0)
    assert seen == 4 and model.stream_judged == 4
    model.replay()
    assert model.converged and model.kept_every_example()
    answers = model.answers(np.eye(3))
    assert len(answers) == 3
    lines = list(model.prediction_lines(rows, model.label_output))
    assert len(lines) == 5 and lines[2] in ("0", "nan")
    figures = model.evaluate([rows], lambda rejected: None)
    assert figures["examples"] == 4
    again = model.with_params({**model.get_params(), "eps": 0.05})
    assert again.get_params()["eps"] == 0.05
    np.testing.assert_array_equal(
        again.decision_function(np.eye(3)), model.decision_function(np.eye(3))
    )
    assert model.describe()["algorithm"] == "pdm"


def test_each_kind_writes_its_answers() -> None:
    binary, bank = models()
    X, y = np.eye(3), np.array([1, -1, 1])
    binary.learn(X, y)
    bank.learn(X, y)
    score, label = binary.answers(X[:1])[0].decode().split()
    assert float(score) > 0 and label == "1"
    document = json.loads(bank.answers(X[:1])[0])
    assert document["label"] == 1 and [entry[0] for entry in document["ranking"]] == [1, -1]
    assert binary.get_params().get("one_vs_rest") is None
    assert bank.get_params()["one_vs_rest"] is True


def test_a_binary_learner_takes_rows_with_one_binary_label() -> None:
    rows = LabelledRows(
        np.array([0, 1, 2]), np.array([0, 1], np.int32), np.ones(2),
        np.array([0, 1, 2]), np.array([1.0, 0.0]),
    )  # fmt: skip
    learner = PDM(delta=1.0)
    learner.learn_rows(rows)
    assert learner.examples_presented == 2 and learner.coef_.tolist() == [1.0, -1.0]
    with pytest.raises(InvalidInputError, match="one label of"):
        learner.learn_rows(
            LabelledRows(
                rows.indptr, rows.indices, rows.values, rows.label_ptr, np.array([1.0, 3.0])
            )
        )


def test_a_bank_takes_a_batch_as_label_sets_of_one() -> None:
    batch = Batch.from_csr([0, 1, 2], [0, 1], [1.0, 1.0], [1, -1])
    bank = ModelBank(PDM(delta=1.0))
    bank.learn_rows(batch)
    assert bank.labels_.tolist() == [1.0, -1.0]


def test_outputs_are_checked() -> None:
    binary, bank = models()
    with pytest.raises(InvalidParameterError, match="--output"):
        list(binary.prediction_lines(parsed(), "ranking"))
    with pytest.raises(InvalidParameterError, match="--output"):
        list(bank.prediction_lines(parsed(), "labels"))
    assert binary.outputs[0] == "scores" and bank.outputs[0] == "sets"
