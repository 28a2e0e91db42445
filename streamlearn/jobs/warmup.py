"""``streamlearn warmup``: make sure no first run compiles a kernel.

An install compiles the kernels ahead of time (``setup.py``): then there is nothing to
compile (the paths still run: a call that no kernel compiled ahead of time takes would
compile, and be counted). Where it could not (no C compiler at install time), or with
``STREAMLEARN_JIT=1``, numba compiles a kernel the first time a process calls it and
keeps the result in its cache; a first ``learn``, ``serve`` or river call would spend
seconds compiling what later runs load. This runs, on tiny inputs, every path the
commands and adapters take: each learner alone and in a one-vs-rest bank (learning,
replay, answers, the certificate, a checkpoint's state), the parsers and message
decoders, Kafka's record-batch decoder, the frozen predictors, and the river adapters
when river is installed. ``make install`` runs it when the kernels were not compiled
ahead of time.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from streamlearn._kernels import announce_compilation
from streamlearn.config import LearnerSpec, ModelSpec
from streamlearn.learn import LEARNERS, LearnerTable, model_from_state
from streamlearn.parse import SvmlightParser

#: parameters a learner cannot do without, for the warm-up's tiny problems
REQUIRED = {"pfm": {"beta": 0.1}}


def run_warmup(say: Callable[[str], None], learners: LearnerTable = LEARNERS) -> int:
    """Run every kernel once (compiling what the cache lacks); returns how many kernels
    were compiled (0 when everything was cached already or compiled ahead of time)."""
    from streamlearn.jobs.serve import warm_up
    from streamlearn.sources.kafka_blocks import warm_up as warm_up_kafka

    with announce_compilation(say) as compiled:
        for name in learners:
            for one_vs_rest in (False, True):
                spec = ModelSpec(LearnerSpec(name, dict(REQUIRED.get(name, {}))), one_vs_rest)
                warm_up(spec)
                _round_trip(spec)
        SvmlightParser().feed(b"+1 1:1 2:1e24\n-1 3:0.5\n")
        warm_up_kafka()
        if importlib.util.find_spec("river") is not None:
            _river(learners)
    return compiled.kernels


def _round_trip(spec: ModelSpec) -> None:
    """Learn, replay, answer, store and restore a tiny model of ``spec``."""
    X = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [1.0, 1.0, 0.0], [0.0, 2.0, 1.0]])
    labels: Any = [[1], [2], [1, 2], [2]] if spec.one_vs_rest else [1, -1, 1, -1]
    model = spec.build().fit(X, labels)
    rows = (np.array([0, 2]), np.array([0, 2], dtype=np.int32), np.array([1.0, 1.0]))
    model.predictor().answer(rows)
    model.predictor().answer_json(rows)
    model.predict_proba(X)
    model.class_probabilities(X)
    model_from_state(model.state_dict()).summary()


def _river(learners: LearnerTable) -> None:
    """Three examples through each kind of river adapter of each learner (by name and
    hashed; binary ones with the averaged weights and without)."""
    import streamlearn.river as adapters

    for name in learners:
        prefix = learners[name].__name__
        params = REQUIRED.get(name, {})
        for kind, y in (("", True), ("OneVsRest", "a"),
                        ("MultiLabel", {"a": True, "b": False})):  # fmt: skip
            adapter = getattr(adapters, f"{prefix}{kind}Classifier", None)
            if adapter is None:  # a learner of another table
                continue
            # binary adapters: the averaged weights' kernels, and the live weights'
            last = ({"average": False},) if kind == "" else ()
            for options in ({}, {"n_features": 16}, *last):
                model = adapter(**params, **options)
                # the third has known features: its learning is deferred to the next call
                for x in ({"u": 1.0, "v": 2.0}, {"u": -1.0, "w": 0.5}, {"u": 0.5, "v": 1.0}):
                    model.predict_one(x)
                    model.learn_one(x, y)
                    model.predict_proba_one(x)
