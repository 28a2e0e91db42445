"""streamlearn's build: the metadata is in pyproject.toml; this adds the kernels compiled
ahead of time (numba's AOT compiler, see streamlearn/_kernels/_aot_build.py), so that no
command compiles them at its first run and none imports numba.

The parts (``streamlearn._kernels._aot_<n>``) compile in parallel processes. Without a C
compiler, or with a numba that has no AOT compiler any more, the build says so and goes
on: the kernels are then compiled by numba's JIT at their first use (announced), as
``STREAMLEARN_JIT=1`` asks for anyway. ``STREAMLEARN_AOT=0`` skips the ahead-of-time
build; ``STREAMLEARN_AOT_CPU`` names the processor to compile for (``host``, the default,
as numba's JIT does; ``generic`` for a wheel that runs on any x86-64).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "streamlearn" / "_kernels"


def _sources_hash() -> int:
    """The hash of the kernels' sources (streamlearn/_kernels/_sources.py, run alone)."""
    scope: dict[str, object] = {"__name__": "_sources", "__file__": str(KERNELS / "_sources.py")}
    exec(compile((KERNELS / "_sources.py").read_text(), "_sources.py", "exec"), scope)
    return int(scope["sources_hash"](scope["kernel_sources"](KERNELS)))  # type: ignore[operator]


def _built_from(path: Path) -> int | None:
    """The sources hash a built module embeds (None: none there, or unreadable)."""
    if not path.exists():
        return None
    probe = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location(sys.argv[1], sys.argv[2])\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "print(module.sources_hash())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, path.name.split(".")[0], str(path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


def _parts() -> int:
    """``PARTS`` of streamlearn/_kernels/_exports.py, read without importing it."""
    tree = ast.parse((KERNELS / "_exports.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", None) == "PARTS" for t in targets):
                return int(ast.literal_eval(node.value))  # type: ignore[arg-type]
    raise RuntimeError("no PARTS in streamlearn/_kernels/_exports.py")


class BuildKernels(build_ext):
    """Compile every part with streamlearn/_kernels/_aot_build.py, all at once."""

    def build_extensions(self) -> None:
        if os.environ.get("STREAMLEARN_AOT", "1") == "0":
            print("STREAMLEARN_AOT=0: kernels not compiled ahead of time", file=sys.stderr)
            return
        cpu = os.environ.get("STREAMLEARN_AOT_CPU", "host")
        started = time.perf_counter()
        current = _sources_hash()
        targets = [Path(self.get_ext_fullpath(ext.name)) for ext in self.extensions]
        if all(_built_from(target) == current for target in targets):
            print("streamlearn's kernels were compiled ahead of time from these sources already",
                  file=sys.stderr)  # fmt: skip
            return
        jobs = []
        for ext, target in zip(self.extensions, targets, strict=True):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)  # never a stale module beside new sources
            part = ext.name.rsplit("_", 1)[1]
            command = [
                sys.executable,
                str(KERNELS / "_aot_build.py"),
                part,
                str(target.parent),
                cpu,
            ]
            jobs.append((ext, target, subprocess.Popen(command)))
        failed = [ext.name for ext, _, job in jobs if job.wait() != 0]
        missing = [str(t) for _, t, _ in jobs if not t.exists()]
        if failed or missing:
            for _, target, _ in jobs:  # all or none: a part alone is not used
                target.unlink(missing_ok=True)
            print(
                "warning: streamlearn's kernels were not compiled ahead of time "
                f"({failed or missing}); numba's JIT compiles them at their first use instead",
                file=sys.stderr,
            )
            return
        seconds = time.perf_counter() - started
        print(f"compiled streamlearn's kernels ahead of time in {seconds:.1f} s", file=sys.stderr)


setup(
    ext_modules=[Extension(f"streamlearn._kernels._aot_{n}", sources=[]) for n in range(_parts())],
    cmdclass={"build_ext": BuildKernels},
)
