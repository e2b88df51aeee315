"""``campaign workers [--json]``: the live ``campaign serve`` workers of the ledger, the
senders each holds and its last heartbeat."""

from __future__ import annotations

import json

import typer


def workers_command(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Live `campaign serve` workers: their senders, last heartbeat, the trigger leader."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.db import ledger_label
    from scheduler.views.unserved import unserved_runs
    from scheduler.views.workers import workers_view
    from scheduler.wiring import open_project

    settings, ledger = open_project()
    now = utcnow()
    view = workers_view(ledger, settings.worker_lease_s, now)
    # unfinished runs that no live worker (nor process) will send, why, what to do
    unserved = list(unserved_runs(ledger, settings.worker_lease_s, now).values())
    if as_json:
        typer.echo(json.dumps({"ledger": ledger_label(settings),
                               **view.model_dump(mode="json"),
                               "unserved": [u.model_dump() for u in unserved]},
                              ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"ledger: {ledger_label(settings)}", highlight=False, soft_wrap=True)
    if not view.workers:
        console.print("no live workers: start one with `campaign serve`")
    else:
        table = Table("worker", "sends to", "senders", "last heartbeat", "trigger leader",
                      show_edge=False)
        for w in view.workers:
            senders = ", ".join(w.senders[:6]) + (f" (+{len(w.senders) - 6})"
                                                   if len(w.senders) > 6 else "")
            table.add_row(w.id, _sends_to(w.target),
                          f"{len(w.senders)}: {senders}" if w.senders else "0",
                          f"{w.heartbeat_age_s:.1f} s ago", "yes" if w.trigger_leader else "")
        console.print(table)
    if view.unheld:
        console.print(f"senders held by no live worker: {', '.join(view.unheld)}",
                      highlight=False)
    for verdict in unserved:
        for line in verdict.lines():
            console.print(line, style="yellow", highlight=False, markup=False)


def _sends_to(target: str | None) -> str:
    """A worker's target, short enough for a column."""
    if target is None:
        return "?"
    return "embedded sandbox" if target == "sandbox" else target.removeprefix("service:")


def register(app: typer.Typer) -> None:
    """Add ``campaign workers``."""
    app.command("workers")(workers_command)
