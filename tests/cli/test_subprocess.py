"""The installed command as real processes connected by pipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

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
