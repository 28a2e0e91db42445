"""How a binary learner's answers are written: daemon predictions, ``predict`` lines and
``eval`` figures (a bank's are in :mod:`streamlearn.learn.bank_answers`).

>>> binary_answers(np.array([0.5, -2.0]))
[b'0.5 1', b'-2.0 -1']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidParameterError
from streamlearn.evaluation import binary_scores
from streamlearn.learn.model import in_line_order
from streamlearn.parse import ParsedRows, Rejected, binary_batch

if TYPE_CHECKING:
    from streamlearn.learn.binary_view import BinaryModelView

#: what ``predict`` writes for a binary model: decision values, or labels +1/-1
BINARY_OUTPUTS = ("scores", "labels")


def binary_answers(scores: npt.NDArray[np.float64]) -> list[bytes]:
    """``"score label"`` per row: the decision value and +1 where it is positive, else -1."""
    return [f"{score!r} {1 if score > 0 else -1}".encode() for score in scores.tolist()]


def binary_lines(rows: ParsedRows, scores: npt.NDArray[np.float64], output: str) -> Iterator[str]:
    """``predict``'s lines: decision values (``scores``; ``nan`` for a rejected line) or
    labels (``labels``: ``1``/``-1``; ``0`` for a rejected line), in line order."""
    if output not in BINARY_OUTPUTS:
        raise InvalidParameterError(
            f"--output must be one of {', '.join(BINARY_OUTPUTS)} for a binary model"
        )
    if output == "labels":
        return in_line_order(rows, ["1" if v > 0 else "-1" for v in scores.tolist()], "0")
    texts = [repr(v) if math.isfinite(v) else "nan" for v in scores.tolist()]
    return in_line_order(rows, texts, "nan")


def evaluate_binary(
    learner: BinaryModelView,
    parts: Iterable[ParsedRows],
    on_rejected: Callable[[list[Rejected]], None],
) -> dict[str, Any]:
    """:func:`~streamlearn.evaluation.binary_scores` of ``learner`` on every row with one
    binary label; the others, and the parser's rejections, go to ``on_rejected``."""
    all_labels: list[npt.NDArray[np.int8]] = []
    all_decisions: list[npt.NDArray[np.float64]] = []
    for rows in parts:
        batch, rejected = binary_batch(rows)
        on_rejected(rejected)
        all_labels.append(batch.labels)
        all_decisions.append(learner.decision_function((batch.indptr, batch.indices, batch.values)))
    labels = np.concatenate(all_labels) if all_labels else np.zeros(0, dtype=np.int8)
    if labels.shape[0] == 0:
        return {"examples": 0}
    return binary_scores(labels, np.concatenate(all_decisions))
