"""``campaign webhooks [--state S] [--limit N] [--json]`` and ``campaign webhooks retry ID``:
the outgoing webhooks' subscriptions and deliveries (delivered, pending, failing, failed).

Deliveries are made by ``campaign serve`` and by ``campaign run`` / ``resume`` while they
work (see docs/webhooks-outgoing.md); this command only reads, or makes one due again.
"""

from __future__ import annotations

import json

import typer

from scheduler.core.errors import SchedulerError

webhooks_app = typer.Typer(
    name="webhooks",
    help="Outgoing webhooks: each subscription's deliveries (delivered, pending, failing, "
         "failed) and the latest ones; retry a failed one.",
    invoke_without_command=True,
)

STATE_HELP = "Only deliveries in this state: pending, failing, delivered or failed (repeat)."


@webhooks_app.callback()
def webhooks_command(
    ctx: typer.Context,
    state: list[str] = typer.Option([], "--state", help=STATE_HELP, show_default=False),
    limit: int = typer.Option(20, "--limit", min=1, max=10_000,
                              help="How many of the latest deliveries to list."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the subscriptions of config.toml with their deliveries by state, then the latest
    deliveries: event, try count, last status and error, next try."""
    if ctx.invoked_subcommand is not None:
        return
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.db import ledger_label
    from scheduler.webhooks_out.readout import STATES, webhooks_view
    from scheduler.wiring import open_project

    unknown = [s for s in state if s not in STATES]
    if unknown:
        raise SchedulerError(f"--state {unknown[0]}: not a delivery state; the states are "
                             f"{', '.join(STATES)}")
    settings, ledger = open_project()
    view = webhooks_view(ledger.engine, settings.webhooks, settings.webhook_delivery,
                         utcnow(), states=state or None, limit=limit)
    if as_json:
        typer.echo(json.dumps({"ledger": ledger_label(settings), **view.model_dump(
            mode="json")}, ensure_ascii=False, indent=2))
        return
    _print(view, ledger_label(settings))


def _print(view: object, label: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from scheduler.core.time_words import span
    from scheduler.webhooks_out.readout import STATES, WebhooksView

    assert isinstance(view, WebhooksView)
    console = Console(highlight=False)
    console.print(f"ledger: {label}", soft_wrap=True, markup=False)
    if not view.subscriptions:
        console.print("no outgoing webhooks: add a [[webhooks]] entry (url, events, secret) "
                      "to config.toml", markup=False)
        return
    from datetime import timedelta

    console.print(f"failing deliveries are retried for {span(timedelta(seconds=view.horizon_s))}"
                  " after their event, then failed", markup=False)
    # at 80 columns: a subscription's URL under its name, a delivery's last error under
    # its type (folded, never cut); the event's id and the subscription's events in --json
    table = Table("subscription", *STATES, show_edge=False)
    table.columns[0].overflow = "fold"
    for sub in view.subscriptions:
        name = sub.name + ("" if sub.configured else " (no longer configured)")
        table.add_row(name + (f"\n{sub.url}" if sub.url else ""),
                      *(f"{sub.counts.get(s, 0):,}" for s in STATES))
    console.print(table)
    if view.not_given_out:
        console.print(f"{view.not_given_out:,} events not yet given out (a worker does it: "
                      "campaign serve, or campaign run while it sends)", markup=False)
    if not view.deliveries:
        return
    several = len({d.subscription for d in view.deliveries}) > 1
    rows = Table("id", "event, last error", "run", *(["subscription"] if several else []),
                 "state", "tries", "next try (UTC)", show_edge=False)
    rows.columns[1].overflow = "fold"
    for d in view.deliveries:
        last = (d.last_error or (f"HTTP {d.last_status}" if d.last_status else "")
                ) if d.attempts else ""
        rows.add_row(str(d.id), d.type + (f"\n{last}" if last else ""), str(d.run_id or ""),
                     *([d.subscription] if several else []), d.state, str(d.attempts),
                     d.next_attempt_at.strftime("%m-%d %H:%M:%S")
                     if d.next_attempt_at else "")
    for column in rows.columns[2:]:
        column.no_wrap = column.header != "subscription"
        column.overflow = "fold"
    console.print(rows)


@webhooks_app.command("retry")
def retry_command(delivery_id: int = typer.Argument(..., help="The delivery's id "
                                                    "(`campaign webhooks` lists them).")
                  ) -> None:
    """Make a failed (or waiting) delivery due now; the next worker sends it."""
    from scheduler.core.timeutil import utcnow
    from scheduler.webhooks_out.readout import retry_delivery
    from scheduler.wiring import open_project

    _settings, ledger = open_project()
    if not retry_delivery(ledger.engine, delivery_id, utcnow()):
        raise SchedulerError(f"no delivery {delivery_id} waiting or failed: see "
                             "`campaign webhooks`")
    typer.echo(f"delivery {delivery_id} is due now: campaign serve (or the next campaign "
               "run) sends it")


def register(app: typer.Typer) -> None:
    """Add ``campaign webhooks``."""
    app.add_typer(webhooks_app)
