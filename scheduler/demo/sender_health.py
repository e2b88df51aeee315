"""The demo's sender-care part: a sender in trouble mid-run, and what the engine did.

``campaigns/demo_health.toml`` sends one text to the demo's 200 customers through three
sessions of its own (``demo-03`` to ``demo-05``: the run goes on in a thread while the demo's
other parts run, and the calls part points ``demo-01`` and ``demo-02`` at its own receiver,
which stops before this run ends). On the embedded sandbox, ``demo-03`` is made to hit a
rate-limit storm after a few sends and to be logged out a little later (the sandbox's
"Senders in trouble" settings); the run goes on through the other two. The part prints
each sender's sends, ``demo-03``'s state changes as its history keeps them (throttled by
its health score, held when its session logged out), and how many sends went through it
after the logout, from the sandbox's own record. Against a real service the trouble cannot
be staged: the part is skipped.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
from rich.console import Console

from scheduler.demo.channels import WIDTH, run_quietly, say
from scheduler.ledger.demo_reads import DemoReads
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.wiring import ServiceTarget

#: The campaign of this part, and the sender that gets into trouble.
CAMPAIGN, TROUBLED = "campaigns/demo_health.toml", "demo-03"
#: What the sandbox does to it: 429s for 3 s after its 8th send; once the engine has
#: throttled it, the sandbox logs it out at its next send (:func:`_logout_once_throttled`:
#: a count of sends fixed beforehand came before the engine's judgement, 5 s after the
#: first 429, or after the run's end, as the machine's load made the run slower or faster).
TROUBLE = {"rate_limit_storm": {TROUBLED: {"after_sends": 8, "for_s": 3,
                                           "retry_after_s": 1}},
           "logout_after": {}}
#: The trouble taken off again.
CALM: dict[str, dict[str, object]] = {"rate_limit_storm": {}, "logout_after": {}}


@dataclass
class HealthPart:
    """The sender-care run going on in a thread of its own (the demo's other parts go on
    meanwhile: its pace and the engine's judgement of the storm take seconds of waiting)."""

    run_id: int | None
    skipped: str | None
    base_url: str
    since: datetime
    ledger: Ledger
    thread: threading.Thread | None = None
    failed: list[BaseException] = field(default_factory=list)
    #: What the run said on its way (its end, when not completed).
    notes: io.StringIO = field(default_factory=io.StringIO)

    def wait(self) -> None:
        """Until the run ended (the sandbox's trouble taken off again)."""
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def finish(self, console: Console, *, number: int) -> int | None:
        """Wait for the run, then say part ``number``: the header, the run, its outcome."""
        self.wait()
        console.print(f"[bold]{number}. Keeping numbers healthy: {CAMPAIGN}[/]",
                      highlight=False)
        if self.skipped is not None or self.run_id is None:
            say(console, [f"{CAMPAIGN} {self.skipped}: part skipped"])
            return None
        if self.failed:
            raise self.failed[0]
        storm = TROUBLE["rate_limit_storm"][TROUBLED]
        run = self.ledger.get_run(self.run_id)
        others = [name for name in self.ledger.options(run).senders if name != TROUBLED]
        say(console, [f"run {self.run_id}: {run.planned_count} texts from "
                      f"{', '.join(others)} and {TROUBLED}; the sandbox storms {TROUBLED} "
                      f"with 429s after {storm['after_sends']} sends, and logs it out at "
                      "its next send once the engine has throttled it"])
        for line in self.notes.getvalue().splitlines():
            console.print(line, highlight=False, markup=False)
        say(console, _lines(self.ledger, self.run_id, self.since, self.base_url))
        return self.run_id


def start_health_part(settings: Settings, ledger: Ledger, target: ServiceTarget,
                      root: Path) -> HealthPart:
    """Stage the trouble, plan the run and start it in a thread; :meth:`HealthPart.finish`
    says it."""
    from scheduler.core.timeutil import utcnow
    from scheduler.usecases.planning import plan_run

    path = root / CAMPAIGN
    if not path.is_file() or not target.is_sandbox:
        why = "not found" if not path.is_file() else \
            "needs the sandbox to stage a sender's trouble"
        return HealthPart(None, why, target.base_url, utcnow(), ledger)
    _stage(target.base_url, TROUBLE)
    try:
        run_id = plan_run(ledger, path, start_at=utcnow(), target=target.ledger_value)
    except BaseException:
        _stage(target.base_url, CALM)
        raise
    part = HealthPart(run_id, None, target.base_url, utcnow(), ledger)

    def run() -> None:
        done = threading.Event()
        watch = threading.Thread(target=_logout_once_throttled,
                                 args=(ledger, target.base_url, part.since, done),
                                 name="demo-health-watch", daemon=True)
        watch.start()
        try:
            run_quietly(settings, ledger, ledger.get_run(run_id), target,
                        Console(file=part.notes, width=WIDTH))
        except BaseException as error:  # said by finish(), in the demo's own thread
            part.failed.append(error)
        finally:
            done.set()
            watch.join()
            _stage(target.base_url, CALM)

    part.thread = threading.Thread(target=run, name="demo-health", daemon=True)
    part.thread.start()
    return part


def _logout_once_throttled(ledger: Ledger, base_url: str, since: datetime,
                           done: threading.Event) -> None:
    """When the troubled sender's history says ``throttled`` (the engine judged the storm),
    have the sandbox log its session out at its next send; give up when ``done`` is set."""
    while not done.wait(0.1):
        changes = DemoReads(ledger.engine).history(TROUBLED)
        if any(c.to_state == "throttled" and c.at >= since for c in changes):
            with httpx.Client(base_url=base_url, timeout=10.0) as http:
                trouble = http.get("/sandbox/trouble", params={"session_id": TROUBLED}).json()
                report = trouble.get(TROUBLED, trouble) if isinstance(trouble, dict) else {}
                sends = int(report.get("accepted", 0)) + 1 if isinstance(report, dict) else 1
                _stage(base_url, {"logout_after": {TROUBLED: {"sends": sends}}})
            return


def _stage(base_url: str, rules: Mapping[str, object]) -> None:
    with httpx.Client(base_url=base_url, timeout=10.0) as http:
        http.post("/sandbox/faults", json=rules).raise_for_status()


def _lines(ledger: Ledger, run_id: int, since: datetime, base_url: str) -> list[str]:
    per_sender, changes = DemoReads(ledger.engine).senders_story(run_id, TROUBLED, since)
    # the first reason of each state (a score's reason is updated while the state holds)
    changes = [c for i, c in enumerate(changes) if i == 0 or c.to_state != changes[i - 1].to_state]
    lines = ["sent: " + ", ".join(f"{name} {n}" for name, n in sorted(per_sender.items()))]
    path = " → ".join([changes[0].from_state or "new"] + [
        f"{c.to_state} ({c.reason})" if c.reason else c.to_state for c in changes]) \
        if changes else "no change"
    lines.append(f"{TROUBLED}: {path}")
    with httpx.Client(base_url=base_url, timeout=10.0) as http:
        trouble = http.get("/sandbox/trouble", params={"session_id": TROUBLED}).json()
        sends = http.get("/sandbox/sends", params={"session_id": TROUBLED}).json()
    report = trouble.get(TROUBLED, trouble) if isinstance(trouble, dict) else {}
    out_at = report.get("loggedOutAt") if isinstance(report, dict) else None
    if out_at:
        after = [s for s in sends if s.get("at", "") > out_at]
        lines.append(f"sends through {TROUBLED} after its logout (the sandbox's record): "
                     f"{len(after)}; its rows went to the other two")
    return lines


__all__ = ["CAMPAIGN", "HealthPart", "start_health_part"]
