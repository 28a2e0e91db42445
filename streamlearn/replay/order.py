"""The order of a full replay pass: a fresh permutation, fixed by the seed and pass number.

Deriving each pass's permutation from ``(seed, pass_index)`` needs no generator state,
so a learner restored from a state dictionary replays exactly as the original would.

>>> pass_permutation(seed=0, pass_index=3, n=5).tolist() == pass_permutation(0, 3, 5).tolist()
True
>>> sorted(pass_permutation(0, 3, 5).tolist())
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def pass_permutation(seed: int, pass_index: int, n: int) -> npt.NDArray[np.int64]:
    """A permutation of ``range(n)`` that depends only on ``seed`` and ``pass_index``."""
    rng = np.random.default_rng([seed, pass_index])
    return rng.permutation(n).astype(np.int64)
