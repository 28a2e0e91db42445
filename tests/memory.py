"""Memory measures the tests share."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any


def peak_allocated(call: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes Python allocated at the peak of ``call`` (numpy's arrays included), and what
    it returned."""
    tracemalloc.start()
    try:
        result = call()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()
