"""river's own estimator checks for the multi-class and multi-label bank adapters, each
check its own test.

No check is skipped. river runs its multi-label checks on ``datasets.Music``, which it
downloads on first use; so that the tests need no network, those checks run here on a
synthetic multi-label stream of the same form instead (dicts of named numeric features,
``y`` a dict of label: bool), of the same lengths (50 examples, 500 for the memory
growth check).
"""

from __future__ import annotations

from typing import Any

import pytest
from river import checks
from river_bank_streams import multilabel

from streamlearn.river.bank import (
    MULTILABEL_ADAPTERS,
    ONE_VS_REST_ADAPTERS,
    BankClassifierBase,
    MultiLabelClassifierBase,
)

FAMILIES = {"ovr": ONE_VS_REST_ADAPTERS, "multilabel": MULTILABEL_ADAPTERS}


def _model(adapter: type[BankClassifierBase]) -> BankClassifierBase:
    (params,) = list(adapter._unit_test_params())
    return adapter(**params)


def _cases() -> list[Any]:
    cases = []
    for family, adapters in FAMILIES.items():
        for name, adapter in sorted(adapters.items()):
            for position, check in enumerate(checks.yield_checks(_model(adapter))):
                case_id = f"{family}-{name}-{position:02d}-{check.__name__}"
                cases.append(pytest.param(adapter, position, check.__name__, id=case_id))
    return cases


def test_no_check_is_skipped() -> None:
    for adapters in FAMILIES.values():
        for adapter in adapters.values():
            assert _model(adapter)._unit_test_skips() == set()


@pytest.mark.parametrize(("adapter", "position", "check_name"), _cases())
def test_river_check(adapter: type[BankClassifierBase], position: int, check_name: str) -> None:
    model = _model(adapter)
    check = list(checks.yield_checks(model))[position]
    assert check.__name__ == check_name
    keywords = getattr(check, "keywords", {})
    if isinstance(model, MultiLabelClassifierBase) and "dataset" in keywords:
        size = 500 if check_name == "check_bounded_memory_growth" else 50
        check.func(model.clone(), dataset=iter(multilabel(size)))
    else:
        check(model.clone())


def test_check_estimator_as_river_runs_it() -> None:
    """river's own entry point, as users call it, for a multi-class classifier (the
    multi-label ones would download river's Music data set: see the module doc).

    For one adapter: the checks themselves ran above for every adapter, each on its own;
    what this adds is river's loop (skips, clones), the same for every adapter."""
    checks.check_estimator(_model(ONE_VS_REST_ADAPTERS["pdm"]))
