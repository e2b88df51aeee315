"""``campaign consent import FILE``: store a consent list in the ledger (all rows or none).

Thin: :mod:`scheduler.campaign.consent_import` reads and checks the file,
:mod:`scheduler.ledger.consent` stores it. See docs/guides/consent-and-holidays.md.
"""

from __future__ import annotations

from pathlib import Path

import typer

consent_app = typer.Typer(
    name="consent",
    help="Consent lists: who agreed to be sent to, on which channel, when, and to what.",
    no_args_is_help=True,
)


@consent_app.command("import")
def import_command(
    file: Path = typer.Argument(..., help="The consent CSV (number, channel, time, "
                                "text and/or version)."),
    timezone: str = typer.Option("America/Sao_Paulo", "--timezone",
                                 help="The zone of times written without an offset."),
    region: str = typer.Option("BR", "--region",
                               help="The region of numbers written without a country code."),
) -> None:
    """Check every row of FILE, then store them all (a bad file stores nothing)."""
    from scheduler.campaign.consent_import import read_consent_file
    from scheduler.core.timeutil import utcnow
    from scheduler.core.units import load_zone
    from scheduler.ledger.consent import store_consents
    from scheduler.wiring import open_project

    records = read_consent_file(file, zone=load_zone(timezone), region=region, now=utcnow())
    _settings, ledger = open_project()
    stored = store_consents(ledger.engine, records)
    channels = sorted({r["channel"] for r in records})
    typer.echo(f"{stored} consent records imported from {file} ({', '.join(channels)})")


def register(app: typer.Typer) -> None:
    """Add ``consent`` to the ``campaign`` command."""
    app.add_typer(consent_app)
