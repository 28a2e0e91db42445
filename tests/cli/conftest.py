"""Small svmlight inputs for the command-line tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from svm_samples import svmlight_lines


@pytest.fixture
def train_file(tmp_path: Path) -> Path:
    path = tmp_path / "train.svm"
    path.write_text("\n".join(svmlight_lines(400, seed=1)) + "\n")
    return path


@pytest.fixture
def test_file(tmp_path: Path) -> Path:
    path = tmp_path / "test.svm"
    path.write_text("\n".join(svmlight_lines(150, seed=2)) + "\n")
    return path
