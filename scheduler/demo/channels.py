"""The demo's SMS and voice part: a short run of each, said in a few lines at 80 columns.

``campaigns/demo_sms.toml`` (six customers: four read the same offer, one ``sms/bulk``; two
get a text of their own, ``sms/send``) and ``campaigns/demo_voice.toml`` (five calls of an
IVR flow, one ``voice/bulk`` with each recipient's ``variables``) are planned into the
demo's ledger and run in the foreground like ``campaign run`` does: the receiver up, the
account's webhook pointed at it and signed, the last reports awaited. Each part prints the
requests the channel builds from the planned rows (the bodies the client posts), then each
recipient's outcome from the ledger (delivered / undelivered with the error code; answered
with talk time and digits, or not answered with the cause in words) and the run's totals.
"""

from __future__ import annotations

import asyncio
import io
import json
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from scheduler.dispatch.channel import Channel, SendRequest
from scheduler.ledger.models import Run
from scheduler.ledger.rows import DueDelivery
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.wiring import ServiceTarget

#: The campaigns of this part, in order, with their titles.
PARTS = (("campaigns/demo_sms.toml", "SMS campaign"),
         ("campaigns/demo_voice.toml", "Voice campaign (IVR flow with variables)"))
#: The embedded sandbox's settings for the demo: a seed whose handful of texts and calls
#: shows each kind of outcome, and calls that last a fraction of a second (a 40 s call
#: takes 0.08 s).
SANDBOX_SETTINGS: dict[str, Any] = {"seed": 10, "voice_time_scale": 0.002}
WIDTH = 80
INDENT = "   "


def channel_tour(settings: Settings, ledger: Ledger, target: ServiceTarget, root: Path,
                 console: Console, *, first: int = 5) -> list[int]:
    """Run the SMS and the voice demo campaigns, numbering the parts from ``first``; the
    runs' ids."""
    run_ids = []
    for number, (name, title) in enumerate(PARTS, start=first):
        console.print(f"[bold]{number}. {title}: {name}[/]", highlight=False)
        path = root / name
        if not path.is_file():
            console.print(f"{INDENT}{name} not found: part skipped", highlight=False)
            continue
        run_ids.append(run_channel_demo(settings, ledger, target, path, console))
    return run_ids


def run_channel_demo(settings: Settings, ledger: Ledger, target: ServiceTarget, path: Path,
                     console: Console) -> int:
    """Plan ``path``, say its requests, run it in the foreground, say its outcomes."""
    from scheduler.core.timeutil import utcnow
    from scheduler.usecases.planning import plan_run

    run_id = plan_run(ledger, path, start_at=utcnow(), target=target.ledger_value)
    run = ledger.get_run(run_id)
    rows = planned_rows(ledger, run)
    channel = channel_of(ledger, run, settings)
    requests = [r for group in groups(channel, rows) for r in channel.requests(group, "account")]
    say(console, [f"run {run_id}: {len(rows)} recipients, {len(requests)} "
                  f"request{'s' if len(requests) != 1 else ''}"])
    say(console, [line for request in requests for line in request_lines(request)])
    run_quietly(settings, ledger, run, target, console)
    variables = {row.to: json.loads(row.payload).get("variables") or {} for row in rows}
    say(console, outcome_lines(ledger, run, variables))
    return run_id


def run_quietly(settings: Settings, ledger: Ledger, run: Run, target: ServiceTarget,
                console: Console) -> None:
    """Run ``run`` in the foreground off the screen; say its end only when not completed."""
    from scheduler.usecases.foreground import run_foreground

    # the bar and the engine's notes would take a dozen lines: kept off the screen
    quiet = Console(file=io.StringIO(), width=WIDTH)
    result = asyncio.run(run_foreground(settings, ledger, run, quiet, target=target,
                                        show_progress=False))
    if result.status != "completed":
        say(console, [f"run {run.id}: {result.status}"
                      + (f" ({result.reason})" if result.reason else "")])


def say(console: Console, lines: Sequence[str]) -> None:
    """Print ``lines`` indented, each wrapped to :data:`WIDTH` columns."""
    for line in lines:
        for part in textwrap.wrap(line, WIDTH - len(INDENT), subsequent_indent="  ") or [""]:
            console.print(INDENT + part, highlight=False, markup=False)


# --------------------------------------------------------------------------- requests


def planned_rows(ledger: Ledger, run: Run) -> list[DueDelivery]:
    """The run's planned rows as the engine reads them (plan order, with their bodies)."""
    from scheduler.core.timeutil import utcnow
    from scheduler.ledger.queue_store import QueueStore

    return QueueStore(ledger, run.id or 0).due(utcnow(), limit=10_000)


