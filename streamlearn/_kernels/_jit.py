"""The one place that calls ``numba.njit``: a typed decorator with the project's options,
the choice between the kernels compiled ahead of time and numba's JIT, and a watch on
numba's compilations (the seconds a first run spends compiling).

When the ahead-of-time modules built with the package are there and match the kernels'
sources (:mod:`streamlearn._kernels._aot`), :func:`kernel` returns a function that calls
their code, and numba is not imported: a command starts in the time numpy takes. Else
(or with ``STREAMLEARN_JIT=1``) it returns numba's dispatcher, as it always did. A call
with argument types that no exported signature covers goes to the JIT (numba imported
then, and the compilation announced like any other).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from streamlearn._kernels._aot import aot_wrapper, exported_kernels
from streamlearn._kernels._exports import export_key


def numba_cache_dir(
    package: Path, environ: Mapping[str, str], writable: Callable[[Path], bool]
) -> str | None:
    """Where numba should keep the compiled kernels, when not where it would by itself
    (None: ``NUMBA_CACHE_DIR`` as set, or ``__pycache__`` beside the kernels' files).

    A system-wide install (a package directory the user cannot write, and a service
    user whose home is not writable either) left numba without a cache location: it
    raised ``RuntimeError`` at import. Then the user's cache directory is used
    (``$XDG_CACHE_HOME`` or ``~/.cache``), or a directory of the user's in the temporary
    directory.

    >>> numba_cache_dir(Path("/site/streamlearn/_kernels"), {"HOME": "/home/u"},
    ...                 lambda p: str(p).startswith("/home"))
    '/home/u/.cache/streamlearn/numba'
    >>> numba_cache_dir(Path("/src/streamlearn/_kernels"), {}, lambda p: True) is None
    True
    """
    if environ.get("NUMBA_CACHE_DIR"):
        return None
    if writable(package / "__pycache__") or writable(package):
        return None
    base = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME", "~"), ".cache")
    user = Path(os.path.expanduser(base)) / "streamlearn" / "numba"
    if writable(user):
        return str(user)
    return os.path.join(tempfile.gettempdir(), f"streamlearn-numba-{os.getuid()}")


def _writable(path: Path) -> bool:
    """Whether ``path`` can be written, or made (its nearest existing parent written)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return os.access(candidate, os.W_OK)
    return False


_CACHE = numba_cache_dir(Path(__file__).resolve().parent, os.environ, _writable)
if _CACHE is not None:  # before numba reads its configuration, at its import
    os.environ["NUMBA_CACHE_DIR"] = _CACHE

#: numba, once this module imported it (None on the ahead-of-time path)
_numba: Any = None
#: whether this process is a command's, whose target is set up its way (see below)
_command_target = False
#: watches waiting for numba: each is called with it once it is imported
_waiting: list[Callable[[Any], None]] = []


def numba_module() -> Any:
    """numba, imported now if it was not: its cache where :func:`numba_cache_dir` says,
    a command's target set up as :func:`set_up_target_for_a_command` asked, and the
    open compilation watches listening."""
    global _numba
    if _numba is None:
        import numba
        import numba.core.event
        import numba.extending

        if _CACHE is not None:  # if numba was imported before streamlearn
            setattr(numba.config, "CACHE_DIR", _CACHE)  # noqa: B010  # no stub for it
        _numba = numba
        if _command_target:
            _set_up_target()
        for attach in list(_waiting):
            attach(numba)
    return _numba


def set_up_target_for_a_command() -> None:
    """Set up numba's CPU target now, with ``scipy.linalg`` out of its reach: for a
    command's own process, never for a library user's.

    The first cached kernel a process loads sets up numba's CPU target, and that set-up
    imports ``scipy.linalg`` when scipy is installed, only to learn whether ``np.dot``
    may call BLAS: 0.15 to 0.2 s of every command's start, a fifth of a one-pass
    ``learn`` over a million lines. No kernel of streamlearn calls BLAS and a command's
    process compiles no other numba code, so the commands set the target up first with
    ``scipy.linalg`` refused; numba then takes BLAS for absent in that process only (it
    would still compile ``np.dot``, with a loop). ``scipy.linalg`` stays importable
    afterwards. A process that imported it already is left as it is.

    On the ahead-of-time path numba is not imported: this is then done if and when a
    kernel needs the JIT.
    """
    global _command_target
    _command_target = True
    if _numba is not None:
        _set_up_target()


def _set_up_target() -> None:
    if _LINALG in sys.modules:
        return
    from numba.core.registry import cpu_target

    refusal = _RefuseLinalg()
    sys.meta_path.insert(0, refusal)
    try:
        cpu_target.target_context.refresh()
    finally:
        sys.meta_path.remove(refusal)


_LINALG = "scipy.linalg"


class _RefuseLinalg(importlib.abc.MetaPathFinder):
    """An import finder that answers "not installed" for ``scipy.linalg`` and below."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == _LINALG or fullname.startswith(_LINALG + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


F = TypeVar("F", bound=Callable[..., Any])

#: what the command line and the daemon's log say when a run starts compiling kernels
COMPILING = "compiling streamlearn's kernels (first run after installing; then cached)..."


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
    # ``_nrt`` is numba's own target option, the one used here that its documentation does
    # not list: with reference counting on, PDM's replay on Adult takes five times as
    # long (bench_engine_a9a: 2.2 s against 0.44 s), every array passed to a helper being
    # counted in and out. This is the one place that sets it; a numba without it refuses
    # the option by name at the first call of every kernel, so it cannot be lost quietly.
    options: dict[str, Any] = {"cache": True, "_nrt": allocates}
    if inline:
        options["inline"] = "always"
    if releases_gil:
        options["nogil"] = True

    def wrap(function: F) -> F:
        table = exported_kernels()
        if table is None:
            return cast(F, numba_module().njit(**options)(function))
        lazy = _LazyJit(function, options)
        exports = table.get(
            export_key(function.__module__, function.__qualname__, freevars(function))
        )
        made: Any = lazy if exports is None else aot_wrapper(function, exports, lazy.dispatcher)
        _LAZY[id(made)] = (made, lazy)
        return cast(F, made)

    return wrap


def intrinsic(function: Callable[..., Any]) -> Callable[..., Any]:
    """numba's ``extending.intrinsic`` (code generated for the kernels that call it), made
    when numba is: right away on the JIT path; on the ahead-of-time path a stand-in, put
    in its place in the globals of a kernel that needs the JIT (see :class:`_LazyJit`)."""
    if exported_kernels() is None:
        return cast(Callable[..., Any], numba_module().extending.intrinsic(function))
    _INTRINSICS[id(function)] = function
    return function


def freevars(function: Any) -> tuple[Any, ...]:
    """The values of ``function``'s closure (a kernel made by a factory is one per value).

    >>> def factory(code):
    ...     def kernel(x):
    ...         return x + code
    ...     return kernel
    >>> freevars(factory(4)), freevars(factory)
    ((4,), ())
    """
    return tuple(cell.cell_contents for cell in function.__closure__ or ())


def uses_aot() -> bool:
    """Whether the kernels run the code compiled ahead of time (numba only for calls
    with other argument types)."""
    return exported_kernels() is not None


#: every kernel made on the ahead-of-time path, by id: (what :func:`kernel` returned,
#: its JIT)
_LAZY: dict[int, tuple[Any, _LazyJit]] = {}
#: every intrinsic's stand-in on the ahead-of-time path, by id
_INTRINSICS: dict[int, Any] = {}


class _LazyJit:
    """A kernel's JIT, made at its first call: numba's dispatcher for a copy of the
    function whose globals hold the JIT of every kernel it calls (numba compiles calls to
    dispatchers, not to the functions that stand for them on the ahead-of-time path).
    Called itself, it stands for a kernel that has no exported signature (one only
    other kernels call)."""

    def __init__(self, function: Any, options: dict[str, Any]) -> None:
        self.py_func = function
        self._options = options
        self._jit: Any = None
        functools.update_wrapper(self, function)

    def dispatcher(self) -> Any:
        if self._jit is None:
            function = self.py_func
            scope = dict(function.__globals__)
            copy = types.FunctionType(
                function.__code__, scope, function.__name__, function.__defaults__,
                function.__closure__,
            )  # fmt: skip
            copy.__qualname__ = function.__qualname__
            copy.__module__ = function.__module__
            copy.__doc__ = function.__doc__
            self._jit = numba_module().njit(**self._options)(copy)
            for name, value in scope.items():
                found = _LAZY.get(id(value))
                if found is not None and found[0] is value:
                    scope[name] = found[1].dispatcher()
                elif _INTRINSICS.get(id(value)) is value:
                    scope[name] = _made_intrinsic(value)
        return self._jit

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.dispatcher()(*args, **kwargs)


@functools.cache
def _made_intrinsic(function: Any) -> Any:
    """The intrinsic of a stand-in of :func:`intrinsic` (made once)."""
    return numba_module().extending.intrinsic(function)


@dataclass
class CompileLog:
    """What :func:`watch_compilation` saw: how many of streamlearn's kernels numba
    compiled (callees included) and the wall seconds the outermost compilations took."""

    kernels: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for the command line and the daemon's log.

        >>> CompileLog(kernels=3, seconds=2.5).summary()
        'compiled 3 kernels in 2.5 s'
        """
        return f"compiled {self.kernels} kernels in {self.seconds:.1f} s"


@contextmanager
def watch_compilation(on_first: Callable[[], None]) -> Iterator[CompileLog]:
    """Within the block, call ``on_first`` once, when numba starts compiling one of
    streamlearn's kernels instead of loading it from its cache, and count them.

    The first run after installing (or after a kernel's source changed) compiles for
    seconds before any work is done; a command line says so rather than look stuck.
    A kernel already compiled or cached, or compiled ahead of time, is not reported. On
    the ahead-of-time path numba is imported only if a call needs the JIT; the watch
    starts listening then.

    >>> from streamlearn._kernels.rows import row_sqnorms
    >>> import numpy as np
    >>> _ = row_sqnorms(np.array([0, 1]), np.array([2.0]))  # compiled or cached now
    >>> with watch_compilation(lambda: print("compiling")) as log:
    ...     _ = row_sqnorms(np.array([0, 1]), np.array([3.0]))
    >>> log.kernels
    0
    """
    log = CompileLog()
    listeners: list[Any] = []

    def attach(numba: Any) -> None:
        listener = _listener_class(numba)(log, on_first)
        numba.core.event.register("numba:compile", listener)
        listeners.append(listener)

    if _numba is not None:
        attach(_numba)
    else:
        _waiting.append(attach)
    try:
        yield log
    finally:
        if attach in _waiting:
            _waiting.remove(attach)
        for listener in listeners:
            _numba.core.event.unregister("numba:compile", listener)


@contextmanager
def announce_compilation(say: Callable[[str], None]) -> Iterator[CompileLog]:
    """:func:`watch_compilation` that tells ``say`` :data:`COMPILING` when a kernel starts
    compiling and, after the block, :meth:`CompileLog.summary` if any did: what the
    command line prints and the daemon logs on a first run."""
    with watch_compilation(lambda: say(COMPILING)) as log:
        yield log
    if log.kernels:
        say(log.summary())


@functools.cache
def _listener_class(numba: Any) -> Any:
    """The listener class, made once numba is imported (it derives from numba's)."""

    class _CompileListener(numba.core.event.Listener):  # type: ignore[misc]
        """Counts the compilations of streamlearn's kernels; numba nests a callee's inside
        its caller's, so only the outermost ones are timed."""

        def __init__(self, log: CompileLog, on_first: Callable[[], None]) -> None:
            self._log = log
            self._on_first = on_first
            self._depth = 0
            self._started = 0.0

        def on_start(self, event: Any) -> None:
            if not _is_ours(event):
                return
            if self._log.kernels == 0:
                self._on_first()
            self._log.kernels += 1
            if self._depth == 0:
                self._started = time.perf_counter()
            self._depth += 1

        def on_end(self, event: Any) -> None:
            if not _is_ours(event):
                return
            self._depth -= 1
            if self._depth == 0:
                self._log.seconds += time.perf_counter() - self._started

    return _CompileListener


def _is_ours(event: Any) -> bool:
    function = getattr(event.data.get("dispatcher"), "py_func", None)
    return getattr(function, "__module__", "").startswith("streamlearn.")
