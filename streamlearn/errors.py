"""Exceptions raised by streamlearn.

Every error a user can trigger through the API derives from :class:`StreamlearnError`,
so callers can catch one type; the subclasses say which kind of mistake it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class StreamlearnError(Exception):
    """Base class of every error streamlearn raises on purpose."""


class InvalidParameterError(StreamlearnError, ValueError):
    """A hyperparameter or option is outside its allowed range."""


class InvalidInputError(StreamlearnError, ValueError):
    """Examples or labels handed to a learner are malformed (NaN, bad label, bad index...)."""


class StateError(StreamlearnError, ValueError):
    """A state dictionary is incomplete, inconsistent or from another algorithm."""


class DivergenceError(StreamlearnError, ArithmeticError):
    """Learning cannot go on: the weights overflowed (e.g. PFM with beta above the margin)."""


class CheckpointError(StreamlearnError):
    """A checkpoint cannot be written, read or decoded (missing, truncated, corrupt, foreign)."""


class UndeliveredError(CheckpointError):
    """A checkpoint not written because what had to reach a broker before it (predictions,
    dead letters, keyed models' records) is still on its way: writing it would lose them
    if the daemon then stopped. The checkpoint before it stands."""


class InputError(StreamlearnError):
    """An input stream cannot be used: empty, unreadable, or a bad line under --strict."""


class BadLineError(InputError):
    """A rejected input line under ``--strict``."""


def check_state_header(state: Mapping[str, Any], fmt: str, version: int, what: str) -> None:
    """Raise :class:`StateError` unless ``state`` says it is ``fmt``, version ``version``.

    ``what`` names the kind of state in the messages.

    >>> check_state_header({"format": "streamlearn.learner", "version": 1},
    ...                    "streamlearn.learner", 1, "learner")
    >>> check_state_header({"format": "other"}, "streamlearn.learner", 1, "learner")
    Traceback (most recent call last):
    ...
    streamlearn.errors.StateError: not a streamlearn learner state (format 'other')
    """
    if state.get("format") != fmt:
        raise StateError(f"not a streamlearn {what} state (format {state.get('format')!r})")
    if state.get("version") != version:
        raise StateError(f"unsupported {what} state version {state.get('version')!r}")


class MissingExtraError(StreamlearnError, ModuleNotFoundError):
    """An optional dependency is not installed; the message names the ``pip install``
    that brings it. A :class:`ModuleNotFoundError`, so ``except ImportError`` still works.
    """


def missing_extra(
    error: ModuleNotFoundError, *, needed_by: str, module: str, package: str, extra: str
) -> None:
    """Raise :class:`MissingExtraError` from ``error`` when it says ``module`` (the
    distribution ``package``'s, brought by the ``extra``) is not installed; a module
    missing inside an installed package is another fault, and ``error`` stands.

    >>> try:
    ...     missing_extra(ModuleNotFoundError("No module named 'river'", name="river"),
    ...                   needed_by="streamlearn.river", module="river", package="river",
    ...                   extra="river")
    ... except MissingExtraError as e:
    ...     print(e)
    streamlearn.river needs river: pip install "streamlearn[river]"
    """
    if error.name == module:
        raise MissingExtraError(
            f'{needed_by} needs {package}: pip install "streamlearn[{extra}]"', name=module
        ) from error


class UnknownKeyError(StreamlearnError, LookupError):
    """A daemon of keyed models has no model of the key (none has learned yet, or its
    partition is another member's)."""

    def __init__(self, key: bytes) -> None:
        super().__init__(
            f"no model of key {key.decode(errors='replace')!r} here: a key's model starts "
            "with its messages on the topic, or its partition is another member's"
        )
        self.key = key
