"""Compile the kernels ahead of time into one extension module ``_aot_<part>``: what
``setup.py`` runs, once per part and in parallel, when the package is built or installed.

    python streamlearn/_kernels/_aot_build.py PART OUTPUT_DIR [CPU]

It needs numba, numpy and a C compiler; nothing else of streamlearn's dependencies
(the package's ``__init__`` is not run). Each kernel of
:data:`~streamlearn._kernels._exports.EXPORTS` whose index falls in this part is exported
as ``k<index>`` with the options of its ``@kernel`` decorator (reference counting,
releasing the GIL), ``sources_hash()`` returns the hash of the kernels' sources it was
built from and ``built_for_cpu()`` the processor's (0 for ``generic``). ``CPU`` is
LLVM's name of the processor to compile for: ``host`` (the default) as numba's JIT
does, or ``generic`` for a module that runs on any x86-64.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def _import_kernels_alone() -> None:
    """Make ``streamlearn`` importable as a bare namespace over this source tree, so the
    kernels import without the package's ``__init__`` (and its dependencies)."""
    package = types.ModuleType("streamlearn")
    package.__path__ = [str(_HERE.parent)]
    sys.modules["streamlearn"] = package


def numba_type(spec: Any) -> Any:
    """The numba type of an argument spec of :mod:`~streamlearn._kernels._exports`."""
    from streamlearn._kernels._aot import parse_array

    nt: Any = importlib.import_module("numba.core.types")  # untyped: numba has no stubs

    scalars = {"i8": nt.int64, "f8": nt.float64, "b1": nt.boolean}
    dtypes = {"f8": nt.float64, "i8": nt.int64, "i4": nt.int32, "i1": nt.int8,
              "u1": nt.uint8, "u8": nt.uint64, "b1": nt.boolean}  # fmt: skip
    if isinstance(spec, tuple):
        return nt.Tuple([numba_type(s) for s in spec])
    array = parse_array(spec)
    if array is None:
        return scalars[spec]
    code, ndim, readonly = array
    return nt.Array(dtypes[code], ndim, "C", readonly=readonly)


def faster_inlining() -> bool:
    """Make numba's inliner copy a callee's IR with one memo for all its blocks; whether
    it could (else numba is left as it is).

    numba copies the IR of a function it inlines block by block, and every block's copy
    copies the function's scope, every variable in it, anew: with the kernels' inlined
    helpers most of the build's time. The blocks share one scope; with one memo it is
    copied once. Only the build does this (``tests/kernels/test_aot.py`` checks that the
    modules it makes give what numba's own JIT gives, bit for bit).
    """
    import inspect
    import textwrap

    inliner: Any = importlib.import_module("numba.core.inline_closurecall")
    try:
        source = textwrap.dedent(inspect.getsource(inliner.InlineWorker.inline_ir))
    except (OSError, TypeError, AttributeError):
        return False
    copy_blocks = "copy.deepcopy(the_ir.blocks[block_label])"
    fresh = "kernel_copy.blocks = {}"
    if source.count(copy_blocks) != 1 or source.count(fresh) != 1:
        return False
    source = source.replace(fresh, fresh + "; memo = {}")
    source = source.replace(copy_blocks, "copy.deepcopy(the_ir.blocks[block_label], memo)")
    scope = dict(vars(inliner))
    exec(compile(source, inliner.__file__, "exec"), scope)
    inliner.InlineWorker.inline_ir = scope["inline_ir"]
    return True


def build(part: int, output_dir: str, cpu: str = "host") -> Path:
    """Compile part ``part`` into ``output_dir``; returns the module's path."""
    os.environ["STREAMLEARN_JIT"] = "1"  # the decorators give numba's dispatchers
    # numba compiles the kernels' callees with its JIT while it builds: keep their cache
    # out of the source tree
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="streamlearn-aot-cache-")
    _import_kernels_alone()
    if os.environ.get("STREAMLEARN_AOT_PLAIN_INLINER", "0") == "0":
        faster_inlining()
    pycc: Any = importlib.import_module("numba.pycc")  # untyped: numba has no stubs
    pycc_compiler: Any = importlib.import_module("numba.pycc.compiler")

    from streamlearn._kernels._exports import EXPORTS, PARTS
    from streamlearn._kernels._sources import cpu_signature, kernel_sources, sources_hash

    cc = pycc.CC(f"_aot_{part}")
    cc.output_dir = output_dir
    cc.target_cpu = "" if cpu == "generic" else cpu
    cc.verbose = False
    options: dict[Any, dict[str, Any]] = {}
    for index, (module_name, qualname, freevars, spec) in enumerate(EXPORTS):
        if index % PARTS != part:
            continue
        dispatcher = _kernel(module_name, qualname, freevars)
        options[dispatcher.py_func] = dict(dispatcher.targetoptions)
        signature = tuple(numba_type(s) for s in spec)
        cc.export(f"k{index}", signature)(dispatcher.py_func)
    digest = sources_hash(kernel_sources(_HERE))
    processor = cpu_signature() if cpu == "host" else 0  # 0: runs on any x86-64
    scope: dict[str, Any] = {}
    exec(f"def sources_hash():\n    return {digest}\n", scope)
    exec(f"def built_for_cpu():\n    return {processor}\n", scope)
    cc.export("sources_hash", "i8()")(scope["sources_hash"])
    cc.export("built_for_cpu", "i8()")(scope["built_for_cpu"])

    # each kernel with its own decorator's options, not the module's: numba's reference
    # counting only where a kernel allocates, the GIL released where it says so
    plain_compile = pycc_compiler.compile_extra

    def compile_extra(typing: Any, target: Any, function: Any, *args: Any, **kwargs: Any) -> Any:
        own = options.get(function)
        if own is not None:
            flags = args[2].copy()
            flags.nrt = bool(own.get("_nrt", True))
            flags.release_gil = bool(own.get("nogil", False))
            args = (*args[:2], flags, *args[3:])
        return plain_compile(typing, target, function, *args, **kwargs)

    pycc_compiler.compile_extra = compile_extra
    cc.compile()
    return Path(output_dir) / cc.output_file


def _kernel(module_name: str, qualname: str, freevars: tuple[Any, ...]) -> Any:
    """The dispatcher of an entry: a module's attribute, or for a kernel made by a
    factory (``factory.<locals>.name``) what the factory makes of the closure values."""
    module = importlib.import_module(f"streamlearn._kernels.{module_name}")
    if "<locals>" not in qualname:
        return getattr(module, qualname)
    factory = getattr(module, qualname.split(".<locals>.")[0])
    made = factory(*freevars)
    assert made.py_func.__qualname__ == qualname
    assert tuple(c.cell_contents for c in made.py_func.__closure__ or ()) == freevars
    return made


if __name__ == "__main__":
    started = time.perf_counter()
    path = build(int(sys.argv[1]), sys.argv[2], *sys.argv[3:4])
    print(f"{path.name} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
