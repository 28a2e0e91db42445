"""Suite-wide hooks."""

from __future__ import annotations

import gc
import os

import pytest

#: every ``streamlearn serve`` a test starts (in or out of process) serves its HTTP API on
#: a free port unless the test names one: two daemons of one test, or a daemon running
#: on the machine, would otherwise meet on the default port
os.environ.setdefault("STREAMLEARN_HTTP_ADDR", "127.0.0.1:0")

#: no conftest.py is a doctest module: they all share the module name "conftest" (no test
#: directory is a package), so --doctest-modules would import one over another when two
#: of their directories are named on one command line
collect_ignore = ["conftest.py"]
collect_ignore_glob = ["*/conftest.py"]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything alive after collection (imported libraries, the collected tests) out
    of the garbage collector's sight: a full collection then looks only at what the tests
    create. river's memory-growth check calls ``gc.collect()`` twice per run, which would
    otherwise traverse the whole heap of the session (about 0.1 s and more each time)."""
    gc.collect()
    gc.freeze()
