"""The kernels compiled ahead of time, each for the argument types the package calls it
with (:mod:`streamlearn._kernels._aot_build` compiles them; :mod:`streamlearn._kernels._aot`
calls them).

An entry is ``(module, qualname, closure values, argument specs)``: a kernel of
``streamlearn._kernels.<module>``, the values its factory closed over (the replay kernel
of each rule code and multiple-update flag), and one spec per argument: ``"i8"``,
``"f8"``, ``"b1"`` (int64, float64, bool scalars), ``"f8[:]"``, ``"i1[:, :]"`` (C-contiguous
writable arrays of that dtype and dimension, ``" readonly"`` appended for arrays the
kernel only reads from read-only buffers), a tuple of specs for a tuple. A call with
other types runs numba's JIT instead; this list is what the commands, the daemon, the
river and scikit-learn adapters pass (collected from ``streamlearn warmup`` and the test
suite under the JIT, then kept by hand). Its entries are spread over :data:`PARTS`
extension modules, compiled in parallel.
"""

# ruff: noqa: E501  (the table: one kernel a line)
from __future__ import annotations

from typing import Any

#: an argument spec (a string, or a tuple of specs)
Spec = Any

#: extension modules ``_aot_0`` ... the entries are spread over (compiled in parallel)
PARTS = 2

_BUFFER = ("i8[:]", "i8[:]", "i1[:]", "f8[:]", "f8[:]", "i4[:]", "f8[:]")
_RULE = ("i8", "f8[:]", "f8", "f8", "b1", "b1")
_COMPACT = ("i8[:]", "i4[:]", "f8[:]", "i1[:]", "f8[:]", "i8[:]")
_REPLAY = ("i8[:]", _BUFFER, "f8[:]", "f8[:]", _RULE, "f8[:]", "i8[:]", _COMPACT, _COMPACT, _COMPACT)  # fmt: skip
_STATE = ("f8[:]", "f8[:]", "i8[:]", "i1[:]", "i4[:]", "f8[:]")
_BANK = ("f8[:, :]", "f8[:, :]", "f8[:, :]", "i8", "f8[:, :]", "f8", "f8", "i8[:, :]", "i8[:]")

#: the (rule code, multiple-update flag) pairs with a replay kernel of their own, the rule
#: a constant of its code (PDM's default: PDM and its replays are most of the work);
#: every other pair runs ``replay_pass``, exported for any rule, which replays about 15 %
#: slower. Each pair costs seconds of every install.
_REPLAYS = [(4, True)]

