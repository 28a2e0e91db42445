"""A learner defined only by a table entry (:mod:`new_learner`) gets everything the
table's own learners get: a learner class that runs its rule, command-line options, a
scikit-learn estimator and river classifiers, which pass scikit-learn's and river's own
estimator checks."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from new_learner import (
    ENTRY,
    TABLE,
    PAMWide,
    PAMWideClassifier,
    PAMWideEstimator,
    PAMWideMultiLabelClassifier,
    PAMWideOneVsRestClassifier,
)
from river import checks, datasets
from sklearn.datasets import make_multilabel_classification
from sklearn.utils.estimator_checks import parametrize_with_checks
from typer.testing import CliRunner

from streamlearn.cli import make_app
from streamlearn.learn import PAM, model_from_state
from streamlearn.sklearn import PAMClassifier

X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.5], [0.2, 2.0], [1.5, 1.0], [0.1, 0.3]])
Y = np.array([1, -1, 1, -1, 1, -1])


def test_the_entry_makes_a_learner_that_runs_its_rule() -> None:
    """PAM-wide(tau, width) is PAM(width * tau), bit for bit."""
    wide = PAMWide(1.5, width=2.0, delta=0.5).fit(X, Y)
    pam = PAM(3.0, delta=0.5).fit(X, Y)
    np.testing.assert_array_equal(wide.coef_, pam.coef_)
    assert wide.intercept_ == pam.intercept_
    assert wide.summary()["updates"] == pam.summary()["updates"] > 0
    assert wide.algorithm == "pam-wide" and wide.get_params()["width"] == 2.0


def test_its_parameters_are_checked_and_its_state_round_trips() -> None:
    with pytest.raises(ValueError, match="width must be > 0"):
        PAMWide(width=0.0)
    learner = PAMWide(0.5, width=3.0, delta=1.0).learn(X, Y)
    again = model_from_state(learner.state_dict(), TABLE)
    np.testing.assert_array_equal(again.decision_function(X), learner.decision_function(X))
    assert pickle.loads(pickle.dumps(learner)).get_params() == learner.get_params()


def test_the_command_line_learns_predicts_and_inspects_it(tmp_path: Path) -> None:
    runner = CliRunner()
    app = make_app(TABLE)
    data = tmp_path / "train.svm"
    data.write_text(
        "".join(
            f"{label:+d} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(row) if v) + "\n"
            for row, label in zip(X.tolist(), Y.tolist(), strict=True)
        )
    )
    model = tmp_path / "m.ckpt"
    learned = runner.invoke(
        app,
        ["learn", "--quiet", "--json", "--algo", "pam-wide", "--tau", "1.5", "--width", "2",
         "--delta", "0.5", "--model", str(model), str(data)],
    )  # fmt: skip
    assert learned.exit_code == 0, learned.output
    assert json.loads(learned.stdout)["converged"] is True
    shown = runner.invoke(app, ["inspect", "--json", str(model)])
    assert shown.exit_code == 0, shown.output
    details = json.loads(shown.stdout)
    assert details["algorithm"] == "pam-wide" and details["params"]["width"] == 2.0
    predicted = runner.invoke(app, ["predict", "--model", str(model), "--labels", str(data)])
    assert predicted.stdout.split() == [str(label) for label in Y.tolist()]
    refused = runner.invoke(app, ["learn", "--algo", "pdm", "--width", "2", str(data)])
    assert refused.exit_code == 1 and "--width is not a parameter of pdm" in refused.stderr
    assert "--width" in runner.invoke(app, ["serve", "--help"]).stdout


def test_the_estimator_equals_pam_with_the_widened_margin() -> None:
    ours = PAMWideEstimator(tau=1.5, width=2.0, delta=0.5).fit(X, Y)
    theirs = PAMClassifier(tau=3.0, delta=0.5).fit(X, Y)
    np.testing.assert_array_equal(ours.coef_, theirs.coef_)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


@parametrize_with_checks([PAMWideEstimator()])
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)


RIVER_MODELS = [PAMWideClassifier, PAMWideOneVsRestClassifier, PAMWideMultiLabelClassifier]


def _river_cases() -> list[Any]:
    cases = []
    for model_class in RIVER_MODELS:
        for position, check in enumerate(checks.yield_checks(model_class())):
            case_id = f"{model_class.__name__}-{position:02d}-{check.__name__}"
            cases.append(pytest.param(model_class, position, check.__name__, id=case_id))
    return cases


def _labelled_topics(n: int) -> list[tuple[dict[str, float], dict[str, bool]]]:
    """A synthetic multi-label stream in river's form, for the multi-label checks that
    would otherwise download river's Music data set."""
    X, Y = make_multilabel_classification(
        n_samples=n, n_features=12, n_classes=6, n_labels=2, allow_unlabeled=True,
        random_state=0,
    )  # fmt: skip
    return [
        ({f"f{j}": float(v) for j, v in enumerate(row) if v},
         {f"topic{k}": bool(b) for k, b in enumerate(labels)})
        for row, labels in zip(X, Y, strict=True)
    ]  # fmt: skip


@pytest.mark.parametrize(("model_class", "position", "check_name"), _river_cases())
def test_river_check(model_class: Any, position: int, check_name: str) -> None:
    model = model_class()
    check = list(checks.yield_checks(model))[position]
    assert check.__name__ == check_name
    if model_class is PAMWideMultiLabelClassifier and "dataset" in getattr(check, "keywords", {}):
        size = 500 if check_name == "check_bounded_memory_growth" else 50
        check.func(model.clone(), dataset=iter(_labelled_topics(size)))
    else:
        check(model.clone())


def test_river_check_estimator_and_learning() -> None:
    checks.check_estimator(PAMWideClassifier())
    model = PAMWideClassifier(tau=0.5, width=2.0, delta=1.0)
    correct = 0
    for x, y in datasets.Phishing().take(600):
        correct += model.predict_one(x) == y
        model.learn_one(x, y)
    assert correct / 600 > 0.8
    assert model.learner.entry is ENTRY
