"""``campaign senders [--json]``: every sender's state, warm-up and plan limits;
``campaign senders pause | resume | retire ID --reason TEXT``: a person moves a sender.

Thin: :mod:`scheduler.views.senders` reads what is shown, and
:mod:`scheduler.usecases.sender_control` makes the changes.
"""

from __future__ import annotations

import json
import textwrap
from datetime import datetime
from typing import TYPE_CHECKING

import typer

from scheduler.core.display import clean, clean_markup
from scheduler.core.time_words import local_time

if TYPE_CHECKING:
    from scheduler.views.senders import PlanLimits, SenderInfo, SendersView

senders_app = typer.Typer(
    name="senders",
    help="Each sender's state, warm-up, sends today and plan limits; pause, resume or "
         "retire one.",
    invoke_without_command=True,
)

SENDER_ID = typer.Argument(..., help="The sender: a session id, or `account` for SMS/voice.")
REASON = typer.Option(..., "--reason", help="Why (kept in the sender's history).")
WIDTH = 80


@senders_app.callback()
def senders_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List every sender: state since when and why, warm-up day, sends today, score,
    speed, and each session's plan limits left today."""
    if ctx.invoked_subcommand is not None:
        return
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.db import ledger_label
    from scheduler.views.senders import senders_view
    from scheduler.wiring import open_reader

    settings, ledger = open_reader()
    view = senders_view(ledger, settings, utcnow())
    if as_json:
        typer.echo(json.dumps({"ledger": ledger_label(settings),
                               **view.model_dump(mode="json")}, ensure_ascii=False, indent=2))
        return
    _print(view, ledger_label(settings))


#: Joins the words of a time so that wrapping never splits it (a space once wrapped).
_GLUE = "\u00a0"


def _say(text: str, indent: str = "") -> None:
    """``text`` wrapped at 80 columns (a time is never split), outside text escaped."""
    typer.echo(textwrap.fill(clean(text), width=WIDTH, initial_indent=indent,
                             subsequent_indent=indent + "  ", break_long_words=False,
                             break_on_hyphens=False).replace(_GLUE, " "))


def _when(moment: datetime | None, zone: str) -> str:
    return local_time(moment, zone).replace(" ", _GLUE)


def _speed(throttle: float | None) -> str:
    if throttle is None:
        return "–"
    return "full" if throttle >= 1.0 else f"{throttle * 100:.0f}%"


#: The count a session's plan limits are shown by in text (``--json`` has every count).
SESSION_COUNT = "messages"


def _limits_text(limits: PlanLimits, zone: str) -> str:
    plan = f"plan {limits.plan}" if limits.plan else "plan"
    per = f", per {limits.period}" if limits.period else ""
    names = [SESSION_COUNT] if SESSION_COUNT in limits.limits else list(limits.limits)
    counts = [f"{name} {limits.left[name]:,} of {limits.limits[name]:,} left"
              if name in limits.left else f"{name} {limits.limits[name]:,} (use not reported)"
              for name in names]
    shown = "; ".join(counts) if counts else "no counts reported"
    resets = (_when(limits.resets_at, zone) if limits.resets_at is not None
              else limits.resets_text)
    return f"{plan}{per}: {shown}" + (f"; resets {resets}" if resets else "")


def _detail_lines(info: SenderInfo) -> list[str]:
    """Since when and why, then the plan limits (or why they are not shown)."""
    lines = []
    if info.since is not None:
        why = f": {info.reason}" if info.reason else ""
        lines.append(f"{info.state} since {_when(info.since, info.zone)}{why}")
    elif info.reason:
        lines.append(info.reason)
    if info.warm_cap_today is not None:
        lines.append(f"warm-up day {info.warm_day_today} of {info.warm_days}: at most "
                     f"{info.warm_cap_today:,} sends today, {info.sends_today:,} sent")
    if info.limits is not None:
        lines.append(_limits_text(info.limits, info.zone))
    elif info.limits_error:
        lines.append(f"limits: {info.limits_error}")
    return lines


def _print(view: SendersView, ledger_label: str) -> None:
    from rich.console import Console

    from scheduler.core.display import table

    console = Console(width=WIDTH, highlight=False, soft_wrap=False)
    console.print(f"ledger: {ledger_label}", soft_wrap=True, markup=False)
    if not view.senders:
        _say("no senders yet: a sender is known from the first run that names it "
             "(`campaign run FILE`)")
        return
    if view.limits_from:
        _say(f"plan limits from: {view.limits_from}")
    if view.limits_note:
        _say(view.limits_note)
    shown = table("sender", "state", "warm-up", "sent today", "score", "speed",
                  show_edge=False, box=None, pad_edge=False, header_style="bold")
    for info in view.senders:
        shown.add_row(clean_markup(info.sender), info.state,
                      f"day {info.warm_day}" if info.warm_day is not None else "–",
                      f"{info.sends_today:,}",
                      f"{info.score:.0f}" if info.score is not None else "–",
                      _speed(info.throttle))
    console.print(shown)
    for info in view.senders:
        _say(f"{info.sender}:")
        for line in _detail_lines(info):
            _say(line, indent="  ")


def _change(action: str, sender: str, reason: str) -> None:
    from scheduler.core.timeutil import utcnow
    from scheduler.usecases.sender_control import change_sender
    from scheduler.wiring import open_project

    _settings, ledger = open_project()
    _say(change_sender(ledger, sender, action, reason, utcnow()).sentence())


@senders_app.command("pause")
def pause_command(sender: str = SENDER_ID, reason: str = REASON) -> None:
    """Hold a sender: no run or worker sends through it until it is resumed."""
    _change("pause", sender, reason)


@senders_app.command("resume")
def resume_command(sender: str = SENDER_ID, reason: str = REASON) -> None:
    """Let a held sender send again, in the state it had before (warming, healthy or
    throttled)."""
    _change("resume", sender, reason)


@senders_app.command("retire")
def retire_command(sender: str = SENDER_ID, reason: str = REASON) -> None:
    """Retire a sender for good: only `campaign senders resume` brings it back."""
    _change("retire", sender, reason)


def register(app: typer.Typer) -> None:
    """Add ``campaign senders``."""
    app.add_typer(senders_app)
