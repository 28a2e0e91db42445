"""The hash of the kernels' sources that each module compiled ahead of time embeds (no
imports beyond the standard library: ``setup.py`` reads it before anything is built)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

_HERE = Path(__file__).resolve().parent

#: what the hash leaves out: the loader, the builder and the package's re-exports
#: (they decide how kernels are found, not what they compute)
NOT_KERNELS = {"__init__.py", "_aot.py", "_aot_build.py", "_jit.py", "_sources.py"}


def kernel_sources(directory: Path = _HERE) -> list[Path]:
    """The files whose text decides the compiled code: every module of the kernels
    package but the loader's, and ``streamlearn/types.py`` (constants they compile in)."""
    files = sorted(p for p in directory.glob("*.py") if p.name not in NOT_KERNELS)
    return [*files, directory.parent / "types.py"]


def sources_hash(files: Iterable[Path]) -> int:
    """A 63-bit hash of the files' names and contents (what the modules embed).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "k.py"
    ...     _ = p.write_text("x = 1")
    ...     first = sources_hash([p])
    ...     _ = p.write_text("x = 2")
    ...     first != sources_hash([p])
    True
    """
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return int.from_bytes(digest.digest()[:8], "little") >> 1


def cpu_signature(cpuinfo: Path = Path("/proc/cpuinfo")) -> int:
    """A 63-bit hash of this processor's instruction-set flags (Linux), 0 where they
    cannot be read: modules compiled for one processor (``host``) may use instructions
    another lacks, and stop the process on its first call there.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     info = Path(d) / "cpuinfo"
    ...     _ = info.write_text("processor : 0" + chr(10) + "flags : sse2 avx2" + chr(10))
    ...     same = cpu_signature(info) == cpu_signature(info)
    ...     first = cpu_signature(info)
    ...     _ = info.write_text("flags : sse2" + chr(10))
    ...     same and first != cpu_signature(info) and first != 0
    True
    """
    try:
        text = cpuinfo.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            digest = hashlib.sha256(" ".join(sorted(value.split())).encode()).digest()
            return int.from_bytes(digest[:8], "little") >> 1
    return 0
