"""The command line through typer's runner: learn, predict, eval, inspect, resume."""

from __future__ import annotations

import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from svm_samples import svmlight_lines
from typer.testing import CliRunner

from streamlearn import __version__
from streamlearn import cli as cli_module
from streamlearn._kernels import COMPILING, CompileLog, _jit
from streamlearn.checkpoint import read_checkpoint, write_checkpoint
from streamlearn.cli import app
from streamlearn.config import DEFAULT_MAX_FEATURES, LearnerSpec
from streamlearn.jobs import serve
from streamlearn.jobs.learn import load_model

runner = CliRunner()


def learn_json(*args: str, input_text: str | None = None) -> dict[str, object]:
    result = runner.invoke(app, ["learn", "--json", "--quiet", *args], input=input_text)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def squashed(text: str) -> str:
    """Click's error box as one line: its frame and line breaks gone."""
    return re.sub(r"[\s│╭╮╰╯─]+", " ", text)


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("learn", "predict", "eval", "inspect"):
        assert command in result.stdout
    learn_help = runner.invoke(app, ["learn", "--help"]).stdout
    assert "--eps" in learn_help and "--replay-every" in learn_help


def test_version_names_the_package_and_the_project_file_agrees() -> None:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["version"] == __version__
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith(f"streamlearn {__version__} (Python ")
    assert ", numpy " in result.stdout and ", numba " in result.stdout


def test_learn_from_standard_input_prints_the_summary(train_file: Path) -> None:
    result = runner.invoke(app, ["learn", "--quiet", "--delta", "1"], input=train_file.read_text())
    assert result.exit_code == 0, result.output
    for key in ("examples", "updates", "passes", "converged", "margin_achieved", "certified_gap"):
        assert key in result.stdout
    figures = learn_json("--delta", "1", input_text=train_file.read_text())
    assert figures["examples"] == 400 and figures["rejected_lines"] == 0
    assert figures["converged"] is True
    assert figures["certified_gap"] <= 0.01 + 1e-12  # PDM's default eps


