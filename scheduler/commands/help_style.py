"""How ``--help`` shows parameters: flags as flags, arguments by name.

Typer (0.2x) prints a boolean flag as ``--json <bool>``, which reads as if it took a value
(``--json true`` fails: "does not take a value"), and a required argument as ``{file}``.
:func:`apply` gives every command and group of the app (sub-apps included, and commands
added later by any module's ``register``) the classes below, which show ``--json`` alone and
arguments in capitals: ``campaign validate [OPTIONS] FILE``, ``campaign status [RUN_ID]``.
Parsing is unchanged: only what help and usage errors print.

Help is click's plain text (Typer's ``rich_markup_mode=None``), not Typer's boxed panels:
those import Rich's Markdown (markdown-it) and tracebacks (Pygments) and lay out tables,
which made ``campaign --help`` take twice as long as ``--version`` (issue 32, figure CLI1).
The same sections are shown (usage, the docstring, arguments, options with their defaults,
commands), each command in the list with its whole first paragraph, wrapped, where click
would cut it at the first sentence or with "...".
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import DefaultPlaceholder


def _tidied(params: list[Any]) -> list[Any]:
    """``params``, each flag showing no value type and each argument its name in capitals."""
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""  # Typer shows the metavar instead of the type: nothing
        elif isinstance(param, TyperArgument) and param.metavar is None:
            param.metavar = (param.name or "value").upper()
    return params


def _usage(command: TyperCommand | TyperGroup, ctx: Any) -> list[str]:
    """The usage line's pieces: ``[OPTIONS]``, then arguments as ``FILE`` (required) or
    ``[RUN_ID]`` (optional), ``…`` after one that takes several values."""
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if isinstance(param, TyperArgument):
            name = param.metavar or (param.name or "value").upper()
            name = name if param.required else f"[{name}]"
            pieces.append(name + ("…" if param.nargs != 1 else ""))
    return pieces


#: A line break inside a paragraph of a docstring (not before a blank line or a list item).
_SOFT_BREAK = re.compile(r"(?<=\S)[ \t]*\n[ \t]*(?=[^\s\-*•])")


def unwrap(text: str | None) -> str | None:
    """A docstring's paragraphs as single lines, so help wraps them at the terminal's width
    (the source's line breaks would otherwise break lines mid-sentence at 80 columns)."""
    return None if text is None else _SOFT_BREAK.sub(" ", text)


def _summary(command: Any) -> str:
    """A command's line in its group's list: its short help, else its docstring's first
    paragraph, on one line (the list wraps it)."""
    text = inspect.cleandoc(command.short_help or command.help or "")
    return " ".join(text.split("\n\n")[0].split())


def _plain(command: Any) -> None:
    """Plain help (see the module): no rich markup, the help unwrapped, parameters tidied."""
    command.rich_markup_mode = None
    command.help = unwrap(command.help)
    _tidied(command.params)


class CampaignCommand(TyperCommand):
    """A command whose help shows flags as flags and arguments by name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain(self)

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, ``--help`` included, tidied for help."""
        return _tidied(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS] FILE`` rather than ``[OPTIONS] {file}``."""
        return _usage(self, ctx)


class CampaignGroup(TyperGroup):
    """A group (``campaign``, ``campaign sessions``) with the same help conventions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain(self)

    def get_params(self, ctx: Any) -> list[Any]:
        """The parameters, ``--help`` included, tidied for help."""
        return _tidied(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS] COMMAND [ARGS]...``."""
        return [*_usage(self, ctx), self.subcommand_metavar or "COMMAND [ARGS]..."]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The commands, each with its whole first paragraph (click cuts it short)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, _summary(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _default(cls: Any, base: type) -> bool:
    """Whether a ``cls`` setting is Typer's default (unset, or the base class itself)."""
    return cls is None or cls is base or isinstance(cls, DefaultPlaceholder)


def apply(app: typer.Typer) -> None:
    """Give ``app``, its commands and its sub-apps the classes above (where a command did
    not choose a class of its own)."""
    if _default(app.info.cls, TyperGroup):
        app.info.cls = CampaignGroup
    for command in app.registered_commands:
        if _default(command.cls, TyperCommand):
            command.cls = CampaignCommand
    for group in app.registered_groups:
        if _default(group.cls, TyperGroup):
            group.cls = CampaignGroup
        if group.typer_instance is not None:
            apply(group.typer_instance)
