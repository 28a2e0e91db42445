"""river's own estimator checks (``river.checks``), each as its own test, for every adapter.

``check_estimator`` runs every check of ``yield_checks`` on a clone; here each check is
one parametrized test, so that a failure names the adapter and the check. No check is
skipped: the adapters declare no ``_unit_test_skips``. river's mini-batch checks apply
only to ``base.MiniBatchClassifier`` models, which the adapters are not.
"""

from __future__ import annotations

from typing import Any

import pytest
from river import checks

from streamlearn.river import ADAPTERS, LearnerClassifier


def _model(adapter: type[LearnerClassifier]) -> LearnerClassifier:
    (params,) = list(adapter._unit_test_params())
    return adapter(**params)


def _cases() -> list[Any]:
    cases = []
    for name, adapter in sorted(ADAPTERS.items()):
        for position, check in enumerate(checks.yield_checks(_model(adapter))):
            case_id = f"{name}-{position:02d}-{check.__name__}"
            cases.append(pytest.param(adapter, position, check.__name__, id=case_id))
    return cases


def test_no_check_is_skipped() -> None:
    for adapter in ADAPTERS.values():
        assert _model(adapter)._unit_test_skips() == set()


@pytest.mark.parametrize(("adapter", "position", "check_name"), _cases())
def test_river_check(adapter: type[LearnerClassifier], position: int, check_name: str) -> None:
    model = _model(adapter)
    check = list(checks.yield_checks(model))[position]
    assert check.__name__ == check_name
    check(model.clone())


def test_check_estimator_as_river_runs_it() -> None:
    """river's own entry point, as users call it: the same checks as above, in one go.

    For one adapter: the checks themselves ran above for every adapter, each on its own;
    what this adds is river's loop (skips, clones), the same for every adapter."""
    checks.check_estimator(_model(ADAPTERS["pdm"]))
