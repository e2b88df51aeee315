"""``campaign events`` and ``campaign receiver``: what the service told us, and the receiver.

- ``events [--run RUN] [--last N] [--tail] [--json]``: stored webhook events, newest last;
  ``--tail`` keeps printing new ones until Ctrl-C.
- ``receiver [--host H] [--port N]``: serve the webhook receiver alone until Ctrl-C (the
  token of its URL is never printed unless ``--show-url`` is given).
"""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.display import clean
from scheduler.core.time_words import local_time

if TYPE_CHECKING:  # rich's console is imported when a command runs
    from rich.console import Console

#: Seconds between two looks at the ledger with ``--tail``.
TAIL_EVERY_S = 0.5


def _out() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def _line(row: dict[str, Any], zone: str, width: int | None = None) -> str:
    """An event as one line (two when one would be wider than ``width``: sender, number,
    message id and what the event did go on an indented second line); its time in ``zone`` with the
    zone's label, and every field that came from the webhook with its control characters
    shown as escapes."""
    at = row.get("received_at")
    when = local_time(at, zone, seconds=True) if isinstance(at, datetime) else str(at)
    who = row.get("session_id") or row.get("channel") or "-"
    head = "  ".join(clean(part) for part in (row["id"], when, row["event"]))
    tail = "  ".join(clean(part) for part in (
        who, row.get("number") or "-", row.get("message_id_norm") or "-",
        row.get("result") or "(not applied)"))
    if width is None or len(head) + 2 + len(tail) <= width:
        return f"{head}  {tail}"
    return f"{head}\n{' ' * (len(str(row['id'])) + 2)}{tail}"


def _zone(ledger: Any, run: int | None) -> str:
    """The zone events are shown in: the run's (``--run``), else the newest run's; UTC
    before any run."""
    if run is not None:
        return str(ledger.options(ledger.get_run(run)).timezone)
    runs = ledger.list_runs()
    return str(ledger.options(runs[0]).timezone) if runs else "UTC"


def _print(console: Console, rows: list[dict[str, Any]], as_json: bool, zone: str) -> None:
    from scheduler.tracking.counts import event_json

    for row in rows:
        if as_json:  # json.dumps escapes control characters itself
            print(json.dumps(event_json(row), ensure_ascii=False), flush=True)
        else:
            console.print(_line(row, zone, console.width), markup=False)


def events(
    run: int | None = typer.Option(None, "--run", help="Only events about this run."),
    last: int = typer.Option(50, "--last", min=1, help="How many of the newest to show."),
    tail: bool = typer.Option(False, "--tail", help="Keep printing new events (Ctrl-C stops)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
) -> None:
    """List stored webhook events, newest last."""
    from scheduler.tracking.counts import stored_events
    from scheduler.wiring import open_project

    _, ledger = open_project()
    zone = _zone(ledger, run)  # an unknown run: RunNotFound, one line, exit 1
    console = _out()
    rows = stored_events(ledger, run_id=run, last=last)
    if not rows and not tail and not as_json:
        console.print("no events stored" + (f" for run {run}" if run is not None else ""))
    _print(console, rows, as_json, zone)
    if not tail:
        return
    after = rows[-1]["id"] if rows else 0
    if not rows:
        newest = stored_events(ledger, last=1)
        after = newest[-1]["id"] if newest else 0
    # Ctrl-C stops it even when started with SIGINT ignored (a background job, some test
    # runners' workers): the help promises it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        while True:
            time.sleep(TAIL_EVERY_S)
            fresh = stored_events(ledger, run_id=run, after_id=after)
            if fresh:
                after = fresh[-1]["id"]
                _print(console, fresh, as_json, zone)
    except KeyboardInterrupt:
        return


def receiver(
    host: str | None = typer.Option(None, "--host", help="Interface (default: receiver_host)."),
    port: int | None = typer.Option(None, "--port", min=0, max=65535,
                                    help="Port (default: receiver_port; 0 picks one)."),
    show_url: bool = typer.Option(False, "--show-url",
                                  help="Print the session webhook URL with its token."),
) -> None:
    """Serve the webhook receiver alone until Ctrl-C."""
    from rich.markup import escape

    from scheduler.tracking import create_receiver, session_webhook_url
    from scheduler.wiring import open_project

    settings, ledger = open_project()
    host = host or settings.receiver_host
    if port is None and host == settings.receiver_host:
        from scheduler.tracking.identity import bind_receiver_socket

        sock = bind_receiver_socket(settings)  # the project's port, kept between processes
        sock.listen(2048)
    else:
        from scheduler.core.httpserver import bind

        sock = bind(host, port or 0)
        sock.listen(2048)
    base = f"http://{host}:{sock.getsockname()[1]}"
    console = _out()
    url = session_webhook_url(settings, base)
    shown = url if show_url else url.split("?", 1)[0] + "?token=…"
    console.print(escape(f"receiver on {base} (Ctrl-C stops); session webhook URL: {shown}"))
    from scheduler.tracking.identity import account_secret

    console.print(escape(f"account webhook (SMS/voice): {base}/webhooks/account"
                         + ("" if account_secret(settings) else
                            " (refused: no webhook_secret, and none kept in the state folder "
                            "yet: an SMS or voice `campaign run` makes one)")))
    if settings.webhook_token is None:
        console.print("no webhook_token is set: the token kept in the state folder is used "
                      "(--show-url prints the URL with it, to register it by hand)")
    app = create_receiver(settings, ledger)
    app.state.receiver.listen_port = sock.getsockname()[1]
    from scheduler.core.httpserver import serve_until_stopped

    try:
        serve_until_stopped(app, sock, graceful_s=None)
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled: a normal stop
        console.print("receiver stopped")
    finally:
        ledger.engine.dispose()


def register(app: typer.Typer) -> None:
    """Add ``events`` and ``receiver`` to the ``campaign`` command."""
    app.command("events")(events)
    app.command("receiver")(receiver)
