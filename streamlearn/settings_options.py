"""Typer options made from the settings dataclasses that declare them, and the settings
made back from the options' values.

A settings field declares its option (:mod:`streamlearn.options`); this module makes the
option a command takes from the declaration and the field's name, type and default
(:func:`settings_options`), and the dataclass from the values typer parsed
(:func:`settings_from`). Some fields are written differently on the command line: a
duration as ``30s``, a yes-or-no setting as ``on|off``, None as ``off``, a tuple as a
repeatable option.
"""

from __future__ import annotations

import dataclasses
import inspect as introspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer
from typer.core import TyperCommand

from streamlearn.options import Option, declared

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Settings = TypeVar("Settings", bound="DataclassInstance")


def env_variable(name: str) -> str:
    """The environment variable of the option ``name``.

    >>> env_variable("replay-every")
    'STREAMLEARN_REPLAY_EVERY'
    """
    return "STREAMLEARN_" + name.upper().replace("-", "_")


def typer_option(
    help_text: str, name: str, *flags: str, panel: str | None = None, **kwargs: Any
) -> Any:
    """A typer option with its help in ``panel``, read from its environment variable too
    (which the help does not list: the commands' epilog states the rule once)."""
    return typer.Option(
        *flags,
        help=help_text,
        envvar=env_variable(name),
        show_envvar=False,
        rich_help_panel=panel,
        **kwargs,
    )


def seconds(text: str | float) -> float:
    """A duration option's seconds: ``30s``, ``5m``, ``1h``, ``7d`` or a number of seconds
    (a usage error otherwise).

    >>> seconds("5m"), seconds("2.5"), seconds("7d")
    (300.0, 2.5, 604800.0)
    """
    if isinstance(text, int | float):
        return float(text)
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"not a duration: {text!r} (use 30s, 5m, 1h, 7d)") from None


def settings_options(declaring: type, prefix: str = "") -> list[introspect.Parameter]:
    """One keyword parameter of a command per field of the dataclass ``declaring`` that
    declares its option (:mod:`streamlearn.options`): named after the field (after
    ``prefix``, or the declared name), of its type, with its default as the command line
    writes it (``30s`` for 30 seconds, ``on`` for True)."""
    hints = typing.get_type_hints(declaring)
    parameters = []
    for setting in dataclasses.fields(declaring):
        shown = declared(setting)
        if shown is None:
            continue
        hint = hints[setting.name]
        name = _parameter_name(setting, shown, prefix)
        extra: dict[str, Any] = {"parser": seconds} if shown.duration else {}
        if not shown.show_default:
            extra["show_default"] = False
        flags = [f"--{shown.name}"] if shown.name else []
        made = typer_option(
            shown.help, name, *flags, panel=shown.panel, metavar=shown.metavar, **extra
        )
        annotation = Annotated[_option_type(shown, hint), made]  # type: ignore[valid-type]
        default = _option_default(shown, hint, setting.default)
        keyword = introspect.Parameter.KEYWORD_ONLY
        parameters.append(
            introspect.Parameter(name, keyword, default=default, annotation=annotation)
        )
    return parameters


def settings_from(
    declaring: type[Settings], values: dict[str, Any], prefix: str = "", **given: Any
) -> Settings:
    """An instance of the dataclass ``declaring``: each field that declares its option
    from that option's value in ``values`` (as :func:`settings_options` named it), the
    others from ``given``. Its own checks make a bad value an error naming the option."""
    hints = typing.get_type_hints(declaring)
    for setting in dataclasses.fields(declaring):
        shown = declared(setting)
        if shown is not None:
            value = values[_parameter_name(setting, shown, prefix)]
            given[setting.name] = _field_value(shown, hints[setting.name], value)
    return declaring(**given)


def _parameter_name(setting: dataclasses.Field[Any], shown: Option, prefix: str) -> str:
    return shown.name.replace("-", "_") if shown.name else prefix + setting.name


def _is_repeated(hint: Any) -> bool:
    """Whether a field of type ``hint`` holds a repeatable option's values (a tuple)."""
    return typing.get_origin(hint) is tuple


def _option_type(shown: Option, hint: Any) -> Any:
    """The type typer reads the option as: its words, a duration's text, a repeatable
    option's list, the word for None (``off``) among the field's texts."""
    if shown.choices:
        return Literal.__getitem__(shown.choices)
    if shown.duration:
        return float  # the parser makes the text seconds
    if _is_repeated(hint):
        return list[str] | None
    if shown.off is not None:
        return str
    return hint


def _option_default(shown: Option, hint: Any, default: Any) -> Any:
    """A field's default as the command line writes it.

    >>> from streamlearn.options import ON_OFF, Option
    >>> _option_default(Option("", "", duration=True), float, 30.0)
    '30s'
    >>> _option_default(Option("", "", choices=ON_OFF), bool, True)
    'on'
    """
    if shown.duration and default is not None:
        return f"{default:g}s"
    if shown.choices and hint is bool:
        return shown.choices[0 if default else 1]
    if _is_repeated(hint):
        return None  # none given: the field's default, no values
    return default


def _field_value(shown: Option, hint: Any, value: Any) -> Any:
    """An option's value as its field holds it (the inverse of :func:`_option_default`)."""
    if shown.off is not None and value == shown.off:
        return None
    if shown.choices and hint is bool:
        return value == shown.choices[0]
    if _is_repeated(hint):
        return tuple(value or ())
    return value


def made_when_used(make: Callable[[], TyperCommand]) -> type[TyperCommand]:
    """A typer command class whose options and body are ``make``'s command's, made when
    first used (for its help or to run it). ``serve``'s options come from the settings
    dataclasses of the daemon, which the other commands must not import: they start
    faster without (tests/cli/test_startup_imports.py)."""

    class MadeWhenUsed(TyperCommand):
        made: TyperCommand | None = None

        def _made(self) -> TyperCommand:
            if self.made is None:
                self.made = make()
            return self.made

        @property
        def params(self) -> list[Any]:
            return self._made().params

        @params.setter
        def params(self, value: list[Any]) -> None:
            """Click sets the placeholder's (none)."""

        @property
        def callback(self) -> Callable[..., Any] | None:
            return self._made().callback

        @callback.setter
        def callback(self, value: Callable[..., Any] | None) -> None:
            """Click sets the placeholder's."""

    return MadeWhenUsed


def placeholder(body: Callable[..., None]) -> Callable[[], None]:
    """A command without options and with ``body``'s name and help, for
    :func:`made_when_used` to fill."""

    def placeholder() -> None:
        raise AssertionError("the command made when used runs instead")

    placeholder.__name__ = body.__name__
    placeholder.__doc__ = body.__doc__
    return placeholder
