"""The command line with one-vs-rest banks: learn, predict, eval, inspect, resume."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from streamlearn import ModelBank
from streamlearn.cli import app
from streamlearn.jobs.learn import load_model

runner = CliRunner()
YEAST = Path(__file__).resolve().parents[3] / "shared" / "data" / "yeast" / "yeast.all"


def multilabel_lines(n: int, seed: int) -> list[str]:
    """Label sets from three linear rules over 6 features (some lines with no label)."""
    rng = np.random.default_rng(seed)
    rules = np.array([[2, 0, 0, 1, 0, 0], [0, 2, 0, 0, -1, 0], [0, 0, 2, 0, 0, 1.0]])
    lines = []
    for _ in range(n):
        x = rng.normal(size=6)
        labels = [str(7 * (k + 1)) for k in range(3) if rules[k] @ x > 0.5]
        features = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x))
        lines.append(f"{','.join(labels)} {features}")
    return lines


@pytest.fixture
def bank_files(tmp_path: Path) -> tuple[Path, Path]:
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    train.write_text("\n".join(multilabel_lines(300, seed=1)) + "\n")
    test.write_text("\n".join(multilabel_lines(100, seed=2)) + "\nbad line\n")
    return train, test


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_learn_predict_eval_inspect_a_bank(bank_files: tuple[Path, Path], tmp_path: Path) -> None:
    train, test = bank_files
    model = tmp_path / "bank.ckpt"
    figures = json.loads(
        invoke(
            "learn",
            str(train),
            "--one-vs-rest",
            "--algo",
            "paum",
            "--tau-neg",
            "-1",
            "--tau-pos",
            "2",
            "--tau-pos-kappa",
            "-5",
            "--model",
            str(model),
            "--json",
            "--quiet",
        )
    )
    assert figures["labels"] == 3 and figures["converged"] is True
    assert {row["label"] for row in figures["per_label"]} == {7.0, 14.0, 21.0}
    bank, job = load_model(str(model))
    assert isinstance(bank, ModelBank) and job["stream_examples"] == 300
    assert bank.tau_pos_kappa == -5.0 and bank.base.tau_pos == 2.0

    sets = invoke("predict", "--model", str(model), str(test)).splitlines()
    assert len(sets) == 101 and sets[-1] == "nan"
    rows = _feature_rows(test)
    expected = [",".join(str(int(v)) for v in s) for s in bank.predict_sets(rows)]
    assert sets[:100] == expected
    classes = invoke("predict", "--model", str(model), "--output", "class", str(test))
    assert classes.splitlines()[:100] == [str(int(v)) for v in bank.predict(rows)]
    ranking = invoke("predict", "--model", str(model), "--output", "ranking", str(test))
    first = [item.split(":")[0] for item in ranking.splitlines()[0].split()]
    assert first == [str(int(v)) for v in bank.rank(rows)[0]]

    report = json.loads(invoke("eval", "--model", str(model), "--json", str(test)))
    assert report["examples"] == 100 and report["rejected_lines"] == 1
    assert [p["label"] for p in report["per_label"]] == [7.0, 14.0, 21.0]
    assert report["macro_average_precision"] > 0.8
    assert "multiclass" not in report  # lines carry 0 to 3 labels
    table = invoke("eval", "--model", str(model), str(test))
    assert "macro_average_precision" in table and "average_precision" in table.splitlines()[-4]

    details = json.loads(
        invoke("inspect", str(model), "--json", "--export-weights", str(tmp_path / "w.npy"))
    )
    assert details["one_vs_rest"] is True and len(details["per_label"]) == 3
    weights = np.load(tmp_path / "w.npy")
    assert weights.shape == (3, 6)
    np.testing.assert_array_equal(weights[0], bank.learners()[0].coef_)


def test_resume_continues_the_bank_and_refuses_mismatches(
    bank_files: tuple[Path, Path], tmp_path: Path
) -> None:
    train, _ = bank_files
    lines = train.read_text().splitlines()
    first, second = tmp_path / "a.svm", tmp_path / "b.svm"
    first.write_text("\n".join(lines[:150]) + "\n")
    second.write_text("\n".join(lines[150:]) + "\n")
    common = ("--one-vs-rest", "--delta", "0.5", "--replay-every", "50", "--quiet")
    invoke("learn", str(train), *common, "--model", str(tmp_path / "whole.ckpt"))
    invoke("learn", str(first), *common, "--no-converge", "--model", str(tmp_path / "a.ckpt"))
    invoke("learn", str(second), *common, "--resume", str(tmp_path / "a.ckpt"),
           "--model", str(tmp_path / "b.ckpt"))  # fmt: skip
    whole, _ = load_model(str(tmp_path / "whole.ckpt"))
    resumed, _ = load_model(str(tmp_path / "b.ckpt"))
    assert isinstance(whole, ModelBank) and isinstance(resumed, ModelBank)
    for ours, theirs in zip(whole.learners(), resumed.learners(), strict=True):
        np.testing.assert_array_equal(ours.coef_, theirs.coef_)
    result = runner.invoke(
        app, ["learn", str(second), "--resume", str(tmp_path / "a.ckpt"), "--algo", "paum"]
    )
    assert result.exit_code == 1 and "--algo paum" in result.output
    binary = tmp_path / "binary.svm"
    binary.write_text("+1 1:1\n-1 2:1\n")
    invoke("learn", str(binary), "--model", str(tmp_path / "binary.ckpt"), "--quiet")
    result = runner.invoke(
        app, ["learn", str(binary), "--resume", str(tmp_path / "binary.ckpt"), "--one-vs-rest"]
    )
    assert result.exit_code == 1 and "binary model" in result.output
    result = runner.invoke(app, ["learn", str(first), "--tau-pos-kappa", "1", "--quiet"])
    assert result.exit_code == 1 and "--one-vs-rest" in result.output


def test_max_labels_rejects_the_lines_that_would_bring_more(tmp_path: Path) -> None:
    lines = multilabel_lines(300, seed=1)  # labels 7, 14 and 21
    lines[0] = "7 1:1"
    lines[1] = "14 1:1"
    lines[5] = "7,21 2:1"  # a third label: over a bound of 2, so the whole line is refused
    lines[6] = "1,2,3,4,5 3:1"
    text = "\n".join(lines) + "\n"
    fitting = [line for line in lines if "21" not in line.split(" ")[0].split(",")]
    model = tmp_path / "m.ckpt"
    result = runner.invoke(
        app,
        ["learn", "--one-vs-rest", "--max-labels", "2", "--json", "--quiet", "--model", str(model)],
        input=text,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["examples"] == len(fitting) - 1  # the line with labels 1 to 5 too
    assert figures["rejected_lines"] == 300 - figures["examples"]
    assert "line 6: too many labels: '7,21'" in result.stderr
    assert "line 7: too many labels: '1,2,3,4,5'" in result.stderr
    bank, _ = load_model(str(model))
    assert isinstance(bank, ModelBank) and sorted(bank.labels_.tolist()) == [7.0, 14.0]
    # without the bound (default 1000) every line is learned
    whole = runner.invoke(app, ["learn", "--one-vs-rest", "--json", "--quiet"], input=text)
    assert json.loads(whole.stdout)["examples"] == 300


def test_max_weights_rejects_the_lines_that_would_grow_the_bank_past_it(tmp_path: Path) -> None:
    # labels x features after each line: 1 x 1, 2 x 2, 2 x 4, then 3 x 5 and 2 x 9 would
    # pass 10, and the last line brings nothing new
    lines = ["1 1:1", "2 2:1", "1 3:1 4:0.5", "3 5:1", "2 9:1", "1 2:1"]
    model = tmp_path / "m.ckpt"
    result = runner.invoke(
        app,
        ["learn", "--one-vs-rest", "--max-weights", "10", "--json", "--quiet", "--model",
         str(model)],
        input="\n".join(lines) + "\n",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert (figures["examples"], figures["rejected_lines"]) == (4, 2)
    assert "line 4: too many weights: '3; needs 5 features'" in result.stderr
    assert "line 5: too many weights: '2; needs 9 features'" in result.stderr
    bank, _ = load_model(str(model))
    assert isinstance(bank, ModelBank) and bank.labels_.tolist() == [1.0, 2.0]
    assert bank.n_features_in_ == 4
    refused = runner.invoke(app, ["learn", "--one-vs-rest", "--max-weights", "0"], input="1 1:1\n")
    assert refused.exit_code == 1 and "--max-weights must be >= 1" in refused.output


def test_epochs_with_a_bank(bank_files: tuple[Path, Path]) -> None:
    train, _ = bank_files
    figures = json.loads(
        invoke(
            "learn",
            str(train),
            "--one-vs-rest",
            "--epochs",
            "3",
            "--delta",
            "0.5",
            "--json",
            "--quiet",
        )
    )
    assert figures["examples"] == 300 and figures["passes"] == 2


def test_multiclass_eval_has_accuracy_and_a_confusion_matrix(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[3.0, 0.0], [0.0, 3.0], [-3.0, -3.0]])
    lines = []
    for _ in range(300):
        y = int(rng.integers(0, 3))
        x = centres[y] + rng.normal(scale=0.6, size=2)
        lines.append(f"{y} 1:{x[0]:.4f} 2:{x[1]:.4f}")
    data = tmp_path / "classes.svm"
    data.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.ckpt"
    invoke("learn", str(data), "--one-vs-rest", "--model", str(model), "--quiet")
    report = json.loads(invoke("eval", "--model", str(model), "--json", str(data)))
    multiclass = report["multiclass"]
    assert multiclass["accuracy"] > 0.95 and multiclass["labels"] == [0.0, 1.0, 2.0]
    assert sum(map(sum, multiclass["confusion_matrix"])) == 300
    table = invoke("eval", "--model", str(model), str(data))
    assert "confusion matrix" in table and "multiclass_accuracy" in table


@pytest.mark.skipif(not YEAST.exists(), reason=f"shared data set missing: {YEAST}")
def test_yeast_round_trip(tmp_path: Path) -> None:
    lines = YEAST.read_text().splitlines()
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    train.write_text("\n".join(lines[:1500]) + "\n")
    test.write_text("\n".join(lines[1500:]) + "\n")
    model = tmp_path / "yeast.ckpt"
    invoke("learn", str(train), "--one-vs-rest", "--algo", "pdm", "--eps", "0.1",
           "--model", str(model), "--quiet")  # fmt: skip
    report = json.loads(invoke("eval", "--model", str(model), "--json", str(test)))
    assert report["examples"] == 917 and report["labels"] == 14
    assert report["labels_without_positives"] == 0
    assert 0.4 < report["macro_average_precision"] < 0.9
    assert 0.5 < report["micro_f1"] < 0.9


def _feature_rows(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from streamlearn.parse import SvmlightParser

    parser = SvmlightParser()
    rows = parser.feed(path.read_bytes())
    return rows.indptr, rows.indices, rows.values


def test_eval_reports_a_label_the_bank_never_learned(tmp_path: Path) -> None:
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    train.write_text("1 1:1\n2 2:1\n1 1:0.9\n2 2:1.1\n")
    test.write_text("1 1:1\n2 2:1\n5 1:1 2:1\n5,1 1:2\n")
    model = tmp_path / "m.ckpt"
    invoke("learn", str(train), "--one-vs-rest", "--model", str(model), "--quiet")
    report = json.loads(invoke("eval", "--model", str(model), "--json", str(test)))
    by_label = {p["label"]: p for p in report["per_label"]}
    assert sorted(by_label) == [1.0, 2.0, 5.0]
    unseen = by_label[5.0]
    assert unseen["positives"] == 2 and unseen["predicted"] == 0 and unseen["recall"] == 0.0
    assert unseen["average_precision"] == 0.5  # never scored: all tied, 2 positives of 4
