"""Compiled kernels: every ``numba.njit`` function of streamlearn lives below this package.

Kernels take arrays and scalars (options coded as ints), mutate preallocated arrays in
place and return counts. Nothing outside this package imports numba, and this package
imports it only when the kernels compiled ahead of time are absent, stale or not wanted
(``STREAMLEARN_JIT=1``), or a call needs the JIT: see :mod:`streamlearn._kernels._jit`.
"""

from __future__ import annotations

from streamlearn._kernels._jit import (
    COMPILING,
    CompileLog,
    announce_compilation,
    set_up_target_for_a_command,
    uses_aot,
    watch_compilation,
)
from streamlearn._kernels.answers import BINARY_ANSWER_CHARS, binary_answers
from streamlearn._kernels.engine import (
    learn_stream,
    learn_stream_answering,
    present_unbuffered,
    replay_pass,
)
from streamlearn._kernels.margins import buffer_certificate
from streamlearn._kernels.ring import values_all_one
from streamlearn._kernels.rows import (
    all_ones,
    canonicalize_rows,
    check_rows,
    decision_values,
    row_sqnorms,
)
from streamlearn._kernels.rules import (
    RULE_AMARGITRON,
    RULE_KOZINEC,
    RULE_PAM,
    RULE_PAUM,
    RULE_PDM,
    RULE_PERCEPTRON,
    RULE_PFM,
    RULE_TMARGITRON,
)

__all__ = [
    "BINARY_ANSWER_CHARS",
    "COMPILING",
    "RULE_AMARGITRON",
    "RULE_KOZINEC",
    "RULE_PAM",
    "RULE_PAUM",
    "RULE_PDM",
    "RULE_PERCEPTRON",
    "RULE_PFM",
    "RULE_TMARGITRON",
    "CompileLog",
    "all_ones",
    "announce_compilation",
    "binary_answers",
    "buffer_certificate",
    "canonicalize_rows",
    "check_rows",
    "decision_values",
    "learn_stream",
    "learn_stream_answering",
    "present_unbuffered",
    "replay_pass",
    "row_sqnorms",
    "set_up_target_for_a_command",
    "uses_aot",
    "values_all_one",
    "watch_compilation",
]
