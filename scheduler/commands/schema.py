"""``campaign schema [--output FILE]``: the JSON Schema of a campaign file.

Pretty-printed JSON on stdout (or into ``FILE``), from the same models that read the
file (:mod:`scheduler.campaign.schema`): point an editor's TOML support at it and a
campaign file is checked as it is typed (see the docs' *Editor support*). Needs no
project, no ledger and no service.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from scheduler.core.errors import SchedulerError


def schema_text() -> str:
    """The schema as the command prints it: indented JSON, non-ASCII kept, a final newline."""
    from scheduler.campaign.schema import campaign_schema

    return json.dumps(campaign_schema(), ensure_ascii=False, indent=2) + "\n"


def schema_command(
    output: Path | None = typer.Option(
        None, "--output", "-o", show_default=False,
        help="Write the schema to this file (e.g. campaigns/campaign.schema.json) instead "
             "of printing it."),
) -> None:
    """Print the JSON Schema of a campaign file, for an editor's TOML support."""
    text = schema_text()
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SchedulerError(f"{output}: cannot write the schema: "
                             f"{exc.strerror or exc}") from None
    typer.echo(f"wrote {output}\nto use it, a campaign file beside it starts with:\n"
               f"#:schema ./{output.name}")


def register(app: typer.Typer) -> None:
    """Add ``campaign schema``."""
    app.command("schema")(schema_command)
