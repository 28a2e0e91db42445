"""scikit-learn's own estimator checks, for every estimator of streamlearn.sklearn.

Every check passes: none is declared as an expected failure. Two checks skip themselves
for reasons of the environment, not of the estimators: ``check_array_api_input`` runs
only when SCIPY_ARRAY_API=1 is set before scipy is imported (it passes then), and the pandas half of
``check_classifier_data_not_an_array`` needs pandas, which is not a dependency (its
other half, with array-likes that are not arrays, runs and passes first).
"""

from __future__ import annotations

from typing import Any

from sklearn.utils.estimator_checks import parametrize_with_checks

from streamlearn.sklearn import (
    ESTIMATORS,
    AMargitronClassifier,
    KozinecClassifier,
    PAMClassifier,
    PAUMClassifier,
    PDMClassifier,
    PDMSuccClassifier,
    PerceptronClassifier,
    PFMClassifier,
    TMargitronClassifier,
)

#: one instance of every class; PFM's beta has no default and must stay below the
#: margin of every data set of the checks (with delta='auto' that margin is at least
#: about 1 / (10 sqrt(n_samples)))
CHECKED = [
    PerceptronClassifier(),
    PAMClassifier(),
    PAUMClassifier(),
    PFMClassifier(beta=0.001),
    PDMClassifier(),
    PDMSuccClassifier(),
    TMargitronClassifier(),
    AMargitronClassifier(),
    KozinecClassifier(),
]


def test_every_estimator_is_checked() -> None:
    assert {type(estimator) for estimator in CHECKED} == set(ESTIMATORS.values())


@parametrize_with_checks(CHECKED)
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)
