"""``campaign demo``: the product end to end against the embedded sandbox."""

from __future__ import annotations

import gc
from pathlib import Path

import typer


def demo_command(
    root: Path = typer.Option(Path("."), "--root", help="Project folder holding campaigns/."),
    yes: bool = typer.Option(False, "--yes", help="With a service off this machine "
                             "configured: really send the demo's messages through it."),
) -> None:
    """Sessions, every message type, a 200-recipient campaign and its report, in seconds."""
    from rich.console import Console

    from scheduler.core.errors import SchedulerError
    from scheduler.demo.tour import run_demo

    if not (root / "campaigns" / "demo.toml").is_file():
        raise SchedulerError(f"{root / 'campaigns' / 'demo.toml'} not found: run the demo from "
                             "the project folder or pass --root")
    run_demo(Console(), root.resolve(), yes=yes)
    # nothing of the demo's objects is needed any more: exit without the collector going
    # through all of them (about two seconds of the interpreter's shutdown, for nothing)
    gc.freeze()


def register(app: typer.Typer) -> None:
    """Add the demo command."""
    app.command("demo")(demo_command)
