"""The river adapters' own options, beside the learner's parameters: described once,
checked once (:func:`check_options`)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from streamlearn.errors import InvalidParameterError
from streamlearn.learn.table import LearnerEntry
from streamlearn.replay import ReplaySchedule

KEYWORD = inspect.Parameter.KEYWORD_ONLY
#: ``replay_every``'s default: the growing schedule (``ReplaySchedule.growing``)
REPLAY_AUTO = "auto"
#: every adapter's options: how names become indices, and the replay schedule
COMMON_OPTIONS = (
    inspect.Parameter("n_features", KEYWORD, default=None),
    inspect.Parameter("replay_every", KEYWORD, default=REPLAY_AUTO),
    inspect.Parameter("replay_passes", KEYWORD, default=1),
)
#: the binary adapters' option: which label is learned as +1
POS_LABEL = inspect.Parameter("pos_label", KEYWORD, default=None)
#: the binary adapters' option: predict with the weights averaged over the stream
AVERAGE = inspect.Parameter("average", KEYWORD, default=True)
#: the bank adapters' option for learners with a margin of positives (PAUM)
TAU_POS_KAPPA = inspect.Parameter("tau_pos_kappa", KEYWORD, default=None)
#: the adapters' default Delta, the engine's: learning starts with the first example (a
#: river pipeline judges every example) under a provisional Delta, which settles over the
#: first min(1000, buffer_size) examples (:mod:`streamlearn.learn.window`)
RIVER_DELTA = "auto"


def engine_parameters(entry: LearnerEntry) -> list[inspect.Parameter]:
    """The learner's parameters as an adapter's ``__init__`` takes them: the learner's
    own defaults, but Delta's (:data:`RIVER_DELTA`)."""
    return [
        param.signature_parameter().replace(default=RIVER_DELTA)
        if param.name == "delta"
        else param.signature_parameter()
        for param in entry.all_params
    ]


def check_options(options: dict[str, Any]) -> None:
    """Refuse option values the adapters cannot use (those given in ``options``).

    >>> check_options({"n_features": 0})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamlearn.errors.InvalidParameterError: n_features must be None or an integer in ...
    """
    n_features = options.get("n_features")
    if n_features is not None and (
        isinstance(n_features, bool)
        or not isinstance(n_features, int | np.integer)
        or not 1 <= n_features <= 2**31 - 1
    ):
        raise InvalidParameterError(
            f"n_features must be None or an integer in [1, 2**31 - 1], got {n_features!r}"
        )
    every = options.get("replay_every")
    if (
        every is not None
        and every != REPLAY_AUTO
        and (isinstance(every, bool) or not isinstance(every, int | np.integer) or every < 1)
    ):
        raise InvalidParameterError(
            f"replay_every must be 'auto', None or an integer >= 1, got {every!r}"
        )
    passes = options.get("replay_passes", 1)
    if isinstance(passes, bool) or not isinstance(passes, int | np.integer) or passes < 1:
        raise InvalidParameterError(f"replay_passes must be an integer >= 1, got {passes!r}")
    if options.get("pos_label") is not None:
        try:
            hash(options["pos_label"])
        except TypeError as exc:
            raise InvalidParameterError("pos_label must be hashable") from exc


def replay_schedule(every: int | str | None, passes: int, window: int) -> ReplaySchedule:
    """The schedule of the options ``replay_every`` and ``replay_passes``, for a buffer of
    ``window`` examples: ``'auto'`` the growing one, an int a replay every ``every``
    examples, None none.

    >>> replay_schedule("auto", 1, 100_000).next_after(0)
    1000
    >>> replay_schedule(None, 1, 100_000).enabled
    False
    """
    if every == REPLAY_AUTO:
        return ReplaySchedule.growing(window, passes=passes)
    return ReplaySchedule(every=int(every or 0), passes=passes)
