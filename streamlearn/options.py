"""How a settings field shows on the command line: its option's help, panel and metavar.

A settings dataclass (``ServeConfig``, ``DaemonSettings``, ``SyncPolicy``, ...) declares
each field a command-line option sets with :func:`command_line` as the field's metadata. The
command line makes the option from that declaration and from the field itself: its name
(``replay_share``: ``--replay-share``), its type and its default. So each default is
written once, on the field, and the option cannot say another.

>>> from dataclasses import dataclass, field, fields
>>> @dataclass(frozen=True)
... class Pacing:
...     share: float = field(default=0.2, metadata=command_line("Time share.", REPLAY, "X"))
>>> shown = declared(fields(Pacing)[0])
>>> shown.help, shown.panel, shown.metavar, shown.name
('Time share.', 'Replay', 'X', None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, dataclass
from typing import Any

#: the key of a field's metadata that holds its :class:`Option`
OPTION = "streamlearn.option"

# the help panels: each option in one, with one short line of help (docs/cli.md has the
# long text)
ALGORITHM = "Algorithm"
REPLAY = "Replay"
WINDOW = "Replay buffer"
INPUT = "Input"
ONE_VS_REST = "One-vs-rest"
OUTPUT = "Output"
KAFKA = "Kafka"
CHECKPOINTS = "Checkpoints"
HTTP = "HTTP and metrics"
GROUP = "Learning group"
KEYED = "Keyed models"

#: the words of a yes-or-no setting written ``on|off``
ON_OFF = ("on", "off")


@dataclass(frozen=True)
class Option:
    """What the command line shows of a settings field, beside its name, type and default."""

    #: one short line (at most 60 characters: docs/cli.md says the rest)
    help: str
    panel: str
    #: what the help shows for the value (``N``, ``HOST:PORT``), None: the type's own
    metavar: str | None = None
    #: the option's long name without ``--`` when it is not the field's
    #: (``format`` for ``message_format``); it names the environment variable too
    name: str | None = None
    #: the words the value is one of (a yes-or-no field: its yes and no words, ON_OFF)
    choices: tuple[str, ...] = ()
    #: seconds, written ``30s``, ``5m``, ``1h``, ``7d`` or as a number
    duration: bool = False
    #: the word that sets the field to None (``--http-addr off``)
    off: str | None = None
    #: whether the help shows the default (not for a flag whose default is off)
    show_default: bool = True


def command_line(
    help: str,
    panel: str,
    metavar: str | None = None,
    *,
    name: str | None = None,
    choices: tuple[str, ...] = (),
    duration: bool = False,
    off: str | None = None,
    show_default: bool = True,
) -> Mapping[str, Option]:
    """A field's metadata that makes it a command-line option (see the module doc)."""
    declared = Option(help, panel, metavar, name, choices, duration, off, show_default)
    return {OPTION: declared}


def declared(setting: Field[Any]) -> Option | None:
    """The option a dataclass field declares (None: no option sets it)."""
    found: Option | None = setting.metadata.get(OPTION)
    return found
