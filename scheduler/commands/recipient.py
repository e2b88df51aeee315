"""``campaign recipient NUMBER [--json]``: one person's story across runs, in time order:
every delivery, attempt, variant, event, reply, click and opt-out, with the sender and
the decisions taken.

Thin: :mod:`scheduler.views.recipient_story` reads it. The number may be written in any
common format (``+55 11 98765-4321``, ``(11) 98765-4321``): it is normalised as the
campaign normalises its CSV, with ``--country`` for numbers without a country code.
"""

from __future__ import annotations

import json

import typer

from scheduler.core.display import clean
from scheduler.core.time_words import local_time


def recipient_command(
    number: str = typer.Argument(..., help="The recipient's number, in any common format."),
    country: str = typer.Option("BR", "--country",
                                help="The region of a number without a country code."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """One recipient's story: deliveries, attempts, events, replies, clicks, opt-out."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.db import ledger_label
    from scheduler.views.recipient_story import normalise_number, read_story
    from scheduler.wiring import open_project

    digits = normalise_number(number, country)
    settings, ledger = open_project()
    story = read_story(ledger, digits, now=utcnow())
    if as_json:
        typer.echo(json.dumps({"ledger": ledger_label(settings),
                               **story.model_dump(mode="json")}, ensure_ascii=False, indent=2))
        return
    typer.echo(f"ledger: {ledger_label(settings)}")
    names = f" · {clean(', '.join(story.names))}" if story.names else ""
    typer.echo(f"{story.number}{names}")
    if not story.deliveries and not story.items:
        typer.echo("nothing in the ledger for this number")
        return
    runs = ", ".join(str(r) for r in story.runs) or "none"
    typer.echo(f"runs {runs} · {len(story.deliveries):,} deliveries · {story.replies:,} "
               f"replies" + (" · opted out" if story.opted_out else ""))
    typer.echo("deliveries:")
    for d in story.deliveries:
        parts = [f"run {d.run_id} ({clean(d.campaign)}) step {d.step + 1}",
                 f"attempt {d.attempt}", clean(d.kind), clean(d.state)]
        parts += [f"via {clean(d.sender)}"] if d.sender else []
        parts += [f"variant {clean(d.variant)}"] if d.variant else []
        parts += [f"rule {clean(d.rule)}"] if d.rule else []
        parts += [f"verdict: {clean(d.verdict)}"] if d.verdict else []
        if d.decision:
            why = f": {clean(d.decision_reason)}" if d.decision_reason else ""
            parts.append(f"condition {clean(d.decision)}{why}")
        parts += [clean(d.reason)] if d.reason and not d.decision else []
        typer.echo("  " + " · ".join(parts))
    typer.echo("story:")
    for item in story.items:
        where = ""
        if item.run_id is not None:
            where = f"run {item.run_id}" + (f" step {item.step + 1}"
                                             if item.step is not None else "")
            if item.attempt and item.attempt > 1:
                where += f" attempt {item.attempt}"
            where += "  "
        via = f" via {clean(item.sender)}" if item.sender else ""
        state = f" [{item.state}]" if item.state else ""
        text = f": {clean(item.text)}" if item.text else ""
        typer.echo(f"  {local_time(item.at, item.timezone, seconds=True)}  {where}"
                   f"{item.what}{via}{state}{text}")


def register(app: typer.Typer) -> None:
    """Add ``campaign recipient``."""
    app.command("recipient")(recipient_command)