def test_learn_predict_eval_inspect(train_file: Path, test_file: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.ckpt"
    learn_json(str(train_file), "--algo", "paum", "--tau-neg", "-1", "--tau-pos", "1",
               "--model", str(model))  # fmt: skip
    learner, _ = load_model(str(model))
    assert learner.algorithm == "paum" and learner.tau_pos == 1.0

    scores = runner.invoke(app, ["predict", "--model", str(model), str(test_file)])
    assert scores.exit_code == 0, scores.output
    values = np.array([float(v) for v in scores.stdout.split()])
    assert values.shape == (150,)
    labels = runner.invoke(app, ["predict", "--model", str(model), "--labels", str(test_file)])
    assert [int(v) for v in labels.stdout.split()] == np.where(values > 0, 1, -1).tolist()

    figures = json.loads(
        runner.invoke(app, ["eval", "--model", str(model), "--json", str(test_file)]).stdout
    )
    truth = np.array(
        [1 if line.startswith("+") else -1 for line in test_file.read_text().split("\n") if line]
    )
    assert figures["examples"] == 150
    assert figures["accuracy"] == pytest.approx(np.mean(np.where(values > 0, 1, -1) == truth))
    for key in ("precision", "recall", "f1", "average_precision", "auc"):
        assert 0.0 <= figures[key] <= 1.0

    weights = tmp_path / "w.npy"
    shown = runner.invoke(app, ["inspect", str(model), "--json", "--export-weights", str(weights)])
    assert shown.exit_code == 0, shown.output
    details = json.loads(shown.stdout)
    assert details["algorithm"] == "paum" and details["params"]["tau_neg"] == -1.0
    assert details["written_by"] == f"streamlearn {__version__}"
    assert np.array_equal(np.load(weights), learner.coef_)
    assert "margin_upper_bound" in details and details["n_features"] == learner.n_features_in_


def test_resume_continues_exactly(tmp_path: Path) -> None:
    """learn A, then resume on B, equals learning A + B in one run (--no-converge),
    with replays at every 70 examples crossing the boundary between A and B. (A run
    that ends before 1000 examples settles delta 'auto' from those it had, and a resume
    goes on under that Delta: see test_a_short_run_settles_delta_for_its_resume.)"""
    lines = svmlight_lines(1300, seed=5)
    a, b, both = tmp_path / "a.svm", tmp_path / "b.svm", tmp_path / "ab.svm"
    a.write_text("\n".join(lines[:1040]) + "\n")
    b.write_text("\n".join(lines[1040:]) + "\n")
    both.write_text("\n".join(lines) + "\n")
    common = ["--no-converge", "--replay-every", "70", "--replay-passes", "2"]
    learn_json(str(a), *common, "--model", str(tmp_path / "a.ckpt"))
    learn_json(
        str(b), *common, "--resume", str(tmp_path / "a.ckpt"), "--model", str(tmp_path / "ab1.ckpt")
    )
    learn_json(str(both), *common, "--model", str(tmp_path / "ab2.ckpt"))
    resumed, job1 = load_model(str(tmp_path / "ab1.ckpt"))
    single, job2 = load_model(str(tmp_path / "ab2.ckpt"))
    assert job1 == job2 == {"stream_examples": 1300}
    assert resumed.delta_ == single.delta_  # 'auto' fixed by the first 1000
    assert np.array_equal(resumed.coef_, single.coef_)
    assert resumed.intercept_ == single.intercept_
    assert resumed.summary() == single.summary()


def test_a_short_run_settles_delta_for_its_resume(tmp_path: Path) -> None:
    """delta 'auto' on a stream shorter than its window: Delta from every example that
    came (nothing held back), and a resume keeps it."""
    lines = svmlight_lines(700, seed=5)
    a, b = tmp_path / "a.svm", tmp_path / "b.svm"
    a.write_text("\n".join(lines[:300]) + "\n")
    b.write_text("\n".join(lines[300:]) + "\n")
    learn_json(str(a), "--model", str(tmp_path / "a.ckpt"))
    learn_json(str(b), "--resume", str(tmp_path / "a.ckpt"), "--model", str(tmp_path / "b.ckpt"))
    short, _ = load_model(str(tmp_path / "a.ckpt"))
    resumed, _ = load_model(str(tmp_path / "b.ckpt"))
    assert short.summary()["examples"] == 300 and short.summary()["pending_examples"] == 0
    assert short.converged and np.any(short.coef_ != 0.0)
    assert resumed.delta_ == short.delta_ and resumed.summary()["examples"] == 700


def test_resume_refuses_other_parameters(train_file: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.ckpt"
    learn_json(str(train_file), "--model", str(model), "--eps", "0.05")
    result = runner.invoke(
        app, ["learn", "--quiet", str(train_file), "--resume", str(model), "--eps", "0.1"]
    )
    assert result.exit_code == 1
    assert "--eps 0.1" in result.stderr and "0.05" in result.stderr


def test_resume_takes_the_active_sets_the_checkpoint_has(train_file: Path, tmp_path: Path) -> None:
    """--no-shrink is the default schedule: the same as a checkpoint made without it."""
    model = tmp_path / "m.ckpt"
    learn_json(str(train_file), "--model", str(model))
    learn_json(str(train_file), "--resume", str(model), "--no-shrink")
    refused = runner.invoke(app, ["learn", "--quiet", str(train_file), "--resume", str(model),
                                  "--shrink"])  # fmt: skip
    assert refused.exit_code == 1
    assert "--shrink (the checkpoint's active sets do not shrink)" in refused.stderr


def test_resume_keeps_accepting_the_features_its_model_has(tmp_path: Path) -> None:
    """--max-features below the resumed model's size is raised to it; beyond, lines are
    still refused."""
    model = tmp_path / "m.ckpt"
    trained = "+1 1:1 40:1\n-1 2:1 3:1\n" * 20
    learn_json("--max-features", "40", "--model", str(model), input_text=trained)
    result = runner.invoke(
        app, ["learn", "--json", "--quiet", "--max-features", "10", "--resume", str(model)],
        input="+1 1:1 30:1\n-1 2:1 41:1\n-1 2:1 3:1\n",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rejected_lines"] == 1
    assert "line 2: index above max_features" in result.stderr


def test_bad_lines_are_skipped_counted_and_shown(train_file: Path) -> None:
    text = train_file.read_text().split("\n")
    text[3] = "+1 3:abc 4:1"
    text[10] = "-1 0:1.5"
    text[20] = "+1 2:nan"
    text[30] = f"-1 1:1 {DEFAULT_MAX_FEATURES + 1}:1"  # dense weights that large: refused
    text[40] = "+1 1:1e200"  # finite, but its square is not: the weights would be infinite
    result = runner.invoke(app, ["learn", "--json", "--quiet"], input="\n".join(text))
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["examples"] == 395 and figures["rejected_lines"] == 5
    assert math.isfinite(figures["margin_upper_bound"])
    assert "line 41: values too large" in result.stderr
    assert "line 4: bad token" in result.stderr
    assert "line 11: index 0 or negative" in result.stderr
    assert "line 21: not a finite value" in result.stderr
    assert "line 31: index above max_features" in result.stderr


@pytest.mark.parametrize("command", ["learn", "serve"])
def test_max_features_out_of_the_parsers_range_is_refused(command: str) -> None:
    for value in ("0", str((1 << 31) + 1)):
        result = runner.invoke(app, [command, "--max-features", value], input="+1 1:1\n")
        assert result.exit_code == 1, result.output
        assert "--max-features must be in [1, 2**31]" in result.stderr


def test_strict_stops_at_the_first_bad_line(train_file: Path, tmp_path: Path) -> None:
    text = train_file.read_text().replace("+1", "+1 x:y", 1)
    model = tmp_path / "m.ckpt"
    result = runner.invoke(app, ["learn", "--strict", "--model", str(model)], input=text)
    assert result.exit_code == 2
    assert "line" in result.stderr and "bad token" in result.stderr
    assert not model.exists()


def test_empty_input_is_a_clear_error() -> None:
    result = runner.invoke(app, ["learn", "--quiet"], input="")
    assert result.exit_code == 1
    assert "empty" in result.stderr
    only_bad = runner.invoke(app, ["learn", "--quiet"], input="garbage\nmore garbage\n")
    assert only_bad.exit_code == 1
    assert "no valid example in 2 lines" in only_bad.stderr


def test_a_flag_of_another_algorithm_is_refused(train_file: Path) -> None:
    result = runner.invoke(app, ["learn", str(train_file), "--algo", "pdm", "--tau", "1"])
    assert result.exit_code == 1
    assert "--tau is not a parameter of pdm" in result.stderr
    unknown = runner.invoke(app, ["learn", str(train_file), "--algo", "svm"])
    assert unknown.exit_code == 2  # click's usage error, naming the choices
    assert "'svm' is not one of" in squashed(unknown.stderr) and "'pdm'" in unknown.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [("--source", "files"), ("--idle-replay", "maybe"), ("--format", "xml"),
     ("--checkpoint-interval", "5x")],
)  # fmt: skip
def test_serve_choices_and_durations_are_usage_errors(option: str, value: str) -> None:
    """They took free strings, refused later with exit 1 and not listed in --help."""
    result = runner.invoke(app, ["serve", option, value], input="")
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in squashed(result.stderr)


def test_environment_and_config_file_with_flags_winning(train_file: Path, tmp_path: Path) -> None:
    config = tmp_path / "streamlearn.toml"
    config.write_text('algo = "pam"\n[learn]\ntau = 0.5\n')
    model = tmp_path / "m.ckpt"
    base = [
        "--config",
        str(config),
        "learn",
        "--quiet",
        "--json",
        str(train_file),
        "--model",
        str(model),
    ]

    assert runner.invoke(app, base).exit_code == 0
    learner, _ = load_model(str(model))
    assert learner.algorithm == "pam" and learner.tau == 0.5

    assert runner.invoke(app, base, env={"STREAMLEARN_TAU": "2.5"}).exit_code == 0
    assert load_model(str(model))[0].tau == 2.5  # the environment beats the file

    flagged = runner.invoke(app, [*base, "--tau", "4"], env={"STREAMLEARN_TAU": "2.5"})
    assert flagged.exit_code == 0
    assert load_model(str(model))[0].tau == 4.0  # the flag beats both


def test_epochs_make_plain_passes(train_file: Path) -> None:
    one = learn_json(str(train_file), "--epochs", "1", "--delta", "1")
    three = learn_json(str(train_file), "--epochs", "3", "--delta", "1")
    assert one["passes"] == 0 and three["passes"] == 2
    assert three["updates"] >= one["updates"]
    stdin_three = learn_json("--epochs", "3", "--delta", "1", input_text=train_file.read_text())
    assert stdin_three == {**three, "seconds": stdin_three["seconds"]}


def test_serve_refuses_a_bad_consumer_option_before_starting() -> None:
    result = runner.invoke(
        app,
        ["serve", "--source", "kafka", "--bootstrap-servers", "127.0.0.1:1", "--topic", "t",
         "--consumer-option", "sasl.plain.password=secret"],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "comes from the environment" in result.stderr


@pytest.mark.parametrize(
    "options",
    [
        ["--source", "kafka", "--topic", "bad topic!"],
        ["--source", "kafka", "--topic", "t", "--predictions-topic", "bad topic!"],
        ["--source", "kafka", "--topic", "t", "--dead-letter-topic", "x" * 250],
        ["--predictions-topic", ".."],  # predictions of standard input to Kafka
    ],
)
def test_serve_refuses_a_bad_topic_name_before_starting(options: list[str]) -> None:
    """An illegal name used to be found at its first use (the first prediction or dead
    letter), in a traceback, and again at every start."""
    result = runner.invoke(app, ["serve", "--bootstrap-servers", "127.0.0.1:1", *options])
    assert result.exit_code == 1, result.output
    option = next(o for o in reversed(options) if o.startswith("--") and o != "--source")
    assert result.stderr.startswith(f"error: {option}: "), result.stderr
    assert "Traceback" not in result.output


def test_serve_refuses_a_kafka_topic_without_brokers() -> None:
    result = runner.invoke(app, ["serve", "--predictions-topic", "p"])
    assert result.exit_code == 1
    assert result.stderr == "error: --predictions-topic needs --bootstrap-servers\n"


@contextmanager
def compiling(on_first: Callable[[], None]) -> Iterator[CompileLog]:
    """A stand-in for the compilation watch that sees three kernels compile."""
    on_first()
    yield CompileLog(kernels=3, seconds=2.5)


def test_a_first_run_says_it_compiles_on_standard_error_only(
    train_file: Path, test_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "m.ckpt"
    learn_json(str(train_file), "--model", str(model))
    monkeypatch.setattr(_jit, "watch_compilation", compiling)
    scores = runner.invoke(app, ["predict", "--model", str(model), str(test_file)])
    assert scores.exit_code == 0, scores.output
    assert len(scores.stdout.split()) == 150  # the scores alone
    assert scores.stderr.splitlines() == [COMPILING, "compiled 3 kernels in 2.5 s"]
    learned = runner.invoke(app, ["learn", str(train_file)])
    assert learned.stderr.splitlines()[0] == COMPILING
    saved = str(train_file.with_suffix(".ckpt"))
    quiet = runner.invoke(app, ["learn", "--quiet", str(train_file), "--model", saved])
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_the_daemon_logs_a_first_run_as_the_command_line_says_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_jit, "watch_compilation", compiling)
    with caplog.at_level("INFO", logger=serve.log.name):
        serve._warmed_source(serve.ServeConfig(LearnerSpec("pdm", {"eps": 0.1})))
    messages = [r.getMessage() for r in caplog.records if r.name == serve.log.name]
    assert messages == [COMPILING, "compiled 3 kernels in 2.5 s"]


def test_predict_and_eval_give_nan_for_an_index_beyond_the_learners(
    train_file: Path, tmp_path: Path
) -> None:
    """2^31 (1-based) fits int32 but not the learners' indices: a bad line like any other,
    not the end of the run."""
    model = tmp_path / "m.ckpt"
    learn_json(str(train_file), "--model", str(model))
    text = "+1 1:1\n-1 2147483648:1\n-1 2:1\n"
    scores = runner.invoke(app, ["predict", "--model", str(model)], input=text)
    assert scores.exit_code == 0, scores.output
    values = scores.stdout.split()
    assert len(values) == 3 and values[1] == "nan" and values[0] != "nan" != values[2]
    report = runner.invoke(app, ["eval", "--model", str(model), "--json"], input=text)
    assert report.exit_code == 0, report.output
    assert json.loads(report.stdout)["examples"] == 2


def test_no_converge_learns_examples_held_for_the_auto_delta_window(tmp_path: Path) -> None:
    """Fewer than 1000 examples with delta='auto': the window never fills, and the end of
    the stream must fix Delta from those that came rather than learn nothing."""
    lines = "\n".join(svmlight_lines(300, seed=3)) + "\n"
    model = tmp_path / "m.ckpt"
    figures = learn_json("--no-converge", "--model", str(model), input_text=lines)
    assert figures["examples"] == 300 and figures["updates"] > 0
    assert figures["pending_examples"] == 0


def test_json_output_is_json_even_with_undefined_figures(tmp_path: Path) -> None:
    """With one class, AUC is undefined: null, not NaN (which JSON readers refuse)."""
    model = tmp_path / "m.ckpt"
    lines = "\n".join(svmlight_lines(300, seed=4)) + "\n"
    learn_json("--model", str(model), "--delta", "1", input_text=lines)
    negatives = "-1 1:1 2:0.5\n-1 3:1\n"
    report = runner.invoke(app, ["eval", "--model", str(model), "--json"], input=negatives)
    assert report.exit_code == 0, report.output
    assert "NaN" not in report.stdout
    assert json.loads(report.stdout)["auc"] is None


def test_exported_weights_go_to_the_path_given(train_file: Path, tmp_path: Path) -> None:
    model, weights = tmp_path / "m.ckpt", tmp_path / "weights"
    learn_json(str(train_file), "--model", str(model))
    shown = runner.invoke(app, ["inspect", str(model), "--export-weights", str(weights)])
    assert shown.exit_code == 0, shown.output
    assert weights.exists() and not (tmp_path / "weights.npy").exists()
    assert np.load(weights).shape == load_model(str(model))[0].coef_.shape


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x = [\n", "cannot read"),
        ("learn = 5\n", "learn must be a table"),
        (b"\xff\xfe = 1\n", "cannot read"),
    ],
)
def test_a_bad_config_file_is_a_usage_error(
    tmp_path: Path, text: str | bytes, message: str
) -> None:
    config = tmp_path / "streamlearn.toml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)
    result = runner.invoke(app, ["--config", str(config), "learn", "--quiet"], input="1 1:1\n")
    assert result.exit_code == 2, result.output
    assert message in result.output
    directory = runner.invoke(app, ["--config", str(tmp_path), "learn"], input="1 1:1\n")
    assert directory.exit_code == 2 and "cannot read" in directory.output


def test_config_works_after_the_command_too(train_file: Path, tmp_path: Path) -> None:
    """``streamlearn learn --config f.toml`` ignored the file (only ``streamlearn
    --config f.toml learn`` read it)."""
    config = tmp_path / "streamlearn.toml"
    config.write_text('algo = "pam"\n[learn]\ntau = 0.5\nbuffer_size = 7\n')
    after = runner.invoke(app, ["learn", "--config", str(config), "--quiet", "--json",
                                str(train_file)])  # fmt: skip
    before = runner.invoke(app, ["--config", str(config), "learn", "--quiet", "--json",
                                 str(train_file)])  # fmt: skip
    assert after.exit_code == before.exit_code == 0, after.output
    assert json.loads(after.stdout)["algorithm"] == "pam" == json.loads(before.stdout)["algorithm"]
    assert json.loads(after.stdout)["buffer_capacity"] == 7
    flag_wins = runner.invoke(app, ["learn", "--config", str(config), "--quiet", "--json",
                                    "--buffer-size", "9", str(train_file)])  # fmt: skip
    assert json.loads(flag_wins.stdout)["buffer_capacity"] == 9


def test_serve_reads_its_table_of_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "streamlearn.toml"
    config.write_text('[serve]\nidle_replay = "bogus"\n')
    result = runner.invoke(app, ["--config", str(config), "serve"], input="")
    assert result.exit_code == 2
    assert "'bogus' is not one of 'on', 'off'" in squashed(result.output)


def test_a_named_pipe_is_an_input_and_is_cached_for_later_epochs(
    train_file: Path, tmp_path: Path
) -> None:
    """A FIFO (as ``<(...)`` gives) cannot be read twice: read once, cached; with a buffer
    smaller than the input, later epochs read the cache, as they read the file again."""
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    args = ["--epochs", "3", "--delta", "1", "--buffer-size", "50"]
    writer = threading.Thread(target=fifo.write_bytes, args=(train_file.read_bytes(),))
    writer.start()
    piped = learn_json(str(fifo), *args)
    writer.join()
    from_file = learn_json(str(train_file), *args)
    assert piped == {**from_file, "seconds": piped["seconds"]}
    assert from_file["examples"] == 3 * 400 and from_file["buffer_evicted"] > 0


@pytest.mark.parametrize("model", ["", ".", "{tmp}", "{tmp}/missing/m.ckpt", "{tmp}/m/"])
def test_a_model_path_that_cannot_be_written_is_refused_before_learning(
    train_file: Path, tmp_path: Path, model: str
) -> None:
    result = runner.invoke(
        app, ["learn", "--quiet", str(train_file), "--model", model.format(tmp=tmp_path)]
    )
    assert result.exit_code == 1
    assert "cannot write checkpoint" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_directory_as_input_is_named_as_such(tmp_path: Path) -> None:
    result = runner.invoke(app, ["learn", "--quiet", str(tmp_path)])
    assert result.exit_code == 1 and "is a directory" in result.stderr


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: {**p, "learner": 5},
        lambda p: {**p, "job": 5},
        lambda p: {**p, "job": {"stream_examples": "many"}},
        lambda p: {**p, "learner": {**p["learner"], "passes": "two"}},
        lambda p: {**p, "learner": {**p["learner"], "delta_value": "x"}},
        lambda p: {**p, "learner": {**p["learner"], "weights": np.zeros((2, 3))}},
    ],
)
def test_a_checkpoint_whose_payload_is_malformed_is_refused_clearly(
    train_file: Path, tmp_path: Path, damage: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    """A valid envelope and CRC around a state that does not hold together (written by
    hand, or by something else): each command says so, without a traceback."""
    model = tmp_path / "m.ckpt"
    learn_json(str(train_file), "--model", str(model))
    write_checkpoint(model, damage(read_checkpoint(model).payload))
    for command in (["inspect", str(model)], ["predict", "--model", str(model), str(train_file)],
                    ["learn", "--quiet", "--resume", str(model), str(train_file)]):  # fmt: skip
        result = runner.invoke(app, command)
        assert result.exit_code == 1, (command, result.output)
        assert result.stderr.startswith("error:") and "Traceback" not in result.output


def test_running_out_of_memory_is_a_message_not_a_traceback(
    train_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def exhausted(*args: Any, **kwargs: Any) -> None:
        raise MemoryError("Unable to allocate 16.0 GiB")

    monkeypatch.setattr(cli_module, "run_learn", exhausted)
    result = runner.invoke(app, ["learn", "--quiet", str(train_file)])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: out of memory (Unable to allocate 16.0 GiB)")


def test_a_learner_parameter_without_default_must_be_given(train_file: Path) -> None:
    result = runner.invoke(app, ["learn", "--quiet", str(train_file), "--algo", "pfm"])
    assert result.exit_code == 1
    assert "pfm needs --beta" in result.stderr and "Traceback" not in result.output


def test_learn_warns_when_the_input_outgrows_the_buffer(train_file: Path) -> None:
    result = runner.invoke(app, ["learn", "--quiet", "--buffer-size", "5", str(train_file)])
    assert result.exit_code == 0, result.output
    assert "warning: the input outgrew the replay buffer" in result.stderr
    assert "the model and its certificate are about the last 5 examples" in result.stderr
    # replayed after 3 examples, not once evicting: those 3 stay in the weights
    unreplayed = runner.invoke(app, ["learn", "--quiet", "--buffer-size", "5", "--no-converge",
                                     "--replay-every", "3", str(train_file)])  # fmt: skip
    assert (
        "the certificate is about the last 5 examples; the weights still hold 3 evicted ones "
        "the last replay saw"
    ) in unreplayed.stderr
    saved = str(train_file.with_suffix(".ckpt"))
    quiet = runner.invoke(app, ["learn", "--quiet", str(train_file), "--model", saved])
    assert "warning" not in quiet.stderr


def test_learn_replays_on_schedule_only_until_the_buffer_evicts(tmp_path: Path) -> None:
    """Replays of windows that later examples push out are skipped: the schedule's
    replays before the first eviction and the final one run, no more; the library's
    schedule (``after_eviction=True``) replays all along."""
    from streamlearn.learn import PDM
    from streamlearn.learn.inputs import as_batch
    from streamlearn.replay import ReplaySchedule

    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 4))
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 2.0]) > 0, 1, -1)
    path = tmp_path / "long.svm"
    path.write_text("".join(
        f"{label:+d} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n"
        for row, label in zip(X, y, strict=True)
    ))  # fmt: skip
    options = ["--buffer-size", "200", "--replay-every", "50", "--eps", "0.1", "--delta", "1"]
    result = runner.invoke(app, ["learn", str(path), "--quiet", "--json", *options])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    # 4 replays at 50, 100, 150 and 200 examples (nothing evicted yet), then the final one
    assert summary["passes"] > 4 and summary["certified_gap"] <= 0.1
    library = PDM(eps=0.1, delta=1.0, buffer_size=200)
    library.learn_on_schedule(as_batch(X, y), ReplaySchedule(every=50), 0)
    # after every 50 examples, evicting or not (a replay that takes evicted examples out
    # may take more than its pass to converge)
    assert library.summary()["passes"] >= 12
    skipping = PDM(eps=0.1, delta=1.0, buffer_size=200)
    skipping.learn_on_schedule(as_batch(X, y), ReplaySchedule(every=50, after_eviction=False), 0)
    assert skipping.summary()["passes"] == 4


