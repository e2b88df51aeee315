"""The demo's WhatsApp calls part: a few calls placed to a list, each with its events.

``campaigns/demo_calls.toml`` (five customers, the demo's two sessions, ``record = true``)
is planned into the demo's ledger and run in the foreground like ``campaign run`` does:
the receiver up, each session's webhook pointed at it, one call at a time per session. The
part prints each call as its events told it (``call.ringing`` → ``call.connected`` →
``call.ended``, or ``call.not_answered``; repeats of the connection layer stored once), with
its length and whether it was recorded, then the run's totals.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from scheduler.demo.channels import run_quietly, say
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.wiring import ServiceTarget

#: The campaign of this part.
CAMPAIGN = "campaigns/demo_calls.toml"
#: How each event of a call is said, in the order a call goes through them.
STEPS = (("call.ringing", "ringing"), ("call.connected", "connected"),
         ("call.ended", "ended"), ("call.not_answered", "not answered"))


def calls_part(settings: Settings, ledger: Ledger, target: ServiceTarget, root: Path,
               console: Console, *, number: int) -> int | None:
    """Run the calls demo campaign as part ``number``; its run id (None when absent)."""
    from scheduler.core.timeutil import utcnow
    from scheduler.usecases.planning import plan_run

    console.print(f"[bold]{number}. WhatsApp calls, one at a time per session: {CAMPAIGN}[/]",
                  highlight=False)
    path = root / CAMPAIGN
    if not path.is_file():
        say(console, [f"{CAMPAIGN} not found: part skipped"])
        return None
    run_id = plan_run(ledger, path, start_at=utcnow(), target=target.ledger_value)
    run = ledger.get_run(run_id)
    senders = ", ".join(ledger.options(run).senders)
    say(console, [f"run {run_id}: {run.planned_count} calls through calls/stream (recorded) "
                  f"from {senders}"])
    run_quietly(settings, ledger, run, target, console)
    say(console, call_lines(ledger, run_id))
    return run_id


def _events(ledger: Ledger, call_id: str) -> list[str]:
    """The events stored for one call (once each), in the order a call goes."""
    from scheduler.ledger.tracking_store import TrackingStore

    with TrackingStore(ledger).reading("read a demo call's events") as book:
        stored = book.payloads_about(call_id.lower(), [n for n, _ in STEPS])
    names = {json.loads(item.payload).get("event") for item in stored}
    return [said for name, said in STEPS if name in names]


def call_lines(ledger: Ledger, run_id: int) -> list[str]:
    """Each call with its events, length and recording; then the totals."""
    from scheduler.ledger.demo_reads import DemoReads
    from scheduler.views.channel_status import CallsOutcomes, channel_outcomes

    lines = []
    for to, sender, state, details in DemoReads(ledger.engine).outcomes(run_id):
        call_id = str(details.get("callId") or "")
        chain = " → ".join(_events(ledger, call_id)) if call_id else "not placed"
        line = f"{to} {sender}: {chain}"
        if details.get("reason"):
            line += f" ({details['reason']})"
        if state == "answered" and details.get("durationMs") is not None:
            line += f", {details['durationMs'] / 1000:.1f} s"
        if details.get("recordingUrl"):
            line += ", recorded"
        lines.append(line)
    totals = channel_outcomes(ledger, run_id, "calls")
    if isinstance(totals, CallsOutcomes):
        lines.append(f"answered {totals.answered} · not answered {totals.not_answered} · "
                     f"talk {totals.talk_seconds:.1f} s · {totals.recorded} recordings")
    return lines
