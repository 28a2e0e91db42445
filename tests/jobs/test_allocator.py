"""The daemon's allocator setting: freed blocks of megabytes are reused, not faulted in
again (checked in a fresh interpreter through its page-fault count)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from streamlearn.jobs.allocator import keep_freed_memory

PROGRAM = """
import sys
import numpy as np
from streamlearn.jobs.allocator import keep_freed_memory

def minor_faults():
    return int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[7])

def poll(scale):  # the arrays of a daemon's poll, of varying size, freed out of order
    indices = np.ones(int(1.4e6 * scale), dtype=np.int32)
    values = np.ones(int(1.4e6 * scale))
    joined = np.ones(int(11e6 * scale), dtype=np.uint8)
    indptr = np.ones(int(1e5 * scale), dtype=np.int64)
    del joined
    batch = np.ones(int(12e6 * scale), dtype=np.uint8)
    return indices.sum() + values.sum() + indptr.sum() + batch.sum()

applied = keep_freed_memory() if sys.argv[1] == "keep" else False
rng = np.random.default_rng(0)
poll(1.0)
before = minor_faults()
for _ in range(20):
    poll(rng.uniform(0.8, 1.2))
print(int(applied), minor_faults() - before)
"""


def faults_of(mode: str) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True
    ).stdout.split()
    return bool(int(out[0])), int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux's")
def test_freed_blocks_are_reused_instead_of_faulted_in_again() -> None:
    applied, kept = faults_of("keep")
    assert applied
    _, default = faults_of("default")
    # 20 polls of about 35 MB: mostly faulted in again by default, mostly reused when kept
    assert default > 10_000
    assert kept * 5 < default


def test_a_threshold_set_by_the_user_is_left_alone() -> None:
    assert not keep_freed_memory({"MALLOC_MMAP_THRESHOLD_": "65536"})
