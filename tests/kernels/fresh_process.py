"""Running a script in a new Python process with numba's cache in a given directory:
what a first run after installing (an empty cache) or a later one (a filled cache) sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_with_numba_cache(script: str, cache: Path, timeout: float = 300) -> dict[str, Any]:
    """Run ``script`` with ``NUMBA_CACHE_DIR=cache`` and numba's JIT (not the kernels
    compiled ahead of time); return the JSON object it printed on its last line of
    output."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "NUMBA_CACHE_DIR": str(cache), "STREAMLEARN_JIT": "1"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))
