"""The ``campaign`` command: a thin Typer front over the packages.

The command modules are listed below, in the order ``--help`` shows them; each adds its
commands with ``register(app)``, and each command is a thin layer over a function of
:mod:`scheduler.usecases`, :mod:`scheduler.views` or another package, which the tests call
directly. A :class:`~scheduler.core.errors.SchedulerError` is printed as one line on stderr with
exit code 1, never as a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Protocol, runtime_checkable

import typer

from scheduler import __version__
from scheduler.commands.help_style import apply as apply_help_style
from scheduler.core.errors import SchedulerError

#: Every command module (of :mod:`scheduler.commands`), registered explicitly in this order,
#: the order ``--help`` shows them: this list is how the CLI is put together.
COMMAND_MODULES = ("plan", "run", "schedule", "track", "report", "replies", "recipient",
                   "sessions", "members", "catalog", "templates", "sandbox", "demo", "workers",
                   "senders", "labels", "schema", "dashboard", "dashboard_users", "api",
                   "webhooks", "person", "purge", "consent")
#: The module that registers each command and group: ``campaign NAME …`` imports that one
#: (issue 32: the others are a fifth of ``campaign --version``); a name missing here runs
#: the whole app, as does anything else. ``tests/terminal/test_help.py`` checks it against
#: what the modules register.
OWNERS = {
    "validate": "plan", "preview": "plan", "plan": "plan",
    "run": "run", "resume": "run", "pause": "run", "cancel": "run", "resend": "run",
    "status": "run", "runs": "run",
    "schedule": "schedule", "unschedule": "schedule", "serve": "schedule",
    "events": "track", "receiver": "track",
    "report": "report", "replies": "replies", "recipient": "recipient",
    "sessions": "sessions", "members": "members", "catalog": "catalog",
    "templates": "templates", "sandbox": "sandbox", "demo": "demo", "workers": "workers",
    "senders": "senders", "labels": "labels", "schema": "schema", "dashboard": "dashboard",
    "dashboard-user": "dashboard_users", "api": "api", "api-token": "api",
    "webhooks": "webhooks", "person": "person", "purge": "purge", "consent": "consent",
}


def _version(value: bool) -> None:
    """``--version``: the package's version, :data:`scheduler.__version__` (the installed
    metadata's, as a test checks; reading the metadata would import ``importlib.metadata``,
    a fifth of the start-up)."""
    if value:
        typer.echo(f"campaign {__version__}")
        raise typer.Exit()


def _options(
    show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit."),
) -> None:
    """Options of ``campaign`` itself (the commands have their own)."""


def _app_of(modules: tuple[str, ...]) -> typer.Typer:
    """``campaign`` with the commands of ``modules`` (names in :data:`COMMAND_MODULES`)."""
    made = typer.Typer(
        name="campaign",
        help="Plan, pace, send, track and report bulk campaigns through the Messaging "
             "Session Service.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name in modules:
        importlib.import_module(f"scheduler.commands.{name}").register(made)
    made.callback()(_options)
    apply_help_style(made)  # flags shown as flags, arguments by name (after every register)
    return made


_whole: typer.Typer | None = None


def whole_app() -> typer.Typer:
    """``campaign`` with every command (made once, on first use: :data:`app`)."""
    global _whole
    if _whole is None:
        _whole = _app_of(COMMAND_MODULES)
    return _whole


def __getattr__(name: str) -> typer.Typer:
    """``scheduler.cli.app``: the whole app (:func:`whole_app`), made when first asked for."""
    if name == "app":
        return whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@runtime_checkable
class _UsageError(Protocol):
    """What a click usage error has (click's own, or the one Typer >= 0.20 vendors)."""

    exit_code: int

    def show(self) -> None:
        """Print the usage and the error to stderr."""


def _name_of(entry: Any) -> str | None:
    """The name ``campaign`` knows a registered command or group by (None: not plain)."""
    if isinstance(entry.name, str):
        return entry.name
    info = getattr(getattr(entry, "typer_instance", None), "info", None)
    if info is not None and isinstance(info.name, str):
        return info.name
    return None


def app_for(args: list[str]) -> typer.Typer:
    """The app that runs ``campaign ARGS``: when ``ARGS`` starts with a command's or a
    group's name, an app holding that one, made from its module alone (:data:`OWNERS`); for
    ``--version`` an app without commands; else the whole app, :data:`app` (``--help``, a
    mistyped name).

    Typer turns every registered command into a click command, reading each function's
    signature, before it runs any: for ``campaign status`` that was about a fifth of the
    time after the imports, and importing every command module a fifth of ``--version``
    (issue 32). The command runs, parses and shows its help as in the whole app;
    ``tests/terminal/test_help.py`` compares them."""
    name = args[0] if args else ""
    if name == "--version":  # printed by the eager option before any command is looked at
        return _app_of(())
    if not name or name.startswith("-") or name not in OWNERS:
        return whole_app()
    one = _app_of((OWNERS[name],))
    commands = [c for c in one.registered_commands if _name_of(c) == name]
    groups = [g for g in one.registered_groups if _name_of(g) == name]
    if len(commands) + len(groups) != 1:
        return whole_app()
    one.registered_commands, one.registered_groups = commands, groups
    return one


def main() -> None:
    """Console-script entry point: run the app, print user errors without a traceback."""
    # pydantic reads every installed package's metadata for plugins when it builds its first
    # model (importlib.metadata and ~130 entry-point files: tens of ms of `campaign status`);
    # campaign uses none. PYDANTIC_DISABLE_PLUGINS set (even empty) is left as it is.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        code = app_for(sys.argv[1:])(standalone_mode=False)
        if isinstance(code, int) and code:  # typer.Exit(code) in non-standalone mode
            sys.exit(code)
    except SchedulerError as exc:
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True, soft_wrap=True).print(
            f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True
        )
        sys.exit(1)
    except typer.Abort:
        from rich.console import Console

        Console(stderr=True).print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        import click

        # Typer >= 0.20 vendors click: its usage errors are not ``click.ClickException``.
        if isinstance(exc, click.ClickException) or (
                isinstance(exc, typer.TyperException) and isinstance(exc, _UsageError)):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
