"""What a daemon of keyed models reports: its summary, and what ``GET /model`` says.

The counts run over every key (the monotone ones over the run); the ``keyed`` figures
say how many models are in memory and on the state topic, how they moved, and what was
written and read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamlearn.learn.params import plain_params

if TYPE_CHECKING:
    from streamlearn.keyed.models import KeyedModels


def summary(models: KeyedModels) -> dict[str, Any]:
    """Counts over the keys of ``models`` and the ``keyed`` figures: models in memory
    and on the state topic, their moves, the records written."""
    residents = [resident for _, resident in models.resident.items()]
    store = models.store
    return {
        "algorithm": models.empty.algorithm,
        "update_events": models.update_events,
        "passes": models.passes,
        "converged": all(r.model.converged for r in residents),
        "buffer_examples": sum(len(r.model.buffer) for r in residents),
        "buffer_nnz": sum(
            learner.state.buffer.nnz for r in residents for learner in r.model.learners()
        ),
        "pending_examples": 0,
        "keyed": {
            "resident": len(residents),
            "resident_bytes": models.resident.bytes,
            "max_models": models.resident.max_models,
            "max_bytes": models.resident.max_bytes,
            "stored": store.known(),
            "created": models.created,
            "restored": models.restored,
            "spilled": models.spilled,
            "refused": models.refused,
            "expired": models.expired,
            "skipped_examples": models.skipped,
            "records_written": store.records_written,
            "bytes_written": store.bytes_written,
            "bytes_read": store.bytes_read,
            "unwritten": models.unwritten,
        },
    }


def description(models: KeyedModels, snapshot: dict[str, Any]) -> dict[str, Any]:
    """What ``GET /model`` says without a key: the algorithm, parameters, counts and
    the ``keyed`` figures of a :func:`summary` ``snapshot``."""
    empty = models.empty
    return {
        "algorithm": empty.algorithm,
        "kind": "keyed",
        "params": plain_params(empty.get_params()),
        "examples": snapshot.get("stream_examples", 0),
        "update_events": snapshot["update_events"],
        "passes": snapshot["passes"],
        "window_examples": snapshot["buffer_examples"],
        "converged": snapshot["converged"],
        "keyed": snapshot["keyed"],
    }
