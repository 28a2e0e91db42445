"""The kernels compiled ahead of time: built by the install, used without numba, the
same bit for bit as the JIT, left alone when stale or when the JIT is asked for."""

from __future__ import annotations

import ast
import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from streamlearn._kernels import _aot, _jit, _sources, uses_aot
from streamlearn._kernels.rows import row_sqnorms

HERE = Path(__file__).resolve().parent


def no_c_compiler() -> bool:
    """Whether this machine has no C compiler (the one Python was built with, or cc):
    its install then builds no kernels ahead of time, and says so (setup.py)."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(compiler) is None and shutil.which("cc") is None


needs_aot = pytest.mark.skipif(
    _aot.forced_jit() or (not uses_aot() and no_c_compiler()),
    reason="STREAMLEARN_JIT is set, or no C compiler built the kernels ahead of time: "
    "the suite runs on the JIT",
)


def run(code: str, *, jit: bool = False, timeout: float = 120) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; the JSON object it printed last."""
    env = {k: v for k, v in os.environ.items() if k != "STREAMLEARN_JIT"}
    if jit:
        env["STREAMLEARN_JIT"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True,
        timeout=timeout, check=True, cwd=HERE,
    )  # fmt: skip
    return dict(json.loads(done.stdout.splitlines()[-1]))


@needs_aot
def test_the_install_built_the_kernels_and_they_are_used() -> None:
    assert uses_aot(), _aot.unused_because
    assert _aot.unused_because is None
    assert hasattr(row_sqnorms, "exports")  # the wrapper, not numba's dispatcher


@needs_aot
def test_learn_runs_without_importing_numba() -> None:
    found = run(
        "import io, json, sys\n"
        "from streamlearn.cli import main\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'+1 1:0.5 3:1\\n-1 2:1\\n'))\n"
        "sys.argv = ['streamlearn', 'learn', '--quiet']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as stop:\n"
        "    assert not stop.code, stop.code\n"
        "print(json.dumps({'numba': sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('numba', 'llvmlite'))}))\n"
    )
    assert found == {"numba": []}


@needs_aot
@pytest.mark.slow
def test_every_exported_kernel_gives_bit_for_bit_what_the_jit_gives() -> None:
    """Every call of every path of ``streamlearn warmup`` (and rarer ones) repeated by the
    JIT on copies of its arguments: the same return values and the same arrays after."""
    done = subprocess.run(
        [sys.executable, str(HERE / "aot_twin_run.py")],
        env={k: v for k, v in os.environ.items() if k != "STREAMLEARN_JIT"},
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["differences"] == []
    assert found["called"] == found["all"]  # every exported kernel ran, both ways
    assert found["fallbacks"] == []  # and every call of the paths found its export


@needs_aot
def test_every_kernel_the_package_calls_from_python_is_compiled_ahead_of_time() -> None:
    """A kernel imported outside ``_kernels`` (hence called from Python) but missing
    from ``_exports.py`` would import numba and compile at its first call: the
    svmlight parser's ``find_byte``, on a line cut between two chunks of a pipe, did."""
    package = HERE.parents[1] / "streamlearn"
    missing = []
    for path in package.rglob("*.py"):
        if "_kernels" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "streamlearn._kernels"
            )):  # fmt: skip
                continue
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if isinstance(value, _jit._LazyJit):  # a kernel without exports
                    missing.append(f"{path.relative_to(package)}: {alias.name}")
    assert missing == []


def test_streamlearn_jit_leaves_the_modules_unused() -> None:
    found = run(
        "import json, sys\n"
        "from streamlearn._kernels import _aot, uses_aot\n"
        "print(json.dumps({'aot': uses_aot(), 'why': _aot.unused_because,"
        " 'numba': 'numba' in sys.modules}))\n",
        jit=True,
    )
    assert found == {"aot": False, "why": "STREAMLEARN_JIT is set", "numba": True}


@needs_aot
def test_modules_built_from_other_sources_are_not_used_and_a_line_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    edited = _sources.sources_hash(_sources.kernel_sources()) ^ 1  # as after editing a kernel
    monkeypatch.setattr(_aot, "sources_hash", lambda files: edited)
    with caplog.at_level(logging.WARNING, logger="streamlearn.kernels"):
        assert _aot.load_exports() is None
    assert "built from other kernel sources" in caplog.text
    monkeypatch.undo()
    assert _aot.load_exports() is not None


@needs_aot
def test_modules_compiled_for_another_processor_are_not_used_and_a_line_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Compiled for the build host's processor, a module may hold instructions another
    lacks (an image built on one machine, run on an older one): the JIT runs there."""
    other = _sources.cpu_signature() ^ 1
    monkeypatch.setattr(_aot, "cpu_signature", lambda: other)
    with caplog.at_level(logging.WARNING, logger="streamlearn.kernels"):
        assert _aot.load_exports() is None
    assert "compiled for another processor" in caplog.text


@needs_aot
def test_arguments_no_export_takes_go_to_the_jit_not_misread() -> None:
    """int32 offsets have the size of no exported signature's; float32 values and int64
    offsets as float64 would be misread by the exported code, which checks sizes only."""
    indptr, values = np.array([0, 2, 3]), np.array([3.0, 4.0, 2.0])
    expected = np.array([25.0, 4.0])
    assert np.array_equal(row_sqnorms(indptr, values), expected)
    assert np.array_equal(row_sqnorms(indptr.astype(np.int32), values), expected)
    assert np.array_equal(row_sqnorms(indptr, values.astype(np.float32)), expected)
    assert np.array_equal(row_sqnorms(indptr, values[::-1][::-1].copy()), expected)
    strided = np.array([3.0, 0.0, 4.0, 0.0, 2.0, 0.0])[::2]  # not contiguous
    assert np.array_equal(row_sqnorms(indptr, strided), expected)


def test_a_wrapper_keeps_the_kernels_name_and_its_module_for_doctests() -> None:
    assert row_sqnorms.__name__ == "row_sqnorms"
    assert row_sqnorms.__module__ == "streamlearn._kernels.rows"
    assert row_sqnorms.__doc__ == _jit_function_doc()


def _jit_function_doc() -> str | None:
    return getattr(row_sqnorms, "py_func", row_sqnorms).__doc__
