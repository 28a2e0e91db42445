"""The package's modules meet only through public names, and only ``learn/`` knows which
kind of model it holds.

A module that reads or writes another module's underscore attributes ties the two
together in a way no signature shows: renaming a private field of the learner would
break the bank or the river adapter with no error until run. And the daemon, the jobs
and the adapters hold a :class:`~streamlearn.learn.Model`, whichever kind it is: a
branch on the kind outside ``learn/`` would be a second place to change for every new
kind.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "streamlearn"
#: a library's internals a module builds on, each with its reason. Only kafka-python's,
#: whose version pyproject.toml pins (<3.1): the fetcher that hands over whole record
#: batches (kafka_blocks.py checks them at start and falls back to the stock consumer),
#: the consumer's client and coordinator for the partition lag and the group's state,
#: the coordinator's join task (a join that finished between two polls is applied, not
#: dropped: kafka.py's _keep_finished_joins), and the producer's sender to close it
#: without waiting on a broker that is gone. And the standard library's ``os._exit``
#: (documented, underscore and all): a second stop signal, or a stop past its time,
#: ends the process at once
THIRD_PARTY_INTERNALS = {
    "sources/kafka_blocks.py": {
        "_maybe_uncompress",
        "_buffer",
        "_pos",
        "_decompressed",
        "_fetcher",
    },
    "jobs/serve.py": {"_exit"},
    "sources/kafka.py": {"_client", "_coordinator", "_join_task"},
    "sources/kafka_sink.py": {"_sender", "_closed"},
}
#: the classes that say which kind a model is
MODEL_KINDS = {"ModelBank", "LinearLearner", *{
    "Perceptron", "PAM", "PAUM", "PFM", "PDM", "PDMSucc", "TMargitron", "AMargitron",
    "Kozinec",
}}  # fmt: skip


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def name_of(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def defined_privates(tree: ast.AST) -> set[str]:
    """Underscore names a module defines: functions, classes, class attributes, and
    attributes it assigns on ``self`` or ``cls``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
    return {name for name in names if is_private(name)}


TREES = {name_of(path): ast.parse(path.read_text(encoding="utf-8")) for path in modules()}
DEFINED = {module: defined_privates(tree) for module, tree in TREES.items()}


def owners(name: str) -> set[str]:
    return {module for module, names in DEFINED.items() if name in names}


def own_object(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object whose class the module defines."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def foreign_private_uses(module: str, tree: ast.AST) -> Iterator[str]:
    """Underscore attributes ``module`` touches on objects other than its own that another
    module defines (or that no module of the package defines: a library's internals),
    and underscore names it imports from another module."""
    allowed = THIRD_PARTY_INTERNALS.get(module, set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            if own_object(node.value) or node.attr in allowed:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("np", "numba"):
                yield f"line {node.lineno}: {ast.unparse(node)} (a library's private name)"
                continue
            if owners(node.attr) != {module}:
                yield f"line {node.lineno}: {ast.unparse(node)}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if is_private(alias.name):
                    yield f"line {node.lineno}: from {node.module} import {alias.name}"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
            and node.args[1].value not in allowed
            and not own_object(node.args[0])
        ):
            yield f"line {node.lineno}: {ast.unparse(node)}"


@pytest.mark.parametrize("module", sorted(TREES))
def test_no_module_touches_another_modules_underscore_attributes(module: str) -> None:
    assert list(foreign_private_uses(module, TREES[module])) == []


def kind_checks(tree: ast.AST) -> Iterator[str]:
    """``isinstance`` and ``issubclass`` calls whose classes include a model kind."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
        ):
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if named & MODEL_KINDS:
                yield f"line {node.lineno}: {ast.unparse(node)}"


@pytest.mark.parametrize("module", sorted(m for m in TREES if not m.startswith("learn/")))
def test_only_learn_checks_which_kind_of_model_it_holds(module: str) -> None:
    assert list(kind_checks(TREES[module])) == []


def test_the_checks_see_what_they_look_for() -> None:
    """Both checks find the code they forbid (a check that finds nothing proves nothing)."""
    crossing = ast.parse("def f(learner):\n    return learner._w, self._mine\n")
    assert [use.split(": ")[1] for use in foreign_private_uses("x.py", crossing)] == ["learner._w"]
    branching = ast.parse("if isinstance(model, (ModelBank, str)):\n    pass\n")
    assert len(list(kind_checks(branching))) == 1


#: what says which mode the serve loop runs: the modes and what they wrap
MODE_NAMES = {"SingleModel", "GroupMode", "KeyedMode", "GroupMember", "KeyedModels"}


def mode_mentions(cls: ast.ClassDef) -> Iterator[str]:
    """Names of a mode (or of what one wraps) in ``cls``'s methods, and the attributes
    ``group``/``keyed`` read on it, outside ``__init__`` (which builds the mode)."""
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Name) and node.id in MODE_NAMES:
                yield f"{method.name}, line {node.lineno}: {node.id}"
            elif isinstance(node, ast.Attribute) and node.attr in ("group", "keyed"):
                yield f"{method.name}, line {node.lineno}: {ast.unparse(node)}"


def test_the_serve_loop_never_asks_which_mode_it_runs() -> None:
    """Past its constructor, the daemon's loop only calls the ``Mode`` protocol: a new
    mode is a module of ``modes/``, not a branch in the loop."""
    daemon = next(node for node in ast.walk(TREES["daemon.py"])
                  if isinstance(node, ast.ClassDef) and node.name == "Daemon")  # fmt: skip
    assert list(mode_mentions(daemon)) == []
    branching = ast.parse(
        "class D:\n    def f(self):\n        if isinstance(self.mode, GroupMode): self.keyed\n"
    )
    assert len(list(mode_mentions(branching.body[0]))) == 2  # type: ignore[arg-type]
