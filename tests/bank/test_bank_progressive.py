"""The bank's progressive multi-class judgement: the argmax just before each example is
learned, over the labels known before it, against its label set."""

from __future__ import annotations

import numpy as np
import pytest
from bank_samples import multilabel_stream

from streamlearn import PAUM, PDM, ModelBank, model_from_state
from streamlearn.learn import LabelledRows, LinearLearner, as_labelled_rows


def judged_by_hand(base: LinearLearner, rows: LabelledRows) -> tuple[int, int]:
    """(judged, mistakes) from decisions read before learning each row alone."""
    bank = ModelBank(type(base)(**base.get_params()))
    judged = mistakes = 0
    for i in range(rows.n_examples):
        one = rows.slice(i, i + 1)
        members = set(one.labels.tolist())
        if members:
            judged += 1
            indices = one.indices
            if bank.n_labels == 0:
                mistakes += 1
            else:
                scores = bank.decision_row(indices, one.values)
                best = bank.labels_[int(np.argmax(scores))]
                mistakes += best not in members
        bank.learn_rows(one)
    return judged, mistakes


@pytest.mark.parametrize(
    "base", [PDM(eps=0.05, delta=0.5), PAUM(tau_neg=-0.5, tau_pos=2.0, lr=0.5, delta=0.3)]
)
def test_progressive_mistakes_are_the_argmax_before_learning(base: LinearLearner) -> None:
    X, label_sets = multilabel_stream(n=300, n_labels=5, seed=4)
    label_sets[7] = []  # an example without labels is not judged
    rows = as_labelled_rows(X, label_sets)
    bank = ModelBank(type(base)(**base.get_params()))
    bank.learn_rows(rows.slice(0, 150))
    bank.learn_rows(rows.slice(150, 300))
    expected = judged_by_hand(base, rows)
    assert (bank.stream_judged, bank.stream_mistakes) == expected
    assert expected[0] == sum(1 for s in label_sets if s)
    assert 0 < expected[1] < expected[0]
    summary = bank.summary()
    assert (summary["stream_judged"], summary["stream_mistakes"]) == expected


def test_a_new_label_is_not_a_candidate_for_the_example_that_brings_it() -> None:
    bank = ModelBank(PDM(eps=0.1, delta=0.0))
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    bank.learn(X, np.array([3, 3, 4]))
    # 1st: no label known (a mistake); 2nd: 3 is the argmax; 3rd brings 4: judged over {3}
    assert (bank.stream_judged, bank.stream_mistakes) == (3, 2)


def test_the_counts_survive_a_state_round_trip() -> None:
    X, label_sets = multilabel_stream(n=120, seed=2)
    bank = ModelBank(PDM(eps=0.05, delta=0.5)).learn(X[:60], label_sets[:60])
    again = model_from_state(bank.state_dict())
    assert isinstance(again, ModelBank)
    bank.learn(X[60:], label_sets[60:])
    again.learn(X[60:], label_sets[60:])
    assert (again.stream_judged, again.stream_mistakes) == (
        bank.stream_judged,
        bank.stream_mistakes,
    )
    old_state = bank.state_dict()
    del old_state["progressive"]  # a state written before the counts existed
    restored = model_from_state(old_state)
    assert isinstance(restored, ModelBank) and restored.stream_mistakes == 0
