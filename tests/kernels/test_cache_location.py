"""Where numba keeps the kernels when the installed package cannot be written."""

from __future__ import annotations

import os
from pathlib import Path

from streamlearn._kernels._jit import numba_cache_dir

PACKAGE = Path("/usr/lib/python3/site-packages/streamlearn/_kernels")


def test_a_writable_package_or_a_set_variable_keep_numbas_own_choice() -> None:
    assert numba_cache_dir(PACKAGE, {}, lambda path: True) is None
    assert numba_cache_dir(PACKAGE, {"NUMBA_CACHE_DIR": "/x"}, lambda path: False) is None


def test_a_read_only_install_caches_in_the_users_cache_directory() -> None:
    """A system-wide install: numba found no cache location and raised RuntimeError."""
    home = {"HOME": "/home/ann"}
    assert numba_cache_dir(PACKAGE, home, lambda p: str(p).startswith("/home")) == (
        "/home/ann/.cache/streamlearn/numba"
    )
    xdg = {**home, "XDG_CACHE_HOME": "/var/cache/ann"}
    assert numba_cache_dir(PACKAGE, xdg, lambda p: str(p).startswith("/var")) == (
        "/var/cache/ann/streamlearn/numba"
    )


def test_without_a_writable_home_a_directory_of_the_user_in_tmp() -> None:
    """A service user (systemd's DynamicUser) has no home it can write."""
    found = numba_cache_dir(PACKAGE, {"HOME": "/nonexistent"}, lambda path: False)
    assert found is not None and found.endswith(f"streamlearn-numba-{os.getuid()}")
