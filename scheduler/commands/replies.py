"""``campaign replies [--run N] [--campaign NAME] [--to-answer] [--since 2h|DATE] [--json]``:
the inbox, replies across runs newest first, each with the delivery, step, number and name
it answers and its state (new, to answer, handled).

Thin: :mod:`scheduler.views.inbox` reads it. Times are shown in each reply's run's zone.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from scheduler.core.display import clean
from scheduler.core.time_words import local_time

if TYPE_CHECKING:
    from scheduler.views.inbox import InboxReply, InboxView


def replies_command(
    run: int | None = typer.Option(None, "--run", min=1, help="Only this run's replies."),
    campaign: str | None = typer.Option(None, "--campaign", help="Only this campaign's."),
    to_answer: bool = typer.Option(False, "--to-answer",
                                   help="Only those a person should answer (not handled)."),
    state: str | None = typer.Option(None, "--state",
                                     help="Only this state: new, to-answer or handled."),
    since: str | None = typer.Option(None, "--since",
                                     help="Only those since: 2h, 3d, or a date or time "
                                          "(2026-11-28; UTC unless it says its offset)."),
    limit: int = typer.Option(100, "--limit", min=1, max=10_000,
                              help="Show at most this many (the newest)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Replies across runs, newest first: what each answers and its state."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.db import ledger_label
    from scheduler.views.inbox import InboxError, parse_since, read_inbox
    from scheduler.wiring import open_project

    if to_answer and state and state.replace("-", " ").strip().lower() != "to answer":
        raise InboxError("--to-answer and --state say different states: give one")
    now = utcnow()
    chosen_since = parse_since(since, now)
    settings, ledger = open_project()
    if run is not None:
        ledger.get_run(run)  # an unknown run: "no run N" (RunNotFound), not an empty inbox
    view = read_inbox(ledger, now=now, run_id=run, campaign=campaign,
                      state="to answer" if to_answer else state, since=chosen_since,
                      limit=limit)
    if as_json:
        typer.echo(json.dumps({"ledger": ledger_label(settings),
                               **view.model_dump(mode="json")}, ensure_ascii=False, indent=2))
        return
    filtered = bool(run or campaign or state or to_answer or since)
    _print_inbox(view, ledger_label(settings), filtered=filtered)


def _print_inbox(view: InboxView, ledger: str, *, filtered: bool) -> None:
    """The inbox for people: the counts by state, then two lines per reply."""
    typer.echo(f"ledger: {ledger}")
    counts = " · ".join(f"{n:,} {name}" for name, n in view.counts.items())
    typer.echo(f"replies: {counts}")
    if not view.replies:
        typer.echo("no replies" + (" under this filter" if filtered else " yet"))
        return
    for reply in view.replies:
        for line in _reply_lines(reply):
            typer.echo(line)
    if view.more:
        typer.echo(f"(the newest {len(view.replies):,} shown: --limit shows more)")


def _reply_lines(reply: InboxReply) -> tuple[str, str]:
    """One reply: when, its id and state, what it answers and who sent it; then its text."""
    zone = reply.timezone or "UTC"
    where = (f"run {reply.run_id} ({clean(reply.campaign)}) step {reply.step + 1}"
             if reply.run_id is not None and reply.step is not None
             else "answers no delivery")
    if reply.attempt and reply.attempt > 1:
        where += f" attempt {reply.attempt}"
    who = reply.number + (f" {clean(reply.name)}" if reply.name else "")
    via = f" via {clean(reply.sender)}" if reply.sender else ""
    text = clean(reply.text) if reply.text else f"({clean(reply.kind)})"
    extra = " [opt-out]" if reply.opt_out else ""
    if reply.handled_by:
        extra += (f" [handled by {clean(reply.handled_by)} "
                  f"{local_time(reply.handled_at, zone)}]")
    return (f"{local_time(reply.received_at, zone)}  #{reply.id}  {reply.state}  "
            f"{where}  {who}{via}", f"    {text}{extra}")


def register(app: typer.Typer) -> None:
    """Add ``campaign replies``."""
    app.command("replies")(replies_command)
