"""``campaign schedule / unschedule / serve``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from scheduler.core.errors import SchedulerError
from scheduler.core.time_words import local_time

if TYPE_CHECKING:  # rich's console is imported when a command runs
    from rich.console import Console


def _console() -> Console:
    from rich.console import Console

    return Console()


def schedule_command(file: Path = typer.Argument(..., help="Campaign definition (TOML).")) -> None:
    """Register a campaign's schedule (its `at` or `cron`); `campaign serve` fires it."""
    from scheduler.campaign.plan import load_campaign
    from scheduler.core.timeutil import utcnow
    from scheduler.dispatch.triggers import add_schedule, make_trigger, next_fire_times
    from scheduler.wiring import open_project

    campaign = load_campaign(file)
    spec = campaign.spec.schedule
    if spec.cron:
        trigger = f"cron:{spec.cron}"
    elif spec.at:
        trigger = f"at:{spec.at.isoformat()}"
    else:
        raise SchedulerError(f"{file}: [schedule] has neither `at` nor `cron`; "
                             "use `campaign run` to send it now")
    kind, _, text = trigger.partition(":")
    now = utcnow()  # a past one-off `at` has no next fire (APScheduler still returns it)
    upcoming = [t for t in next_fire_times(make_trigger(kind, text, spec.timezone), now=now)
                if t > now]
    _, ledger = open_project(near=file)
    add_schedule(ledger, campaign.spec.name, str(file.resolve()), trigger, spec.timezone)
    console = _console()
    console.print(f"scheduled {campaign.spec.name!r} ({trigger}, {spec.timezone})")
    if upcoming:
        console.print("next: " + ", ".join(local_time(t, spec.timezone) for t in upcoming),
                      highlight=False)
    else:
        console.print("[yellow]its time has passed: `campaign serve` will record it as "
                      "missed unless it is within the start grace[/]")


def unschedule_command(name: str = typer.Argument(..., help="Campaign name.")) -> None:
    """Forget a campaign's schedule (runs already made are kept)."""
    from scheduler.dispatch.triggers import remove_schedule
    from scheduler.wiring import open_project

    _, ledger = open_project()
    if not remove_schedule(ledger, name):
        raise SchedulerError(f"no schedule named {name!r} (see `campaign schedule FILE`)")
    _console().print(f"unscheduled {name!r}")


def serve_command(
    start_grace: float = typer.Option(3600, "--start-grace", help="Seconds a due run may "
                                      "start late; later it is recorded as missed."),
) -> None:
    """Fire scheduled campaigns, receive webhooks and dispatch every unfinished run."""
    import asyncio

    from scheduler.commands.api import serve_alongside as api_alongside
    from scheduler.commands.dashboard import serve_alongside
    from scheduler.metrics import serving as metrics_port
    from scheduler.usecases.foreground import _sigint_sets
    from scheduler.usecases.serve import Server
    from scheduler.usecases.serve_log import serve_logging
    from scheduler.wiring import open_project, service_target

    settings, ledger = open_project()
    console = _console()

    async def main() -> None:
        stop = asyncio.Event()
        with service_target(settings) as target, _sigint_sets(stop), \
                serve_alongside(settings, ledger) as pages, \
                metrics_port.serve_alongside(settings, ledger) as metrics, \
                api_alongside(settings, ledger) as api:
            if pages is not None:  # [dashboard] serve = true: on its own port
                console.print(f"dashboard at {pages}", highlight=False)
            if metrics is not None:  # [metrics] serve = true: on its own port
                console.print(f"metrics at {metrics}", highlight=False)
            if api is not None:  # [api] serve = true: on its own port
                console.print(f"API at {api}", highlight=False)
            if target.is_sandbox:
                console.print("[yellow]No service configured (CAMPAIGN_BASE_URL and "
                              "CAMPAIGN_API_KEY): sending to the embedded sandbox; nothing "
                              "leaves this machine[/]")
            else:
                console.print(f"sending to {target.ledger_value.removeprefix('service:')}")
            with serve_logging():  # APScheduler's warnings in plain words, time and zone
                await Server(settings, ledger, target, console,
                             start_grace_s=start_grace).serve(stop)

    asyncio.run(main())


def register(app: typer.Typer) -> None:
    """Add the scheduling commands."""
    app.command("schedule")(schedule_command)
    app.command("unschedule")(unschedule_command)
    app.command("serve")(serve_command)
