"""The per-example path (:mod:`streamlearn.learn.one_example`): the hot kernels it calls
without numba's dispatch are compiled for exactly the types its state has."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from streamlearn._kernels import single, uses_aot
from streamlearn.errors import StateError
from streamlearn.learn import PDM
from streamlearn.learn.one_example import OneExamplePath


def test_the_hot_kernels_are_compiled_for_the_types_of_the_state() -> None:
    path = OneExamplePath(PDM(delta=1.0), on_refresh=lambda new_blocks: None)
    path.bind(min_weights=4)
    entry = single.hot_kernels().decision
    if uses_aot():  # compiled ahead of time for these types: the exported function itself
        assert entry is single.decision.exports[0]  # type: ignore[attr-defined]
        return
    (signature,) = [sig for sig in single.decision.signatures if sig[1] == numba.typeof(path.state)]
    assert signature == (numba.types.int64, numba.typeof(path.state))
    assert entry is not single.decision  # the compiled function, not the dispatcher


def test_a_state_the_kernels_would_misread_is_refused() -> None:
    learner = PDM(delta=1.0)
    path = OneExamplePath(learner, on_refresh=lambda new_blocks: None)
    path.bind()
    learner.state.weights = np.zeros(8, dtype=np.float64)[::2]  # not contiguous
    with pytest.raises(StateError, match="float64"):
        path.refresh()
