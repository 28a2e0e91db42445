"""Replay kernels compiled per rule: the rule's code is a constant of the compiled code,
and each (code, multiple-update flag) pair is cached on disk like every other kernel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fresh_process import run_with_numba_cache

from streamlearn._kernels.engine import Rule, replay_kernel
from streamlearn._kernels.rules import RULE_PDM, RULE_PFM

#: fits two learners with different rules on a few examples under the compilation watch;
#: prints how many kernels it compiled and the rule types replay_pass was compiled for
FIT_TWO_RULES = """
import json
import numpy as np
from streamlearn import PDM, PFM
from streamlearn._kernels import watch_compilation
from streamlearn._kernels.engine import replay_pass

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
y = np.where(X[:, 0] > 0, 1, -1)
with watch_compilation(lambda: None) as log:
    PDM(eps=0.1, delta=1.0).fit(X, y)
    PFM(beta=0.01, delta=1.0).fit(X, y)
rules = [str(signature[4]) for signature in replay_pass.signatures]
print(json.dumps({"kernels": log.kernels, "rules": rules}))
"""


def rule(code: int, multi: bool, unit: bool = False) -> Rule:
    return (code, np.zeros(2), 1.0, 1.0, multi, unit)


def test_one_kernel_per_code_and_flag_whatever_the_parameters() -> None:
    pdm = replay_kernel(rule(RULE_PDM, True))
    assert replay_kernel((RULE_PDM, np.ones(2), 3.0, 0.0, True, True)) is pdm
    assert replay_kernel(rule(RULE_PDM, False)) is not pdm
    assert replay_kernel(rule(RULE_PFM, True)) is not pdm


@pytest.mark.slow
def test_each_rule_compiles_with_its_code_as_a_constant_and_loads_from_the_cache(
    tmp_path: Path,
) -> None:
    first = run_with_numba_cache(FIT_TWO_RULES, tmp_path, timeout=600)
    assert first["kernels"] > 0
    for code in (RULE_PDM, RULE_PFM):  # numba's name for a constant int in a type
        assert sum(f"Literal[int]({code})" in text for text in first["rules"]) == 1, first
    second = run_with_numba_cache(FIT_TWO_RULES, tmp_path, timeout=600)
    assert second == {"kernels": 0, "rules": []}  # every kernel loaded, none compiled
