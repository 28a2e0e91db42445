"""Questions answered in stream order: ``learn_and_answer`` gives each question the
answer of the model that has learned exactly the rows before it, and leaves the model
as learning the rows alone does."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from streamlearn import PAUM, PDM, ModelBank
from streamlearn.learn.inputs import as_batch, as_rows
from streamlearn.learn.labelsets import LabelledRows
from streamlearn.learn.model import Examples, Model
from streamlearn.replay import ReplaySchedule
from streamlearn.types import Batch

NO_REPLAY = ReplaySchedule(every=0)


def rows(n: int, seed: int) -> tuple[Batch, npt.NDArray[np.float64]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)) * (rng.random((n, 6)) < 0.6)
    y = np.where(X @ rng.normal(size=6) + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return as_batch(X, y), X


Rows = tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float64]]


def questions(n: int, seed: int) -> tuple[Rows, npt.NDArray[np.float64]]:
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, 7))  # one feature no row has
    indptr = np.arange(0, 7 * n + 1, 7, dtype=np.int64)
    indices = np.tile(np.arange(7, dtype=np.int32), n)
    return (indptr, indices, Q.ravel()), Q


def by_hand(
    model: Model,
    batch: Examples,
    Q: npt.NDArray[np.float64],
    before: list[int],
    schedule: ReplaySchedule,
) -> list[bytes]:
    """Each question answered by the model after exactly the rows before it."""
    answers: list[bytes] = []
    learned = seen = 0
    for j, stop in enumerate(before):
        if stop > learned:
            seen = model.learn_on_schedule(batch.slice(learned, stop), schedule, seen)
            learned = stop
        answers.extend(model.answers(Q[j : j + 1]))
    if learned < batch.n_examples:
        model.learn_on_schedule(batch.slice(learned, batch.n_examples), schedule, seen)
    return answers


def scores(answers: list[bytes]) -> npt.NDArray[np.float64]:
    return np.array([float(a.split()[0]) for a in answers])


BEFORE = [0, 0, 3, 40, 40, 41, 150, 199, 200, 200]


MAKERS = [
    lambda: PDM(eps=0.05, delta=0.5),
    lambda: PAUM(delta=1.0),
    # a small buffer: examples evicted, and some too large to be stored at all
    lambda: PDM(eps=0.05, delta=0.5, buffer_size=50, buffer_nnz=4),
]


@pytest.mark.parametrize("schedule", [NO_REPLAY, ReplaySchedule(every=30, passes=1)])
@pytest.mark.parametrize("make", MAKERS)
def test_each_question_sees_the_rows_before_it(make: object, schedule: ReplaySchedule) -> None:
    batch, _ = rows(200, seed=1)
    q, Q = questions(len(BEFORE), seed=2)
    model, reference = make(), make()  # type: ignore[operator]
    seen, answers = model.learn_and_answer(batch, q, np.array(BEFORE), schedule, 0)
    expected = by_hand(reference, batch, Q, BEFORE, schedule)
    assert seen == 200
    np.testing.assert_allclose(scores(answers), scores(expected), rtol=1e-12, atol=1e-12)
    assert [a.split()[1] for a in answers] == [a.split()[1] for a in expected]
    assert len(set(answers)) > 3  # the model moved between questions
    assert np.array_equal(model.coef_, reference.coef_)  # learning them changed nothing
    assert model.summary() == reference.summary()


def test_a_bank_answers_in_order_too() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 5))
    labels = [[int(k)] for k in np.argmax(X[:, :3], axis=1) + 1]
    q, Q = questions(4, seed=4)
    before = [0, 10, 10, 120]
    bank, reference = (ModelBank(PDM(eps=0.1, delta=1.0)) for _ in range(2))
    indptr, indices, values = as_rows(X)
    examples = LabelledRows(
        indptr, indices, values, np.arange(121, dtype=np.int64), np.array(labels, float).ravel()
    )
    seen, answers = bank.learn_and_answer(examples, q, np.array(before), NO_REPLAY, 0)
    assert seen == 120
    assert answers[0] != answers[1] and answers[1] != answers[3]
    assert answers == by_hand(reference, examples, Q, before, NO_REPLAY)
