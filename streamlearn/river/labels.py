"""The two labels of a river binary classifier and the sign each is learned as.

``pos_label`` None: True and 1 are +1; False, 0 and -1 are -1; any other label is -1
when it is the first label seen and +1 when it is the second (a label whose natural sign
is taken gets the other one). With ``pos_label``, that label is +1 and the other -1. A
third distinct label is an error.

>>> labels = BinaryLabels(owner="PDMClassifier")
>>> labels.add(*labels.sign_of_new("spam", pos_label=None))
>>> labels.add(*labels.sign_of_new("ham", pos_label=None))
>>> labels.signs, labels.predicted()
({'spam': -1.0, 'ham': 1.0}, ('ham', 'spam'))
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable
from typing import Any

import numpy as np

from streamlearn.errors import InvalidInputError


def natural_sign(label: Any) -> float | None:
    """+1 for True and 1, -1 for False, 0 and -1, None for any other label."""
    if isinstance(label, bool | np.bool_):
        return 1.0 if label else -1.0
    if isinstance(label, numbers.Real):
        if label == 1:
            return 1.0
        if label in (0, -1):
            return -1.0
    return None


class BinaryLabels:
    """The labels seen, in order, and the sign of each (see the module doc); ``owner``
    is the classifier's name, for the messages."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        #: the sign each label is learned as
        self.signs: dict[Hashable, float] = {}
        #: the labels, in the order they came
        self.labels: list[Hashable] = []

    def sign_of_new(self, y: Any, pos_label: Any) -> tuple[Any, float]:
        """The label as it will be kept and its sign, for a label not seen yet (under the
        classifier's ``pos_label``); refuses a third one. Nothing is recorded: :meth:`add`
        does, once its example has been accepted."""
        try:
            hash(y)
        except TypeError as exc:
            raise InvalidInputError(f"labels must be hashable, got {y!r}") from exc
        if isinstance(y, np.bool_):
            y = bool(y)
        if len(self.labels) == 2:
            raise InvalidInputError(
                f"{self.owner} is a binary classifier: got a third label {y!r} "
                f"after {self.labels[0]!r} and {self.labels[1]!r}"
            )
        taken = set(self.signs.values())
        if pos_label is not None:
            sign = 1.0 if y == pos_label else -1.0
            if sign in taken:
                raise InvalidInputError(
                    f"labels {self.labels[0]!r} and {y!r} both differ from pos_label="
                    f"{pos_label!r}: a binary classifier needs pos_label among them"
                )
        else:
            natural = natural_sign(y)
            if natural is not None and natural not in taken:
                sign = natural
            else:
                sign = -1.0 if -1.0 not in taken else 1.0
        return y, sign

    def add(self, y: Any, sign: float) -> None:
        """Record label ``y`` with its sign."""
        self.signs[y] = sign
        self.labels.append(y)

    def predicted(self) -> tuple[Any, Any]:
        """The labels predicted for a positive and a non-positive decision value."""
        by_sign: dict[float, Any] = {sign: label for label, sign in self.signs.items()}
        if not by_sign:
            return True, False
        if len(by_sign) == 1:
            ((sign, label),) = by_sign.items()
            other: Any = (not label) if isinstance(label, bool) else label
            by_sign[-sign] = other
        return by_sign[1.0], by_sign[-1.0]

    def state(self) -> list[list[Any]]:
        """``[label, sign]`` of every label, in order."""
        return [[label, sign] for label, sign in self.signs.items()]

    def load(self, saved: list[Any]) -> None:
        """Take back :meth:`state` (after the labels recorded so far)."""
        for label, sign in saved:
            self.add(label, float(sign))