def test_the_exported_window_confirms_the_certificate(train_file: Path, tmp_path: Path) -> None:
    """inspect --export-buffer writes the window; an independent solver (LIBLINEAR) on it
    finds a maximum margin within the certificate: at most the bound, and the model's
    margin at least (1 - gap) of it."""
    import sys

    from sklearn.datasets import load_svmlight_file

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "learn"))
    from solvers import liblinear_reference

    model, window = tmp_path / "m.ckpt", tmp_path / "window.svm"
    learned = learn_json(
        str(train_file), "--buffer-size", "150", "--delta", "0.5", "--eps", "0.02",
        "--model", str(model),
    )  # fmt: skip
    assert learned["buffer_evicted"] == 250 and learned["certified_gap"] <= 0.02
    shown = runner.invoke(app, ["inspect", "--json", "--export-buffer", str(window), str(model)])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["exported_buffer_examples"] == 150
    X, y = load_svmlight_file(str(window), n_features=12)
    assert X.shape[0] == 150
    original = [line for line in train_file.read_text().splitlines()][-150:]
    assert y.tolist() == [float(line.split()[0]) for line in original]
    reference = liblinear_reference(X, y, rho=1.0, delta=0.5)
    assert reference.margin <= learned["margin_upper_bound"] * (1 + 1e-9)
    assert learned["margin_achieved"] >= (1 - learned["certified_gap"]) * reference.margin


def test_learn_prints_counts_as_integers_and_says_when_it_saves_nothing(
    train_file: Path,
) -> None:
    """``updates 6.53601e+07`` and ``model None`` (the model silently discarded) were
    printed; a certified gap of -2.2e-16 too, rounding of a margin that meets its bound."""
    result = runner.invoke(app, ["learn", "--quiet", str(train_file)])
    assert result.exit_code == 0, result.output
    assert "warning: no --model: the model was not saved" in result.stderr
    shown = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert shown["model"] == "(not saved)"
    assert shown["updates"].isdigit() and shown["examples"].isdigit()
    touching = "+1 1:1\n-1 1:1 2:-1\n"  # the margin meets its bound: -2.2e-16 was shown
    result = runner.invoke(app, ["learn", "--quiet", "--delta", "0", "--json"], input=touching)
    assert json.loads(result.stdout)["certified_gap"] == 0.0
