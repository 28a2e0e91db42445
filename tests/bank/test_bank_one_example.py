"""ModelBank.learn_example (one example per call) learns what learn does on the rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bank_samples import multilabel_stream

from streamlearn.learn import PAUM, PDM, PDMSucc
from streamlearn.learn.bank import ModelBank
from streamlearn.learn.state import unpacked_weights

BANKS: dict[str, Any] = {
    "pdm-delta": lambda: ModelBank(PDM(eps=0.1, delta=1.0, buffer_size=100)),
    "pdm-auto": lambda: ModelBank(PDM(eps=0.1, buffer_size=60)),
    "paum-kappa": lambda: ModelBank(PAUM(tau_pos=3.0, delta=0.5), tau_pos_kappa=-2.0),
    "pdm-succ": lambda: ModelBank(PDMSucc(eps=0.05, delta=1.0)),
}


@pytest.mark.parametrize("kind", sorted(BANKS))
def test_one_example_at_a_time_equals_the_rows(kind: str) -> None:
    X, label_sets = multilabel_stream()
    ours, theirs = BANKS[kind](), BANKS[kind]()
    for start in range(0, X.shape[0], 80):
        for i in range(start, start + 80):
            row = X[i]
            ours.learn_example(
                row.indices.astype(np.int32), row.data.astype(np.float64),
                np.array(label_sets[i], dtype=np.float64),
            )  # fmt: skip
        theirs.learn(X[start : start + 80], label_sets[start : start + 80])
        ours.replay(max_passes=3)
        theirs.replay(max_passes=3)
    a, b = ours.state_dict(), theirs.state_dict()
    for key in ("label_values", "weights", "scalars", "stats"):
        np.testing.assert_array_equal(unpacked(a, key), unpacked(b, key), err_msg=key)
    assert ours.n_labels == 4
    np.testing.assert_array_equal(ours.tau_pos_, theirs.tau_pos_)


def unpacked(state: dict[str, Any], key: str) -> Any:
    """``state[key]``, with the weights as one array (a state may store their nonzeros)."""
    return unpacked_weights(state[key]) if key == "weights" else state[key]
