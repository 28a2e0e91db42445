"""The installed command as real processes connected by pipes."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from streamlearn._kernels import uses_aot
from streamlearn.config import DEFAULT_MAX_FEATURES, DEFAULT_MAX_LABELS, DEFAULT_MAX_WEIGHTS
from streamlearn.jobs.learn import load_model
from streamlearn.learn import ModelBank

STREAMLEARN = [sys.executable, "-m", "streamlearn"]


def test_cat_into_learn_then_predict_through_pipes(
    train_file: Path, test_file: Path, tmp_path: Path
) -> None:
    model = tmp_path / "m.ckpt"
    cat = subprocess.Popen(["cat", str(train_file)], stdout=subprocess.PIPE)
    learned = subprocess.run(
        [*STREAMLEARN, "learn", "--json", "--model", str(model), "--delta", "1"],
        stdin=cat.stdout,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cat.wait() == 0
    assert learned.returncode == 0, learned.stderr
    assert json.loads(learned.stdout)["examples"] == 400

    with test_file.open("rb") as data:
        scores = subprocess.run(
            [*STREAMLEARN, "predict", "--model", str(model)],
            stdin=data,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert scores.returncode == 0, scores.stderr
    assert np.isfinite([float(v) for v in scores.stdout.split()]).all()
    assert len(scores.stdout.split()) == 150


def test_strict_exit_code_in_a_pipeline(tmp_path: Path) -> None:
    done = subprocess.run(
        [*STREAMLEARN, "learn", "--strict", "--quiet"],
        input="+1 1:1\n-1 2:oops\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "line 2: bad token" in done.stderr


def serve_on_stdin(lines: list[str], *options: str) -> subprocess.CompletedProcess[str]:
    """``streamlearn serve`` (PDM, eps 0.1) on ``lines`` as its standard input, to the end."""
    return subprocess.run(
        [*STREAMLEARN, "serve", "--algo", "pdm", "--eps", "0.1", "--metrics-addr", "127.0.0.1:0",
         *options],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def test_serve_refuses_an_index_its_dense_weights_could_not_hold() -> None:
    """One line with a huge index would otherwise make the weights gigabytes."""
    lines = [f"+1 1:1 {2_000_000_000}:1"] + ["+1 1:1 2:0.5", "-1 2:1 3:0.3"] * 50
    served = serve_on_stdin(lines)
    assert served.returncode == 0, served.stderr
    assert "rejected line 1 (index above max_features)" in served.stderr
    assert served.stdout == ""  # every other line is labelled: learned, not predicted
    # the largest child so far, this daemon included: far below the 16 GB of 2e9 weights
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 4 << 20  # KiB
    assert DEFAULT_MAX_FEATURES < 2_000_000_000


def test_serve_one_vs_rest_refuses_a_line_with_more_labels_than_its_bound(
    tmp_path: Path,
) -> None:
    """One line listing thousands of labels would otherwise start a learner for each."""
    many = ",".join(str(k) for k in range(1, DEFAULT_MAX_LABELS + 2))
    lines = [f"{many} 1:1"] + ["1 1:1 2:0.5", "2 2:1 3:0.3"] * 50
    served = serve_on_stdin(lines, "--one-vs-rest", "--checkpoint-dir", str(tmp_path))
    assert served.returncode == 0, served.stderr
    assert "rejected line 1 (too many labels)" in served.stderr
    bank, job = load_model(str(max(tmp_path.iterdir())))  # the checkpoint written at the end
    assert isinstance(bank, ModelBank) and sorted(bank.labels_to_learn().tolist()) == [1.0, 2.0]
    assert job["stream_examples"] == 100


def test_serve_one_vs_rest_bounds_labels_times_features(tmp_path: Path) -> None:
    """Lines that each bring a new label and a large index would otherwise grow a dense
    labels x features matrix by half a gigabyte a line (8 of them: over 7 GB)."""
    far = 60_000_000  # within --max-features, but 3 labels x 60e6 is over --max-weights
    lines = ["1 1:1", "2 2:1", "3 3:1"] + [f"{k} {far}:1" for k in range(4, 12)]
    lines += [f"1 {far}:1"] + ["1 1:1 2:0.5", "2 2:1 3:0.3"] * 50
    served = serve_on_stdin(lines, "--one-vs-rest", "--checkpoint-dir", str(tmp_path))
    assert served.returncode == 0, served.stderr
    assert "rejected line 4 (too many weights)" in served.stderr
    bank, job = load_model(str(max(tmp_path.iterdir())))
    assert isinstance(bank, ModelBank) and bank.labels_to_learn().tolist() == [1.0, 2.0, 3.0]
    assert bank.n_features_in_ == 3 and job["stream_examples"] == 103
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 4 << 20  # KiB
    assert 3 * far > DEFAULT_MAX_WEIGHTS and far < DEFAULT_MAX_FEATURES


def test_serve_resumed_keeps_accepting_the_features_its_model_has(tmp_path: Path) -> None:
    """A bound below the restored model's size is raised to it: the model's own features
    are never refused; larger indices still are."""
    before = ["+1 1:1 40:1", "-1 2:1 3:1"] * 20
    first = serve_on_stdin(before, "--max-features", "40", "--checkpoint-dir", str(tmp_path))
    assert first.returncode == 0, first.stderr
    # standard input resumes by skipping the lines the checkpoint has seen
    again = serve_on_stdin(
        [*before, "+1 1:1 30:1", "-1 2:1 41:1", "-1 2:1 3:1"],
        "--max-features", "10", "--checkpoint-dir", str(tmp_path),
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "the restored model has 40 features: --max-features raised" in again.stderr
    assert "rejected line 42 (index above max_features)" in again.stderr  # 40 skipped + 2
    assert again.stderr.count("rejected line") == 1
    model, job = load_model(str(max(tmp_path.iterdir())))
    assert job["stream_examples"] == 42 and model.n_features_in_ == 40


def test_serve_says_when_the_checkpoint_overrides_the_learner_options(tmp_path: Path) -> None:
    """A restored model goes on with its own algorithm and parameters: the daemon says so
    rather than log the options it was given as if they were used."""
    lines = ["+1 1:1 2:1", "-1 2:1 3:1"] * 20
    first = serve_on_stdin(lines, "--checkpoint-dir", str(tmp_path))  # pdm, eps 0.1
    assert first.returncode == 0, first.stderr
    again = [*lines, "+1 1:1"]
    other_algo = serve_on_stdin(again, "--algo", "pdm-succ", "--checkpoint-dir", str(tmp_path))
    assert other_algo.returncode == 0, other_algo.stderr
    assert "the checkpoint holds a pdm model: it goes on as pdm, not as pdm-succ" in (
        other_algo.stderr
    )
    other_eps = serve_on_stdin(again, "--eps", "0.05", "--checkpoint-dir", str(tmp_path))
    assert "goes on with its own parameters: eps=0.1 (asked 0.05)" in other_eps.stderr
    same = serve_on_stdin(again, "--checkpoint-dir", str(tmp_path))
    assert same.returncode == 0 and "goes on as" not in same.stderr
    assert "goes on with its own" not in same.stderr


def test_serve_signalled_while_starting_checkpoints_and_exits_cleanly(tmp_path: Path) -> None:
    """SIGHUP and SIGTERM during the start (a first run compiles for seconds there; a
    ``systemctl reload`` sends SIGHUP) are held until the daemon runs, not fatal."""
    directory = tmp_path / "checkpoints"
    daemon = subprocess.Popen(
        [*STREAMLEARN, "serve", "--algo", "pdm", "--metrics-addr", "127.0.0.1:0",
         "--checkpoint-dir", str(directory)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert daemon.stderr is not None and daemon.stdin is not None
    first = daemon.stderr.readline()
    assert "starting: pdm from stdin" in first, first
    daemon.send_signal(signal.SIGHUP)
    daemon.send_signal(signal.SIGTERM)
    daemon.stdin.write("+1 1:1\n")  # stdin stays open: only the signal can stop it
    daemon.stdin.flush()
    try:
        returncode = daemon.wait(timeout=300)
    finally:
        daemon.kill()
    assert returncode == 0, daemon.stderr.read()
    assert list(directory.glob("checkpoint-*.ckpt"))


def test_serve_tells_systemd_when_a_signal_can_no_longer_kill_it(tmp_path: Path) -> None:
    """Under systemd (``Type=notify``) a ``systemctl reload`` waits for READY=1; a
    SIGHUP that came earlier, while the process was still importing its modules, killed
    it (``Type=exec`` let systemd send it at once). Once READY=1 is out, it is held."""
    notify_path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(notify_path))
        listener.settimeout(60)  # sent before the kernels are loaded: imports only
        daemon = subprocess.Popen(
            [*STREAMLEARN, "serve", "--algo", "pdm", "--metrics-addr", "127.0.0.1:0",
             "--checkpoint-dir", str(tmp_path / "checkpoints")],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, "NOTIFY_SOCKET": str(notify_path)},
        )  # fmt: skip
        try:
            assert listener.recv(100) == b"READY=1"
            daemon.send_signal(signal.SIGHUP)  # the reload systemd held until now
            _, stderr = daemon.communicate(b"+1 1:1\n", timeout=300)
        finally:
            daemon.kill()
    assert daemon.returncode == 0, stderr.decode()


def test_serve_refuses_bad_metrics_addresses_and_checkpoint_pacing() -> None:
    for options, message in (
        (("--metrics-addr", "127.0.0.1:99999"), "port in [0, 65535]"),
        (("--checkpoint-every", "0"), "--checkpoint-every must be an integer >= 1"),
        (("--checkpoint-interval", "-1s"), "--checkpoint-interval must be > 0 seconds"),
        (("--checkpoint-dir", "/proc/none"), "cannot use checkpoint directory /proc/none"),
        (("--format", "msgpack"), "--format msgpack needs --source kafka"),
    ):
        served = serve_on_stdin(["+1 1:1"], *options)
        assert served.returncode == 1, served.stderr
        assert message in served.stderr and "Traceback" not in served.stderr


def test_serve_says_when_its_metrics_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        served = subprocess.run(
            [*STREAMLEARN, "serve", "--algo", "pdm", "--metrics-addr", f"127.0.0.1:{port}"],
            input="+1 1:1\n", capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert served.returncode == 1
    assert f"error: cannot serve metrics on 127.0.0.1:{port}" in served.stderr
    assert "Traceback" not in served.stderr


def test_serve_goes_on_learning_when_the_predictions_reader_goes_away(tmp_path: Path) -> None:
    """``serve | head -1``: the predictions' pipe closes early. The daemon drops the
    predictions from then on (and says so), learns the rest and checkpoints it."""
    labelled = ["+1 1:1 2:0.5", "-1 2:1 3:0.3"] * 1000
    requests = ["1:1 2:0.5"] * 6000
    directory = tmp_path / "checkpoints"
    daemon = subprocess.Popen(
        [*STREAMLEARN, "serve", "--algo", "pdm", "--eps", "0.1", "--metrics-addr",
         "127.0.0.1:0", "--checkpoint-dir", str(directory), "--idle-replay", "off"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert daemon.stdin is not None and daemon.stdout is not None and daemon.stderr is not None
    stdin = daemon.stdin

    def feed() -> None:
        stdin.write("\n".join(requests + labelled) + "\n")
        stdin.close()

    feeder = threading.Thread(target=feed)
    feeder.start()
    first = daemon.stdout.readline()
    daemon.stdout.close()  # the reader goes away after one prediction
    feeder.join(timeout=300)
    log = daemon.stderr.read()
    assert daemon.wait(timeout=300) == 0, log
    assert first.strip(), "no prediction came"
    assert "predictions are dropped from now on; learning goes on" in log
    (checkpoint,) = directory.glob("checkpoint-*.ckpt")
    _, job = load_model(str(checkpoint))
    assert job["stream_examples"] == 2000


def test_a_second_daemon_on_the_same_checkpoint_directory_refuses_to_start(
    tmp_path: Path,
) -> None:
    """Two daemons on one --checkpoint-dir restored each other's checkpoints and pruned
    each other's files; the second now refuses, naming the first's pid, and writes nothing."""
    directory = tmp_path / "checkpoints"
    first = subprocess.Popen(
        [*STREAMLEARN, "serve", "--algo", "pdm", "--metrics-addr", "127.0.0.1:0",
         "--checkpoint-dir", str(directory)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert first.stderr is not None and first.stdin is not None
        while "metrics on" not in (line := first.stderr.readline()):  # the lock is taken
            assert line, "the first daemon ended"
        second = serve_on_stdin(["+1 1:1"] * 10, "--checkpoint-dir", str(directory))
        assert second.returncode == 1, second.stderr
        assert f"is in use by process {first.pid}" in second.stderr
        assert list(directory.glob("checkpoint-*.ckpt")) == []
        first.stdin.write("+1 1:1\n-1 2:1\n")
        first.stdin.close()
        assert first.wait(timeout=120) == 0
        assert len(list(directory.glob("checkpoint-*.ckpt"))) == 1
    finally:
        first.kill()
        first.wait()


def test_serve_logs_each_checkpoint_and_ends_with_a_summary(tmp_path: Path) -> None:
    """Nothing said a checkpoint was written, nor that standard input had ended."""
    lines = ["+1 1:1 2:0.5", "-1 2:1 3:0.3"] * 50
    served = serve_on_stdin(lines, "--checkpoint-dir", str(tmp_path), "--delta", "1")
    assert served.returncode == 0, served.stderr
    (checkpoint,) = tmp_path.glob("checkpoint-*.ckpt")
    assert f"checkpoint {checkpoint}: 100 examples, " in served.stderr
    assert "end of input: 100 examples learned in " in served.stderr
    assert "certified gap" in served.stderr.splitlines()[-1]


def peak_kib(command: list[str], stdin: str = "") -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``command`` under a Python parent of its own; its result and its peak RSS (KiB),
    that of this one child alone (RUSAGE_CHILDREN here sums up every test's children)."""
    wrapper = ("import resource, subprocess, sys; "
               "done = subprocess.run(sys.argv[1:], input=sys.stdin.read(), text=True); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
               "sys.exit(done.returncode)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", wrapper, *command], input=stdin,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    return done, int(done.stdout.split()[-1])


