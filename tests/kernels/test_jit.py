"""The compilation watch: it sees numba compile streamlearn's kernels, and only then."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fresh_process import run_with_numba_cache

from streamlearn._kernels import watch_compilation
from streamlearn._kernels.rows import row_sqnorms

#: compiles (or loads) one small kernel under the watch and prints what the watch saw
WATCHED_CALL = """
import json
import numpy as np
from streamlearn._kernels import watch_compilation
from streamlearn._kernels.rows import row_sqnorms

calls = []
with watch_compilation(lambda: calls.append(1)) as log:
    row_sqnorms(np.array([0, 2]), np.array([3.0, 4.0]))
print(json.dumps({"calls": len(calls), "kernels": log.kernels, "seconds": log.seconds}))
"""


def test_a_first_run_is_seen_compiling_and_a_second_loads_from_the_cache(tmp_path: Path) -> None:
    first = run_with_numba_cache(WATCHED_CALL, tmp_path)
    assert first["calls"] == 1  # once, however many kernels
    assert first["kernels"] >= 1
    assert first["seconds"] > 0.0
    second = run_with_numba_cache(WATCHED_CALL, tmp_path)
    assert second == {"calls": 0, "kernels": 0, "seconds": 0.0}


def test_a_kernel_compiled_already_in_this_process_is_not_reported() -> None:
    row_sqnorms(np.array([0, 1]), np.array([1.0]))
    seen = []
    with watch_compilation(lambda: seen.append(1)) as log:
        row_sqnorms(np.array([0, 1]), np.array([2.0]))
    assert seen == [] and log.kernels == 0
