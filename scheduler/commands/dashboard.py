"""``campaign dashboard [--host H] [--port P]``: the live web dashboard of runs, senders and
campaigns (its logins: ``campaign dashboard-user``).

It listens on ``[dashboard] host`` and ``port`` (127.0.0.1:8790 unless config.toml says
otherwise); another address than loopback needs logins (``[dashboard.users.NAME]``). A busy
port is an error naming it. ``campaign serve`` serves the same pages when ``[dashboard]
serve = true`` (:func:`serve_alongside`), never on the webhook receiver's port.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.errors import ConfigError, SchedulerError

if TYPE_CHECKING:
    import socket

    from fastapi import FastAPI

    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings


def check_campaign(path: Path) -> tuple[dict[str, Any], list[str]]:
    """What ``campaign plan --json`` says of a campaign file, and ``validate``'s errors."""
    from scheduler.commands.plan import plan_report

    report, issues = plan_report(path, None)
    return report, [str(issue) for issue in issues]


def build_app(settings: Settings, ledger: Ledger) -> FastAPI:
    """The dashboard over ``ledger``, its campaigns page checking files as ``plan`` does."""
    from scheduler.dashboard.app import create_app

    return create_app(settings, ledger, check=check_campaign)


def listen(settings: Settings, host: str, port: int) -> socket.socket:
    """The dashboard's socket on ``host:port``: refused on a non-loopback host without
    logins, on the webhook receiver's port, and (clearly) on a port in use."""
    from scheduler.core.httpserver import try_bind
    from scheduler.dashboard import auth

    auth.check_binding(host, settings.dashboard)
    if port and port == settings.receiver_port:
        raise ConfigError(f"the dashboard cannot use port {port}: it is the webhook "
                          "receiver's (receiver_port); the receiver's port never serves the "
                          "dashboard. Choose another [dashboard] port or --port")
    sock = try_bind(host, port)
    if sock is None:
        raise SchedulerError(f"cannot serve the dashboard on {host}:{port}: the port is in use "
                             "(another dashboard, or another program) or the address is not "
                             "this machine's; choose another with --port or [dashboard] port "
                             "in config.toml")
    sock.listen(2048)  # a browser opening the printed address waits while the app starts
    return sock


def dashboard_command(
    host: str | None = typer.Option(None, "--host", show_default=False,
                                    help="Address to listen on (default: the dashboard's "
                                         "host in config.toml, else 127.0.0.1). Another "
                                         "address needs logins."),
    port: int | None = typer.Option(None, "--port", min=0, max=65535, show_default=False,
                                    help="Port (default: its port in config.toml, else "
                                         "8790; 0: a free one)."),
) -> None:
    """Serve the live dashboard: runs, senders, campaigns; pause, resume, cancel, resend."""
    from scheduler.wiring import open_project

    settings, ledger = open_project()
    conf = settings.dashboard.model_copy(update={
        "host": host or settings.dashboard.host,
        "port": settings.dashboard.port if port is None else port})
    settings = settings.model_copy(update={"dashboard": conf})
    sock = listen(settings, conf.host, conf.port)
    url = conf.address(sock.getsockname()[1])
    from rich.console import Console

    from scheduler.ledger.db import ledger_label

    console = Console(highlight=False)
    console.print(f"dashboard at {url} (Ctrl-C stops it)")
    console.print(f"ledger: {ledger_label(settings)}", soft_wrap=True)
    if not conf.users:
        console.print("no logins configured: anyone on this machine acts as an operator "
                      "(add [dashboard.users] to config.toml to require logins)",
                      markup=False)
    from scheduler.core.httpserver import serve_until_stopped

    serve_until_stopped(build_app(settings, ledger), sock)


@contextlib.contextmanager
def serve_alongside(settings: Settings, ledger: Ledger) -> Iterator[str | None]:
    """With ``[dashboard] serve = true``: the dashboard served on its own port while the
    block runs (its address; None when the setting is off)."""
    if not settings.dashboard.serve:
        yield None
        return
    from scheduler.core.httpserver import BackgroundServer

    conf = settings.dashboard
    sock = listen(settings, conf.host, conf.port)
    server = BackgroundServer(build_app(settings, ledger), sock=sock).start()
    try:
        yield conf.address(server.port)
    finally:
        server.stop()


def register(app: typer.Typer) -> None:
    """Add ``campaign dashboard``."""
    app.command("dashboard")(dashboard_command)
