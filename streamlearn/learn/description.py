"""What ``GET /model`` says of a model: algorithm, parameters, counts and certificate.

One description for both kinds of model and every mode that serves one (a daemon's model,
a learning group member's, a key's): a binary learner's certificate, or a bank's worst
gap with each label's.

>>> import numpy as np
>>> from streamlearn.learn import PDM, ModelBank
>>> bank = ModelBank(PDM(delta=1.0)).learn(np.eye(3), [[1], [2], [3]])
>>> described = describe(bank, bank.summary(), examples=3)
>>> described["kind"], len(described["certificate"]["per_label"])
('one-vs-rest', 3)
>>> describe(PDM(delta=1.0), PDM(delta=1.0).summary(), examples=0)["kind"]
'binary'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamlearn.learn.params import plain_params

if TYPE_CHECKING:
    from streamlearn.learn.model import Model

#: a binary learner's certificate figures (a bank gives them per label)
CERTIFICATE_KEYS = ("margin_achieved", "margin_upper_bound", "certified_gap")


def describe(model: Model, summary: dict[str, Any], examples: int) -> dict[str, Any]:
    """The description of ``model`` from its ``summary`` (taken with it), which has
    learned ``examples`` stream examples."""
    window = {
        "window_examples": summary["buffer_examples"],
        "converged": summary["converged"],
    }
    if "per_label" in summary:
        certificate = {
            "worst_certified_gap": summary["worst_certified_gap"],
            **window,
            "per_label": [
                {key: figures[key] for key in ("label", *CERTIFICATE_KEYS)}
                for figures in summary["per_label"]
            ],
        }
        kind = "one-vs-rest"
    else:
        certificate = {**{key: summary[key] for key in CERTIFICATE_KEYS}, **window,
                       "stopped_by": summary["stopped_by"]}  # fmt: skip
        kind = "binary"
    return {
        "algorithm": model.algorithm,
        "kind": kind,
        "params": plain_params(model.get_params()),
        "examples": examples,
        "held_examples": summary["pending_examples"],
        "updates": summary["updates"],
        "update_events": summary["update_events"],
        "passes": summary["passes"],
        "certificate": certificate,
    }
