"""The learner classes made from the table take their arguments as hand-written classes do."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from streamlearn.errors import InvalidParameterError
from streamlearn.learn import LEARNERS, PAUM, PDM, PFM, Kozinec, PDMSucc, Perceptron
from streamlearn.learn.params import REQUIRED

# what Python said for the hand-written classes of 0.1.0 (03a8178), word for word
WRONG_CALLS: list[tuple[Callable[[], Any], str]] = [
    (lambda: PFM(), "PFM.__init__() missing 1 required positional argument: 'beta'"),
    (
        lambda: PDM(0.1, 0.2),
        "PDM.__init__() takes from 1 to 2 positional arguments but 3 were given",
    ),
    (lambda: PDM(foo=1), "PDM.__init__() got an unexpected keyword argument 'foo'"),
    (lambda: PAUM(tau=1.0), "PAUM.__init__() got an unexpected keyword argument 'tau'"),
    (
        lambda: PDMSucc(0.1, 8.0),
        "PDMSucc.__init__() takes from 1 to 2 positional arguments but 3 were given",
    ),
    (
        lambda: Kozinec(0.1, beta=2.0),
        "Kozinec.__init__() got an unexpected keyword argument 'beta'",
    ),
    (lambda: PDM(0.1, eps=0.2), "PDM.__init__() got multiple values for argument 'eps'"),
]


@pytest.mark.parametrize(("call", "message"), WRONG_CALLS)
def test_a_wrong_call_names_the_class(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == message


def test_a_learner_without_its_own_parameters_names_itself() -> None:
    with pytest.raises(TypeError, match=r"^Perceptron\.__init__\(\) takes 1 positional"):
        Perceptron(1.0)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_the_signature_is_the_tables(name: str) -> None:
    cls = LEARNERS[name]
    entry = LEARNERS.entry(name)
    assert list(inspect.signature(cls).parameters.values()) == list(
        entry.signature.parameters.values()
    )
    learner = cls(**entry.test_params)
    defaults = {p.name: p.default for p in entry.all_params if p.default is not REQUIRED}
    assert learner.get_params() == {**defaults, **entry.test_params}


def test_values_are_still_checked() -> None:
    with pytest.raises(InvalidParameterError, match="eps must be in"):
        PDM(2.0)
    assert PDM(0.5, multiple_updates=False).get_params()["multiple_updates"] is False


def test_init_function_refuses_what_it_cannot_write() -> None:
    from streamlearn.learn.params import init_function

    star = inspect.Signature([inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL)])
    with pytest.raises(InvalidParameterError):
        init_function("X.__init__", star, lambda self, **values: None)
    param = inspect.Parameter("eps", inspect.Parameter.KEYWORD_ONLY, default=0.5)
    seen: dict[str, float] = {}
    init = init_function("X.__init__", inspect.Signature([param]), lambda _, **v: seen.update(v))
    init(object())
    assert seen == {"eps": 0.5}
