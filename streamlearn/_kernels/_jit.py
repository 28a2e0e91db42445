"""The one place that calls ``numba.njit``: a typed decorator with the project's options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])


def kernel(
    *, inline: bool = False, allocates: bool = False, releases_gil: bool = False
) -> Callable[[F], F]:
    """Compile with numba, cached on disk.

    ``allocates=False`` (the default) compiles without numba's reference counting, which
    makes calls that pass arrays cheap but forbids creating arrays inside. ``inline``
    inlines the function into its callers at numba's IR level. ``releases_gil`` lets
    other Python threads run during a call (e.g. a network client's I/O thread while a
    large buffer is parsed); only for kernels whose arrays no other thread touches.
    """
    options: dict[str, Any] = {"cache": True, "_nrt": allocates}
    if inline:
        options["inline"] = "always"
    if releases_gil:
        options["nogil"] = True

    def wrap(function: F) -> F:
        return cast(F, numba.njit(**options)(function))

    return wrap
