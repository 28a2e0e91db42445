"""Which models learn a stream as one binary learner does (:class:`LinearLearner`): the
models whose stream learning the keyed models run many at a time, in one kernel call
(:mod:`streamlearn.keyed.together`). Banks and other models go their own way.

>>> from streamlearn.learn import PDM, ModelBank
>>> learner = PDM(delta=1.0)
>>> stream_learner(learner) is learner, stream_learner(ModelBank(PDM(delta=1.0)))
(True, None)
"""

from __future__ import annotations

from streamlearn.learn.base import LinearLearner
from streamlearn.learn.model import Model


def stream_learner(model: Model) -> LinearLearner | None:
    """``model`` when it is one binary learner (every learner class learns a stream the
    same way, :meth:`LinearLearner.learn_batch`); None for any other model."""
    return model if isinstance(model, LinearLearner) else None