def channel_of(ledger: Ledger, run: Run, settings: Settings) -> Channel:
    """The run's channel set up as the engine sets it up (batch, calls, prices)."""
    from scheduler.core.timeutil import utcnow
    from scheduler.dispatch.channels import channel_for
    from scheduler.dispatch.options import DispatchOptions

    options = DispatchOptions.for_run(ledger.options(run), start=utcnow(), senders=("account",),
                                      **settings.engine_overrides())
    return channel_for(run.channel, options)


def groups(channel: Channel, rows: Sequence[DueDelivery]) -> Iterator[list[DueDelivery]]:
    """``rows`` in the requests the engine makes of them: the first row with the next rows
    of its group, up to the batch size (as ``scheduler.dispatch.picking`` takes them)."""
    pending = list(rows)
    while pending:
        head, rest = pending[0], pending[1:]
        key = channel.group_key(head)
        group, pending = [head], []
        for row in rest:
            if len(group) < channel.batch_size and channel.group_key(row) == key:
                group.append(row)
            else:
                pending.append(row)
        yield group


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def request_lines(request: SendRequest) -> list[str]:
    """A request in a line or two: endpoint, who, and the text or the call's settings."""
    body = request.body
    endpoint = request.path.removeprefix("/api/v1/")
    if "text" in body:
        to = body["to"]
        who = f"{len(to)} numbers" if isinstance(to, list) else str(to)
        head = f"{endpoint} → {who}: "
        return [head + _clip(json.dumps(body["text"], ensure_ascii=False),
                             WIDTH - len(INDENT) - len(head))]
    people = body.get("recipients") or [{"phone": n} for n in body.get("numbers", [])]
    what = (f'flowId "{body["flowId"]}"' if body.get("flowId")
            else f'audio {body.get("audioUrl")}')
    names = sorted({k for p in people for k in (p.get("variables") or {})})
    line = f"{endpoint} → {len(people)} recipients, {what}"
    if body.get("maxAttempts"):
        line += f", maxAttempts {body['maxAttempts']}"
    if names:
        line += f"; each with its variables ({', '.join(names)})"
    return [line]


# --------------------------------------------------------------------------- outcomes


def _recipients(ledger: Ledger, run: Run) -> list[tuple[str, str, dict[str, Any]]]:
    """(number, state, details) of each delivery of the run, in plan order."""
    from scheduler.ledger.demo_reads import DemoReads

    return [(o.to, o.state, o.details) for o in DemoReads(ledger.engine).outcomes(run.id or 0)]


def outcome_lines(ledger: Ledger, run: Run, variables: dict[str, dict[str, Any]]
                  ) -> list[str]:
    """Each recipient's outcome and the run's totals (SMS or voice)."""
    from scheduler.views.channel_status import (
        SmsOutcomes,
        VoiceOutcomes,
        channel_outcomes,
        money,
    )

    rows = _recipients(ledger, run)
    totals = channel_outcomes(ledger, run.id or 0, run.channel)
    if isinstance(totals, SmsOutcomes):
        lines = _sms_lines(rows)
        lines.append(f"{totals.segments} segments · {money(totals.cost_micro_reais)} · "
                     "reports by the signed account webhook")
        return lines
    lines = [_call_line(to, state, details, variables.get(to) or {})
             for to, state, details in rows]
    if isinstance(totals, VoiceOutcomes):
        lines.append(f"answered {totals.answered} · not answered {totals.not_answered} · "
                     f"digits in {totals.pressed_digits} calls · talk "
                     f"{totals.talk_seconds} s")
    return lines


def _sms_lines(rows: Sequence[tuple[str, str, dict[str, Any]]]) -> list[str]:
    by_state: dict[str, list[str]] = {}
    for to, state, details in rows:
        if state == "read":
            state = "delivered"
        code = details.get("errorCode")
        by_state.setdefault(state, []).append(f"{to} ({code})" if code else to)
    named = {"accepted": "no report yet", "sent": "no report yet"}
    return [f"{named.get(state, state)}: {', '.join(numbers)}"
            for state, numbers in sorted(by_state.items(),
                                         key=lambda kv: (kv[0] != "delivered", kv[0]))]


def _call_line(to: str, state: str, details: dict[str, Any], variables: dict[str, Any]
               ) -> str:
    from scheduler.service.account_models import cause_text

    who = f"{to} {_clip(', '.join(str(v) for v in variables.values()), 26):<26}"
    if state == "answered":
        talk = details.get("talkSeconds")
        digits = details.get("digits")
        said = "answered" + (f", {talk} s" if talk is not None else "")
        return f"{who} {said}" + (f', pressed "{digits}"' if digits else ", no key pressed")
    if state == "not_answered":
        cause = cause_text(details.get("cause"), details.get("causeDescription"))
        return f"{who} not answered" + (f" ({cause})" if cause else "")
    named = {"accepted": "no outcome yet", "sent": "no outcome yet"}
    return f"{who} {named.get(state, state)}"
