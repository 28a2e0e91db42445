"""The kernels compiled ahead of time: loading the extension modules that ``setup.py``
builds (``_aot_0``, ``_aot_1``, ..., see :mod:`streamlearn._kernels._aot_build`) and
calling their functions only with the argument types they were compiled for.

numba's AOT compiler writes extension modules that need numpy and no numba; a command
that finds them imports no numba and compiles nothing. Each module carries a hash of
the kernels' sources (:mod:`streamlearn._kernels._sources`): modules built from other
sources than the ones beside them (a kernel edited since the build) are not used, and
a line on the ``streamlearn.kernels`` logger says so. ``STREAMLEARN_JIT=1`` leaves them unused.

An exported function checks no more than the size of an array's items: called with an
array of another dtype, layout or writability, or with another kind of scalar, it would
read memory wrongly. So every kernel with exports is wrapped in a function that checks
each argument against each exported signature of :data:`EXPORTS` and calls the first
that fits, and the JIT for any other call (:func:`aot_wrapper`).
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from streamlearn._kernels._exports import EXPORTS, PARTS, Spec, export_key
from streamlearn._kernels._sources import cpu_signature, kernel_sources, sources_hash

log = logging.getLogger("streamlearn.kernels")


#: the variable that asks for numba's JIT instead of the kernels compiled at install
JIT_VARIABLE = "STREAMLEARN_JIT"
#: the variable the install reads (setup.py): the processor to compile the kernels for
CPU_VARIABLE = "STREAMLEARN_AOT_CPU"


def forced_jit(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``STREAMLEARN_JIT`` asks for the JIT (any value but empty or ``0``).

    >>> forced_jit({"STREAMLEARN_JIT": "1"}), forced_jit({"STREAMLEARN_JIT": "0"}), forced_jit({})
    (True, False, False)
    """
    return environ.get(JIT_VARIABLE, "") not in ("", "0")


#: why the AOT modules are not used (None: they are, or have not been looked for)
unused_because: str | None = None


@functools.cache
def exported_kernels() -> dict[str, list[tuple[Spec, Callable[..., Any]]]] | None:
    """:func:`load_exports`, once a process, unless ``STREAMLEARN_JIT`` asks for the JIT
    (None: the JIT is used)."""
    global unused_because
    if forced_jit():
        unused_because = "STREAMLEARN_JIT is set"
        return None
    return load_exports()


def load_exports() -> dict[str, list[tuple[Spec, Callable[..., Any]]]] | None:
    """Every exported function by kernel key (see :func:`export_key`), with the signature
    it takes; None when the modules are absent, stale or incomplete (then
    :data:`unused_because` says why, and the reason was logged unless they are absent)."""
    global unused_because
    modules = []
    for part in range(PARTS):
        try:
            modules.append(importlib.import_module(f"streamlearn._kernels._aot_{part}"))
        except ImportError as error:
            unused_because = f"no ahead-of-time kernels ({error})"
            return None
    expected = sources_hash(kernel_sources())
    for module in modules:
        if int(module.sources_hash()) != expected:
            unused_because = (
                f"the ahead-of-time kernels in {Path(module.__file__ or '').parent} were "
                "built from other kernel sources than these; using numba's JIT (rebuild "
                "them: pip install -e .)"
            )
            log.warning("%s", unused_because)
            return None
    here = cpu_signature()
    for module in modules:
        built_for = int(getattr(module, "built_for_cpu", lambda: 0)())
        if built_for and here and built_for != here:
            unused_because = (
                "the ahead-of-time kernels were compiled for another processor (its "
                "instructions may be missing here); using numba's JIT (rebuild them here, "
                "or build with STREAMLEARN_AOT_CPU=generic for any x86-64)"
            )
            log.warning("%s", unused_because)
            return None
    table: dict[str, list[tuple[Spec, Callable[..., Any]]]] = {}
    for index, (module_name, qualname, freevars, spec) in enumerate(EXPORTS):
        function = None
        for module in modules:
            function = getattr(module, f"k{index}", None)
            if function is not None:
                break
        if function is None:
            unused_because = f"the ahead-of-time kernels lack export k{index}; using the JIT"
            log.warning("%s", unused_because)
            return None
        key = export_key(module_name, qualname, freevars)
        table.setdefault(key, []).append((spec, function))
    unused_because = None
    return table


_C_CONTIGUOUS, _ALIGNED, _WRITEABLE = 0x1, 0x100, 0x400
_DTYPES = {
    "f8": np.dtype(np.float64),
    "i8": np.dtype(np.int64),
    "i4": np.dtype(np.int32),
    "i1": np.dtype(np.int8),
    "u1": np.dtype(np.uint8),
    "u8": np.dtype(np.uint64),
    "b1": np.dtype(np.bool_),
}
#: the Python and numpy scalars each scalar code takes (converted exactly)
_SCALARS = {
    "i8": "_INTS",
    "f8": "_FLOATS",
    "b1": "_BOOLS",
}
_NAMESPACE: dict[str, Any] = {
    "_ndarray": np.ndarray,
    "_INTS": frozenset({int, np.int64}),
    "_FLOATS": frozenset({float, int, np.float64, np.int64}),
    "_BOOLS": frozenset({bool, np.bool_}),
    **{f"_D_{code}": dtype for code, dtype in _DTYPES.items()},
}


