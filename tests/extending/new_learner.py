"""A learner that exists only in the tests: one table entry over an existing rule.

PAM-wide updates when a . y <= width * tau: PAM's kernel with its margin scaled. Its
entry is all it takes; its learner class, command-line options, scikit-learn estimator
and river classifiers are made from it here (where pickle finds them by name).
"""

from __future__ import annotations

from streamlearn._kernels import RULE_PAM
from streamlearn.learn import LEARNERS, LearnerEntry, Param
from streamlearn.learn.params import non_negative, positive
from streamlearn.river import binary_classifier, multilabel_classifier, one_vs_rest_classifier
from streamlearn.sklearn import estimator_class

ENTRY = LearnerEntry(
    "pam-wide",
    "PAMWide",
    RULE_PAM,
    "The perceptron with a widened margin: update when a . y <= width * tau.",
    params=(
        Param("tau", 1.0, non_negative, "Margin tau >= 0.", keyword_only=False),
        Param("width", 2.0, positive, "Factor of the margin, > 0."),
    ),
    rule_values=lambda learner: (learner.width * learner.tau, 0.0),
    module=__name__,
)
TABLE = LEARNERS.with_entry(ENTRY)

PAMWide = ENTRY.learner_class
PAMWideEstimator = estimator_class(ENTRY, module=__name__, name="PAMWideEstimator")
PAMWideClassifier = binary_classifier(ENTRY, module=__name__)
PAMWideOneVsRestClassifier = one_vs_rest_classifier(ENTRY, module=__name__)
PAMWideMultiLabelClassifier = multilabel_classifier(ENTRY, module=__name__)
