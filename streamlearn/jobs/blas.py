"""One BLAS thread for the daemon: numpy's dot products run on the calling thread.

numpy hands a dot product of two long vectors to BLAS (``alpha @ alpha`` over a window
of examples, a certificate's norms, a calibration's gradient, a poll's values checked
for infinities), and OpenBLAS splits one of more than about 10,000 elements over its
thread pool. After each such call its helper threads spin, waiting for more work, for
about 0.1 s before they sleep: a call of a fraction of a millisecond costs a tenth of a
CPU second. The daemon makes such calls a few times a second (a snapshot's certificate,
a replay's, a learning group's records published and folded in), so that the helpers
spun for about half of its CPU time (benchmarks/bench_group.py on 3 copies of Adult:
the plain daemon 0.30 of its 0.64 CPU s, a lone member of a group 0.28 of 0.69), on
cores that its own threads (decoding ahead, the Kafka clients' I/O), and the other
members of a group on the same machine, needed. :func:`one_blas_thread` limits BLAS to
the calling thread, where such a call takes a few tens of microseconds.

A user who sets the thread count of BLAS in the environment keeps that choice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from threadpoolctl import threadpool_limits

#: the variables that set BLAS's thread count (OpenBLAS, MKL, BLIS, OpenMP)
_USER_SETTINGS = (
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "OMP_NUM_THREADS",
)


def one_blas_thread(environ: Mapping[str, str] = os.environ) -> bool:
    """Make the BLAS libraries loaded in the process (numpy's) run on one thread;
    returns whether it was changed (not when the environment sets a thread count).

    >>> one_blas_thread({"OPENBLAS_NUM_THREADS": "4"})
    False
    """
    if any(name in environ for name in _USER_SETTINGS):
        return False
    # kept past this call: the limit holds until the process ends
    threadpool_limits(limits=1, user_api="blas")
    return True
