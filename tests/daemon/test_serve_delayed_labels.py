"""Delayed labels over HTTP on a real ``streamlearn serve`` process: a9a.test examples
predicted with ids, the process killed (-9) after a checkpoint and restarted, then their
labels posted by id alone, in shuffled order: each learned exactly once, a second label
refused with its reason, the earlier predictions scored."""

from __future__ import annotations

import http.client
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from services import free_port, wait_for

from streamlearn.parse import SvmlightParser

#: the shared data folder beside the repository (../shared/data)
ADULT = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult"
EXAMPLES = 1000


class Served:
    """``serve --http-learn`` reading a pipe left empty, with checkpoints in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.http_port, self.metrics_port = free_port(), free_port()
        self.log_path = directory / "serve.log"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "streamlearn", "serve", "--algo", "pdm", "--eps", "0.1",
                 "--delta", "1", "--http-learn", "--checkpoint-dir", str(directory / "ckpt"),
                 "--checkpoint-interval", "1h", "--idle-replay", "off",
                 "--http-addr", f"127.0.0.1:{self.http_port}",
                 "--metrics-addr", f"127.0.0.1:{self.metrics_port}"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
            )  # fmt: skip
        wait_for(self.up, timeout=120, what="the HTTP API")

    def request(
        self, method: str, path: str, document: Any = None, port: int | None = None
    ) -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", port or self.http_port, timeout=30)
        body = None if document is None else json.dumps(document).encode()
        connection.request(method, path, body=body,
                           headers={"Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        data = response.read()
        connection.close()
        if response.getheader("Content-Type", "").startswith("application/json"):
            return response.status, json.loads(data)
        return response.status, data

    def up(self) -> bool:
        try:
            return self.request("GET", "/model")[0] == 200
        except OSError:
            assert self.process.poll() is None, self.log_path.read_text(errors="replace")
            return False

    def pending(self) -> dict[str, Any]:
        """What ``/model`` says of the examples kept by id (taken every second)."""
        return dict(self.request("GET", "/model")[1]["pending"])

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        from prometheus_client.parser import text_string_to_metric_families

        connection = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def kill(self) -> None:
        self.process.kill()  # SIGKILL
        self.process.wait(30)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[Served]]:
    """The daemons a test starts; whatever still runs at its end is killed."""
    daemons: list[Served] = []
    yield daemons
    for daemon in daemons:
        if daemon.process.poll() is None:
            daemon.kill()


def test_labels_posted_by_id_after_a_kill_are_each_learned_once(
    tmp_path: Path, started: list[Served]
) -> None:
    if not (ADULT / "a9a.test").exists():
        pytest.skip(f"shared data set missing: {ADULT / 'a9a.test'}")
    lines = (ADULT / "a9a.test").read_bytes().splitlines(keepends=True)[:EXAMPLES]
    rows = SvmlightParser().parse_all(b"".join(lines))
    assert rows.n_rows == EXAMPLES and not rows.rejected
    examples, labels = [], {}
    for i in range(EXAMPLES):
        start, stop = int(rows.indptr[i]), int(rows.indptr[i + 1])
        examples.append({"id": f"a9a-{i}", "indices": rows.indices[start:stop].tolist(),
                         "values": rows.values[start:stop].tolist()})  # fmt: skip
        labels[f"a9a-{i}"] = int(rows.labels[i])

    first = Served(tmp_path)
    started.append(first)
    for start in range(0, EXAMPLES, 100):
        status, answer = first.request(
            "POST", "/predict", {"examples": examples[start : start + 100]}
        )
        assert status == 200, answer
        assert len(answer["predictions"]) == 100
    # an id is for one example: asked again while it waits, the request is refused whole
    status, answer = first.request(
        "POST", "/predict", [examples[5], {"indices": [1], "values": [1]}]
    )
    assert status == 409 and answer["rejected"][0]["reason"] == "id pending", answer
    assert first.request("POST", "/checkpoint", port=first.metrics_port)[0] == 202
    wait_for(lambda: first.metrics().get(("streamlearn_checkpoints_total", ())) == 1.0,
             timeout=60, what="the checkpoint")  # fmt: skip
    first.kill()  # -9: nothing but the checkpoint is left

    again = Served(tmp_path)
    started.append(again)
    assert again.pending()["examples"] == EXAMPLES  # none lost
    ids = list(labels)
    random.Random(39).shuffle(ids)
    for start in range(0, EXAMPLES, 250):
        batch = [{"id": i, "label": labels[i]} for i in ids[start : start + 250]]
        status, answer = again.request("POST", "/learn", {"examples": batch})
        assert (status, answer["learned"]) == (200, 250), answer
    # a second label for an id, and a label for an id never predicted
    status, answer = again.request("POST", "/learn", [{"id": ids[0], "label": 1},
                                                      {"id": "nope", "label": -1}])  # fmt: skip
    assert status == 422 and answer["learned"] == 0, answer
    assert [(r["line"], r["reason"], r["text"]) for r in answer["rejected"]] == [
        (1, "already labelled", ids[0]), (2, "unknown id", "nope"),
    ]  # fmt: skip

    def settled() -> dict[str, Any] | None:
        pending = again.pending()
        return (
            pending
            if pending["joined"] == EXAMPLES and sum(pending["refused"].values()) == 2
            else None
        )

    pending = wait_for(settled, timeout=30, what="the counts of the joins")
    assert pending == {"examples": 0, "joined": EXAMPLES, "expired": 0, "evicted": 0,
                       "refused": {"unknown id": 1, "expired": 0, "evicted": 0,
                                   "already labelled": 1}}  # fmt: skip
    metrics = again.metrics()
    assert metrics[("streamlearn_examples_total", (("outcome", "learned"),))] == EXAMPLES
    assert metrics[("streamlearn_pending_joined_total", ())] == EXAMPLES
    assert metrics[("streamlearn_pending_examples", ())] == 0
    assert (
        metrics[("streamlearn_pending_refused_labels_total", (("reason", "already_labelled"),))]
        == 1
    )
    assert metrics[("streamlearn_pending_refused_labels_total", (("reason", "unknown_id"),))] == 1
    # the predictions scored are those made before any label: by the empty model, which
    # names -1 everywhere (a score of 0), right exactly on the negative examples
    negatives = sum(1 for label in labels.values() if label < 0)
    assert (
        metrics[("streamlearn_progressive_predictions_total", (("result", "correct"),))]
        == negatives
    )
    assert metrics[("streamlearn_progressive_predictions_total", (("result", "mistake"),))] == (
        EXAMPLES - negatives
    )
    assert again.request("GET", "/model")[1]["examples"] == EXAMPLES
