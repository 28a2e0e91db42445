"""The one place that calls ``numba.njit``: a typed decorator with the project's options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])


def kernel(*, inline: bool = False, allocates: bool = False) -> Callable[[F], F]:
    """Compile with numba, cached on disk.

    ``allocates=False`` (the default) compiles without numba's reference counting, which
    makes calls that pass arrays cheap but forbids creating arrays inside. ``inline``
    inlines the function into its callers at numba's IR level.
    """
    options: dict[str, Any] = {"cache": True, "_nrt": allocates}
    if inline:
        options["inline"] = "always"

    def wrap(function: F) -> F:
        return cast(F, numba.njit(**options)(function))

    return wrap
