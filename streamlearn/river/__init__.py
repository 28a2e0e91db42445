"""river classifiers for every learner of the engine (river must be installed).

- :mod:`streamlearn.river.binary`: binary classifiers over one learner
  (``PDMClassifier``, ``PAUMClassifier``, ...);
- :mod:`streamlearn.river.bank`: multi-class (``PDMOneVsRestClassifier``, ...) and
  multi-label (``PDMMultiLabelClassifier``, ...) classifiers over a one-vs-rest model
  bank.

Each family is made from the table of learners (:mod:`streamlearn.learn.table`):
:func:`binary_classifier`, :func:`one_vs_rest_classifier` and
:func:`multilabel_classifier` make the classes of any entry. Every class is importable
from here.

>>> from streamlearn.river import PDMClassifier, PDMOneVsRestClassifier
>>> PDMClassifier.learner_class is PDMOneVsRestClassifier.learner_class
True
"""

from __future__ import annotations

from streamlearn.errors import missing_extra

try:
    import river  # noqa: F401  (only to say which install is missing)
except ModuleNotFoundError as error:
    missing_extra(
        error, needed_by="streamlearn.river", module="river", package="river", extra="river"
    )
    raise

from streamlearn.river.bank import (
    MULTILABEL_ADAPTERS,
    ONE_VS_REST_ADAPTERS,
    AMargitronMultiLabelClassifier,
    AMargitronOneVsRestClassifier,
    BankClassifierBase,
    KozinecMultiLabelClassifier,
    KozinecOneVsRestClassifier,
    MultiLabelClassifierBase,
    OneVsRestClassifierBase,
    PAMMultiLabelClassifier,
    PAMOneVsRestClassifier,
    PAUMMultiLabelClassifier,
    PAUMOneVsRestClassifier,
    PDMMultiLabelClassifier,
    PDMOneVsRestClassifier,
    PDMSuccMultiLabelClassifier,
    PDMSuccOneVsRestClassifier,
    PerceptronMultiLabelClassifier,
    PerceptronOneVsRestClassifier,
    PFMMultiLabelClassifier,
    PFMOneVsRestClassifier,
    TMargitronMultiLabelClassifier,
    TMargitronOneVsRestClassifier,
    multilabel_classifier,
    one_vs_rest_classifier,
)
from streamlearn.river.binary import (
    ADAPTERS,
    STATE_FORMAT,
    STATE_VERSION,
    AMargitronClassifier,
    KozinecClassifier,
    LearnerClassifier,
    PAMClassifier,
    PAUMClassifier,
    PDMClassifier,
    PDMSuccClassifier,
    PerceptronClassifier,
    PFMClassifier,
    TMargitronClassifier,
    binary_classifier,
)
from streamlearn.river.features import HASH_CACHE_SIZE, stable_hash

__all__ = [
    "ADAPTERS",
    "HASH_CACHE_SIZE",
    "MULTILABEL_ADAPTERS",
    "ONE_VS_REST_ADAPTERS",
    "STATE_FORMAT",
    "STATE_VERSION",
    "AMargitronClassifier",
    "AMargitronMultiLabelClassifier",
    "AMargitronOneVsRestClassifier",
    "BankClassifierBase",
    "KozinecClassifier",
    "KozinecMultiLabelClassifier",
    "KozinecOneVsRestClassifier",
    "LearnerClassifier",
    "MultiLabelClassifierBase",
    "OneVsRestClassifierBase",
    "PAMClassifier",
    "PAMMultiLabelClassifier",
    "PAMOneVsRestClassifier",
    "PAUMClassifier",
    "PAUMMultiLabelClassifier",
    "PAUMOneVsRestClassifier",
    "PDMClassifier",
    "PDMMultiLabelClassifier",
    "PDMOneVsRestClassifier",
    "PDMSuccClassifier",
    "PDMSuccMultiLabelClassifier",
    "PDMSuccOneVsRestClassifier",
    "PFMClassifier",
    "PFMMultiLabelClassifier",
    "PFMOneVsRestClassifier",
    "PerceptronClassifier",
    "PerceptronMultiLabelClassifier",
    "PerceptronOneVsRestClassifier",
    "TMargitronClassifier",
    "TMargitronMultiLabelClassifier",
    "TMargitronOneVsRestClassifier",
    "binary_classifier",
    "multilabel_classifier",
    "one_vs_rest_classifier",
    "stable_hash",
]
