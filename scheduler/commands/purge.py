"""``campaign purge [--dry-run]``: rendered bodies and raw event payloads older than
``[privacy] keep_bodies`` / ``keep_events`` removed; states, times and counts kept.

Thin: :mod:`scheduler.privacy.retention` does it; ``campaign serve`` runs it daily. See
docs/privacy.md.
"""

from __future__ import annotations

import typer


def purge_command(
    dry_run: bool = typer.Option(False, "--dry-run", help="Only say what would go."),
) -> None:
    """Remove rendered bodies and raw event payloads older than [privacy] keep_bodies and
    keep_events (states, times and counts stay)."""
    from scheduler.core.timeutil import utcnow
    from scheduler.privacy.retention import purge
    from scheduler.wiring import open_project

    settings, ledger = open_project()
    now = utcnow()
    done = purge(ledger.engine, settings.privacy, now, dry_run=dry_run)
    for line in done.lines():
        typer.echo(line)
    if not dry_run:
        from scheduler.ledger.privacy_key import erasure_key
        from scheduler.privacy.retention import forget_late_events

        late = forget_late_events(ledger.engine, lambda: erasure_key(settings), now)
        if late:
            typer.echo(f"erased again: {late} erased people's late events")


def register(app: typer.Typer) -> None:
    """Add ``purge`` to the ``campaign`` command."""
    app.command("purge")(purge_command)