def parse_array(spec: str) -> tuple[str, int, bool] | None:
    """``(dtype code, ndim, readonly)`` of an array spec, None for a scalar.

    >>> parse_array("f8[:]"), parse_array("u1[:] readonly"), parse_array("i1[:, :]")
    (('f8', 1, False), ('u1', 1, True), ('i1', 2, False))
    >>> parse_array("i8") is None
    True
    """
    if "[" not in spec:
        return None
    code, rest = spec.split("[", 1)
    return code, rest.count(":"), rest.endswith("readonly")


def condition(name: str, spec: Any) -> str:
    """A Python expression true when the value ``name`` fits ``spec``.

    >>> condition("a", "i8")
    'type(a) in _INTS'
    >>> condition("t", ("b1", "f8[:] readonly"))  # doctest: +NORMALIZE_WHITESPACE
    '(type(t) is tuple and len(t) == 2 and type(t[0]) in _BOOLS and (type(t[1]) is
    _ndarray and t[1].dtype == _D_f8 and t[1].ndim == 1 and t[1].flags.num & 257 == 257))'
    """
    if isinstance(spec, tuple):
        parts = [f"type({name}) is tuple", f"len({name}) == {len(spec)}"]
        parts += [condition(f"{name}[{i}]", s) for i, s in enumerate(spec)]
        return "(" + " and ".join(parts) + ")"
    array = parse_array(spec)
    if array is None:
        return f"type({name}) in {_SCALARS[spec]}"
    code, ndim, readonly = array
    mask = _C_CONTIGUOUS | _ALIGNED | (0 if readonly else _WRITEABLE)
    return (
        f"(type({name}) is _ndarray and {name}.dtype == _D_{code} and {name}.ndim == {ndim}"
        f" and {name}.flags.num & {mask} == {mask})"
    )


def aot_wrapper(
    function: Any,
    exports: list[tuple[Spec, Callable[..., Any]]],
    fallback: Callable[[], Callable[..., Any]],
) -> Callable[..., Any]:
    """A function with ``function``'s parameters that calls the first exported function
    whose signature the arguments fit, else ``fallback()`` (the JIT's dispatcher).

    Its globals are ``function``'s module's, so the module's doctests still find it.
    """
    code = function.__code__
    names = list(code.co_varnames[: code.co_argcount])
    defaults = function.__defaults__ or ()
    params = [
        f"{n}=_default{i - (len(names) - len(defaults))}" if i >= len(names) - len(defaults) else n
        for i, n in enumerate(names)
    ]
    args = ", ".join(names)
    body = []
    for i, (spec, _) in enumerate(exports):
        checks = " and ".join(condition(n, s) for n, s in zip(names, spec, strict=True)) or "True"
        body.append(f"        if {checks}:\n            return _export{i}({args})")
    free = [f"_export{i}" for i in range(len(exports))]
    free += [f"_default{i}" for i in range(len(defaults))]
    free += ["_fallback", *_NAMESPACE]
    signatures: list[Any] = [spec for spec, _ in exports]

    def jit_call() -> Callable[..., Any]:
        """The JIT, keeping ``signatures`` up to date with what it compiles."""
        dispatcher = fallback()

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return dispatcher(*args, **kwargs)
            finally:
                signatures[len(exports) :] = list(getattr(dispatcher, "signatures", ()))

        return call

    source = (
        f"def _make({', '.join(free)}):\n"
        f"    def {function.__name__}({', '.join(params)}):\n"
        + "\n".join(body)
        + f"\n        return _fallback()({args})\n"
        f"    return {function.__name__}\n"
    )
    scope: dict[str, Any] = {}
    exec(compile(source, f"<aot wrapper of {function.__qualname__}>", "exec"), scope)
    made = scope["_make"](*(f for _, f in exports), *defaults, jit_call, *_NAMESPACE.values())
    # rebuilt with the kernel's module's globals (its closure keeps what it calls)
    wrapper = types.FunctionType(
        made.__code__, function.__globals__, function.__name__, made.__defaults__,
        made.__closure__,
    )  # fmt: skip
    wrapper.__qualname__ = function.__qualname__
    wrapper.__module__ = function.__module__
    wrapper.__doc__ = function.__doc__
    wrapper.__wrapped__ = function  # type: ignore[attr-defined]
    wrapper.py_func = function  # type: ignore[attr-defined]  # as numba's dispatchers have
    wrapper.exports = [f for _, f in exports]  # type: ignore[attr-defined]
    # the exported signatures, then what the JIT compiled (as numba's dispatchers list)
    wrapper.signatures = signatures  # type: ignore[attr-defined]
    return wrapper
