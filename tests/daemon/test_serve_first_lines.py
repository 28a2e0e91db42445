"""``serve`` with its defaults on a short stream: the answers after the first lines come
from a model that learned them (delta 'auto' holds nothing back), and a SIGTERM keeps it."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path

from streamlearn.checkpoint import CheckpointStore


def short_stream(seed: int = 3) -> tuple[list[str], list[int]]:
    """100 labelled lines, a question (the line without its label) after every tenth
    from the fifth on; the questions' labels."""
    rng = random.Random(seed)
    lines, asked = [], []
    for i in range(100):
        x = {j: rng.choice([0, 1]) for j in range(1, 11)}
        score = sum(v if j <= 5 else -v for j, v in x.items())
        label = 1 if score > 0 or (score == 0 and rng.random() < 0.5) else -1
        features = " ".join(f"{j}:1" for j, v in x.items() if v)
        lines.append(f"{label:+d} {features}")
        if i % 10 == 4:
            lines.append(features)
            asked.append(label)
    return lines, asked


def test_answers_after_the_first_lines_come_from_a_trained_model(tmp_path: Path) -> None:
    lines, asked = short_stream()
    directory = tmp_path / "ckpt"
    command = [
        sys.executable, "-m", "streamlearn", "serve", "--metrics-addr", "127.0.0.1:0",
        "--http-addr", "127.0.0.1:0", "--checkpoint-dir", str(directory),
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("\n".join(lines) + "\n")
    process.stdin.flush()  # standard input stays open: the stream has not ended
    answers = [process.stdout.readline().split() for _ in asked]
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    scores = [float(score) for score, _ in answers]
    assert all(score != 0.0 for score in scores), scores  # no zero model
    right = sum((score > 0) == (label > 0) for score, label in zip(scores, asked, strict=True))
    print(f"answers {scores}, {right} of {len(asked)} right")
    assert right >= 8, (scores, asked)
    found = CheckpointStore(directory).latest()
    assert found is not None
    assert found[1].payload["job"]["stream_examples"] == 100