def test_one_example_with_a_large_index_costs_memory_and_disk_of_its_size(tmp_path: Path) -> None:
    """``+1 67108864:1`` took learn to 2.3 GB of memory and made a 512 MB model file (a
    daemon wrote that much at every checkpoint): dense weights, copied and stored whole."""
    model = tmp_path / "m.ckpt"
    line = "+1 67108864:1\n"
    done, peak = peak_kib([*STREAMLEARN, "learn", "--quiet", "--model", str(model)], line)
    assert done.returncode == 0, done.stderr
    assert peak < 512 * 1024  # KiB: well under the weights' 512 MB, let alone 1 GB
    assert model.stat().st_size < 64 * 1024
    done, peak = peak_kib([*STREAMLEARN, "predict", "--model", str(model)], "67108864:2\n3:1\n")
    assert done.returncode == 0 and done.stdout.split()[:2] == ["3.0", "1.0"], done.stderr
    assert peak < 512 * 1024
    served = serve_on_stdin([line.strip()] * 3, "--checkpoint-dir", str(tmp_path / "ckpt"))
    assert served.returncode == 0, served.stderr
    (checkpoint,) = (tmp_path / "ckpt").glob("checkpoint-*.ckpt")
    assert checkpoint.stat().st_size < 64 * 1024


