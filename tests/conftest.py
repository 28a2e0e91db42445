"""Suite-wide hooks."""

from __future__ import annotations

import gc

import pytest

#: not a doctest module: its name, "conftest", is also that of the conftest.py files of
#: the test directories (none is a package), which --doctest-modules imports before it
collect_ignore = ["conftest.py"]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything alive after collection (imported libraries, the collected tests) out
    of the garbage collector's sight: a full collection then looks only at what the tests
    create. river's memory-growth check calls ``gc.collect()`` twice per run, which would
    otherwise traverse the whole heap of the session (about 0.1 s and more each time)."""
    gc.collect()
    gc.freeze()