EXPORTS: list[tuple[str, str, tuple[Any, ...], tuple[Spec, ...]]] = [
    ("answers", "binary_answers", (), ("f8[:]", "f8[:]", "u1[:]", "i8")),
    ("bank", "bank_learn_stream", (), ("i8[:]", "i4[:]", "f8[:]", "i1[:, :]", "f8[:]", "i8[:]", "i8[:]", "f8[:]", "i4[:]", "f8[:]", "i8[:]", "i8", "i1[:, :]", _BANK, "i8", "i8", "b1", "i8[:]")),
    ("bank", "bank_present_unbuffered", (), ("i8[:]", "i4[:]", "f8[:]", "i1[:, :]", "f8[:]", "i8", "i8[:]", _BANK, "i8", "f8[:, :]", "b1")),
    ("bank", "present_history", (), ("i8[:]", "i8[:]", "i8[:]", "f8[:]", "i4[:]", "f8[:]", "i8", "i1[:]", "f8[:]", "f8[:]", "f8[:]", "i8", "f8[:]", "f8", "f8", "i8[:]")),
    ("bank_one", "canonical_decisions", (), ("i8[:]", "f8[:] readonly", "i4[:]", "f8[:]", "f8[:, :]", "f8[:, :]", "i8", "f8", "f8[:]")),
    *[("engine", "_replay_for_rule.<locals>.replay_rule", pair, _REPLAY) for pair in _REPLAYS],
    ("engine", "replay_pass", (), _REPLAY),
    ("engine", "learn_stream", (), ("i8[:]", "i4[:]", "f8[:]", "i1[:]", "f8[:]", _BUFFER, "i8[:]", "i8", "f8[:]", "f8[:]", _RULE, "i8[:]", "i8", "b1", "i8")),
    ("engine", "learn_stream_answering", (), ("i8[:]", "i4[:]", "f8[:]", "i1[:]", "f8[:]", _BUFFER, "i8[:]", "i8", "f8[:]", "f8[:]", _RULE, "i8[:]", "b1", "i8", "i8[:]", "i8[:]", "i4[:]", "f8[:]", "f8", "f8[:]", "i8[:]")),
    ("engine", "present_unbuffered", (), ("i8[:]", "i4[:]", "f8[:]", "i1[:]", "f8[:]", "i8", "i8[:]", "f8[:]", "f8[:]", "f8[:]", _RULE, "i8[:]", "f8[:]", "b1")),
    ("kafka_records", "decode_records", (), ("u1[:] readonly", "i8", "i8", "i8", "i8", "i8", "u1[:]", "i8[:, :]")),
    ("kafka_records", "join_values", (), ("u1[:] readonly", "i8[:]", "i8[:]", "i8", "i8", "u1[:]", "i8[:]")),
    ("many", "learn_models", (), ("f8[:]", "i8[:]", "i4[:]", "i1[:]", "i8[:, :]", "i8[:, :]", "i8[:, :]", "f8[:, :]", "i8[:, :]", "i8[:]", "i4[:]", "f8[:]", "i1[:]", "f8[:]", "b1[:]", "i8[:]")),
    ("margins", "buffer_certificate", (), ("i8[:]", "i8[:]", "i8[:]", "i1[:]", "f8[:]", "i4[:]", "f8[:]", "f8[:]", "f8[:]", "f8", "f8", "f8[:]", "f8[:]", "f8[:]", "f8[:]")),
    ("margins", "optimal_slack_margin", (), ("f8[:]", "f8", "f8")),
    ("ring", "add_combination", (), ("i8[:]", "f8[:]", "i8[:]", "i8[:]", "i4[:]", "f8[:]", "f8[:]")),
    ("ring", "values_all_one", (), ("i8[:]", "i8[:]", "i8[:]", "f8[:]")),
    ("rows", "all_ones", (), ("f8[:]",)),
    ("rows", "canonicalize_rows", (), ("i8[:]", "i4[:]", "f8[:]")),
    ("rows", "check_rows", (), ("i8[:]", "i4[:]", "f8[:]")),
    ("rows", "decision_values", (), ("i8[:]", "i4[:]", "f8[:]", "f8[:]", "f8")),
    ("rows", "row_sqnorms", (), ("i8[:]", "f8[:]")),
    ("rows", "sqnorms_of_rows", (), ("i8[:]", "f8[:]", "i8[:]")),
    ("single", "canonical", (), ("i8", "i8", "f8[:]", "i8[:]")),
    ("single", "decision", (), ("i8", _STATE)),
    ("single", "decision_averaged", (), ("i8", _STATE, "f8[:]", "f8")),
    ("single", "learn_last", (), ("f8", _STATE)),
    ("single", "learn_last_unbuffered", (), ("f8", _STATE)),
    ("single", "learn_last_then_decide", (), ("f8", "i8", _STATE)),
    ("single", "learn_last_then_decide_averaged", (), ("f8", "i8", _STATE, "f8[:]", "f8")),
    ("single", "learn_one", (), ("i8", "f8", _STATE)),
    ("single", "answer_at", (), ("f8", "i8", "i8[:]")),
    ("single", "learn_one_at", (), ("i8", "f8", "i8[:]")),
    ("svmlight", "find_byte", (), ("u1[:] readonly", "i8", "i8")),
    ("svmlight", "parse_lines", (), ("u1[:] readonly", "i8", "i8", "i8")),
]  # fmt: skip


def export_key(module: str, qualname: str, freevars: tuple[Any, ...]) -> str:
    """How a kernel is looked up: its module's last name, its qualified name, and the
    values of its closure if any.

    >>> export_key("streamlearn._kernels.engine", "_replay_for_rule.<locals>.replay_rule",
    ...            (4, True))
    'engine._replay_for_rule.<locals>.replay_rule(4, True)'
    >>> export_key("rows", "row_sqnorms", ())
    'rows.row_sqnorms'
    """
    name = f"{module.rsplit('.', 1)[-1]}.{qualname}"
    return f"{name}{freevars!r}" if freevars else name