def test_warmup_leaves_nothing_for_a_second_run_to_compile() -> None:
    """On numba's JIT (no kernels compiled at install), after ``streamlearn warmup`` a
    first run compiled for 22 s: the second warm-up finds every kernel in the cache.
    With the kernels compiled ahead of time it says there is nothing to compile."""
    jit = {**os.environ, "STREAMLEARN_JIT": "1"}
    run = [*STREAMLEARN, "warmup"]
    first = subprocess.run(run, capture_output=True, text=True, timeout=600, env=jit)
    assert first.returncode == 0, first.stderr
    again = subprocess.run(run, capture_output=True, text=True, timeout=300, env=jit)
    assert again.returncode == 0 and again.stderr == "every kernel was in the cache\n"
    if uses_aot():
        done = subprocess.run(run, capture_output=True, text=True, timeout=300)
        assert (
            done.stderr
            == "the kernels were compiled ahead of time, at install: nothing to compile\n"
        )


LEARN_AND_LIST_MODULES = """
import sys
from streamlearn.cli import main
sys.argv = ["streamlearn", "learn", "--algo", "pdm", "--quiet", "--json"]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print("scipy.linalg" in sys.modules, file=sys.stderr)
import scipy.linalg  # still there for whoever needs it afterwards
print(scipy.linalg.norm([3.0, 4.0]), file=sys.stderr)
"""


