"""``campaign person export NUMBER [--out FILE]`` and ``campaign person forget NUMBER
--reason TEXT [--yes]``: one person's data, exported as JSON or erased from every table.

Thin: :mod:`scheduler.privacy.person` does the work; each use is recorded (the OS user,
when, why) in the privacy audit. See docs/privacy.md.
"""

from __future__ import annotations

from pathlib import Path

import typer

from scheduler.core.errors import SchedulerError

person_app = typer.Typer(
    name="person",
    help="One person's data: export everything the ledger holds about a number, or erase "
         "it (LGPD).",
    no_args_is_help=True,
)

REGION_HELP = "The region of a number written without its country code."


@person_app.command("export")
def export_command(
    number: str = typer.Argument(..., help="The number, in any common format."),
    out: Path | None = typer.Option(None, "--out", help="Write the JSON to this file "
                                    "(default: print it)."),
    reason: str | None = typer.Option(None, "--reason", help="Why (kept in the audit)."),
    region: str = typer.Option("BR", "--region", help=REGION_HELP),
) -> None:
    """Everything the ledger holds about NUMBER (runs, deliveries, rendered bodies, event
    payloads, replies, clicks, suppressions) as JSON."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.privacy_key import erasure_key
    from scheduler.privacy.person import export_person, os_user
    from scheduler.wiring import open_project

    settings, ledger = open_project()
    found = export_person(ledger.engine, number, key=erasure_key(settings), who=os_user(),
                          via="cli", now=utcnow(), reason=reason, region=region)
    text = found.model_dump_json(indent=2)
    if out is None:
        typer.echo(text)
        return
    try:
        out.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise SchedulerError(f"--out {out}: cannot be written ({exc.strerror})") from None
    typer.echo(f"{found.row_count()} rows about {found.number} written to {out}", err=True)


@person_app.command("forget")
def forget_command(
    number: str = typer.Argument(..., help="The number, in any common format."),
    reason: str = typer.Option(..., "--reason", help="Why (kept in the audit)."),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
    region: str = typer.Option("BR", "--region", help=REGION_HELP),
) -> None:
    """Erase NUMBER's personal data from every table (counts and report totals kept), and
    keep a keyed hash of it so that later plans skip it."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.privacy_key import erasure_key
    from scheduler.privacy.numbers import normalise
    from scheduler.privacy.person import forget_person, os_user
    from scheduler.wiring import open_project

    digits = normalise(number, region)
    if not reason.strip():
        raise SchedulerError("--reason: say why the person's data is erased")
    if not yes and not typer.confirm(f"Erase everything about {digits}? This cannot be "
                                     "undone."):
        raise typer.Exit(1)
    settings, ledger = open_project()
    key = erasure_key(settings, create=True)
    assert key is not None
    done = forget_person(ledger.engine, digits, key=key, who=os_user(), via="cli",
                         reason=reason, now=utcnow(), region=region)
    typer.echo(f"erased: the person's rows now carry {done.pseudonym}")
    for table, count in sorted(done.counts.items()):
        typer.echo(f"  {table}: {count}")


def register(app: typer.Typer) -> None:
    """Add ``person`` to the ``campaign`` command."""
    app.add_typer(person_app)