def test_learn_does_not_import_scipy_linalg_for_numba() -> None:
    """numba's target set-up imported ``scipy.linalg`` to look for BLAS, which no
    kernel calls: 0.15 to 0.2 s of every command's start."""
    pytest.importorskip("scipy.linalg", reason="without scipy there is nothing to keep out")
    done = subprocess.run(
        [sys.executable, "-c", LEARN_AND_LIST_MODULES],
        input="+1 1:0.5 7:1\n-1 2:1\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.split()[-2:] == ["False", "5.0"]
    assert json.loads(done.stdout)["examples"] == 2


def test_serve_on_stdin_refuses_the_lines_that_overflowed_its_weights(tmp_path: Path) -> None:
    """The three lines of the attack (7, then 1e120, on one feature) ended ``serve`` with
    'weights overflowed during replay', exit 1 and no checkpoint: the third is now
    refused as ``values too large``, the others learned, the checkpoint written."""
    lines = ["-1 2:1 6:7 10:3", "-1 2:1 10:1", "1 2:1 6:2 10:1e120"]
    served = serve_on_stdin(lines, "--delta", "1", "--replay-every", "1",
                            "--checkpoint-dir", str(tmp_path))  # fmt: skip
    assert served.returncode == 0, served.stderr
    assert "values too large" in served.stderr
    assert "Traceback" not in served.stderr
    assert "end of input: 2 examples learned" in served.stderr
