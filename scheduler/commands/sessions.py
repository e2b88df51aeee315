"""``campaign sessions list | create | qr | status | webhook``: sender sessions on the service.

From an API key to a connected sender without another tool: create the session, scan the QR
code printed in the terminal (also saved as a PNG), watch its status, point its webhook at
the receiver. These commands need a configured service (``CAMPAIGN_BASE_URL`` and
``CAMPAIGN_API_KEY``); they never fall back to the embedded sandbox.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.display import clean, clean_markup, hide_url_secrets
from scheduler.core.errors import SchedulerError
from scheduler.core.time_words import local_time

if TYPE_CHECKING:
    from scheduler.ledger.rows import SessionStatusRow
    from scheduler.service.client import ServiceClient
    from scheduler.service.responses import QrCode, SessionRecord
    from scheduler.settings.load import Settings

sessions_app = typer.Typer(
    name="sessions",
    help="Sender sessions on the configured service: list, create, QR code, status, webhook.",
    no_args_is_help=True,
)

SESSION_ID = typer.Argument(..., help="Session id (the sender name used in campaigns).")
JSON_OPTION = typer.Option(False, "--json", help="Print JSON instead of text.")
OUTPUT_OPTION = typer.Option(
    None, "-o", "--output", help="Where to save the QR code PNG (default: state folder, "
    "or the current folder, as qr-<ID>.png).", dir_okay=False,
)
LINK_STEPS = "WhatsApp on the sender's phone → Settings → Linked devices → Link a device"


def _settings() -> Settings:
    from scheduler.settings.load import load_settings

    return load_settings()


def _say(text: str) -> None:
    """Print ``text`` wrapped at 80 columns (file paths and commands are never broken),
    control characters from the service or its events shown as escapes."""
    typer.echo(textwrap.fill(clean(text), width=80, break_long_words=False,
                             break_on_hyphens=False))


def _check_url(url: str, what: str) -> str:
    if not url.startswith(("http://", "https://")) or len(url) <= len("https://"):
        raise SchedulerError(f"{what} {url!r}: expected an http:// or https:// address")
    return url


def _record_json(record: SessionRecord) -> dict[str, Any]:
    from scheduler.service.sender_check import problem_for

    data = record.model_dump(mode="json", exclude={"qrCodeImage"}, exclude_none=True)
    if record.webhookUrl:  # the receiver's token stays off the screen
        data["webhookUrl"] = hide_url_secrets(record.webhookUrl)
    problem = problem_for(record.sessionId, record)
    data["ready"] = problem is None
    if problem is not None:
        data["problem"] = problem.reason
        data["fix"] = problem.fix
    return data


def _can_draw(text: str) -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _show_qr(settings: Settings, session_id: str, output: Path | None) -> None:
    """Fetch the session's QR code, save it as a PNG and draw it in the terminal."""
    from scheduler.service.session_admin import (
        call_service,
        default_qr_path,
        fetch_qr,
        qr_terminal_text,
        save_png,
    )

    async def qr_of(client: ServiceClient) -> tuple[QrCode, bytes]:
        return await fetch_qr(client, session_id)

    qr, png = call_service(settings, qr_of, doing=f"fetching the QR code of {session_id}",
                           session_id=session_id)
    path = save_png(output or default_qr_path(settings, session_id), png)
    status = qr.status or "waiting"
    _say(f"Session {session_id} is {status}: scan this QR code with {LINK_STEPS}:")
    drawing = qr_terminal_text(qr.qrCode) if qr.qrCode else None
    if drawing is not None and _can_draw(drawing):
        typer.echo(drawing, nl=False)
    else:
        _say("(this terminal cannot show the QR code: open the PNG below)")
    typer.echo(f"QR code saved to {path}")
    _say(f"A QR code expires after a short while: `campaign sessions qr {session_id}` gives "
         f"a fresh one; `campaign sessions status {session_id}` shows when the session is "
         "connected.")


def _shown_time(text: str, zone: str) -> str:
    """A time the service gave as ISO 8601, in ``zone`` with its label (as given when it
    is not ISO 8601)."""
    from datetime import datetime

    try:
        return local_time(datetime.fromisoformat(text), zone, seconds=True)
    except ValueError:
        return text


def _print_status(record: SessionRecord, zone: str) -> None:
    """The session's fields (what the service sent, control characters escaped; its time
    in ``zone``) and whether it can send."""
    from scheduler.service.sender_check import problem_for

    typer.echo(f"{clean(record.sessionId)}: {clean(record.status or 'status not reported')}")
    updated = _shown_time(record.updatedAt, zone) if record.updatedAt else None
    for label, value in (("phone", record.phone), ("name", record.name),
                         ("webhook", record.webhookUrl and hide_url_secrets(record.webhookUrl)),
                         ("provider", record.provider),
                         ("updated", updated)):
        if value:
            typer.echo(f"  {label:<9}{clean(value)}")
    problem = problem_for(record.sessionId, record)
    if problem is None:
        typer.echo("  ready to send")
    else:
        _say(f"  not ready: {problem.fix}")


@sessions_app.command("list")
def list_command(as_json: bool = JSON_OPTION) -> None:
    """List the account's sessions with their status, phone and webhook."""
    from rich.console import Console
    from rich.table import Table

    from scheduler.service.session_admin import call_service, configured_service, shown_url

    settings = _settings()

    async def listing(client: ServiceClient) -> list[SessionRecord]:
        return await client.list_sessions()

    records = call_service(settings, listing, doing="listing sessions")
    if as_json:
        typer.echo(json.dumps([_record_json(r) for r in records], ensure_ascii=False, indent=2))
        return
    where = shown_url(configured_service(settings)[0])
    if not records:
        _say(f"No sessions on {where} yet: create one with `campaign sessions create ID`.")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("session", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("phone", no_wrap=True)
    table.add_column("name", overflow="fold")
    table.add_column("webhook", overflow="fold")
    for record in records:
        status = record.status or "?"
        shown = f"[green]{status}[/]" if status == "connected" else \
            f"[yellow]{clean_markup(status)}[/]"
        table.add_row(clean_markup(record.sessionId), shown, clean_markup(record.phone or ""),
                      clean_markup(record.name or ""),
                      clean_markup(hide_url_secrets(record.webhookUrl or "")))
    console = Console(width=min(Console().width, 80), highlight=False)
    console.print(table)
    connected = sum(1 for r in records if r.status == "connected")
    console.print(f"{len(records)} session(s) on {where}, {connected} connected")


@sessions_app.command("create")
def create_command(
    session_id: str = SESSION_ID,
    webhook: str | None = typer.Option(None, "--webhook", help="Webhook URL for its events."),
    output: Path | None = OUTPUT_OPTION,
) -> None:
    """Create a session and show the QR code to scan with the sender's phone."""
    from scheduler.service.exceptions import RequestRejected
    from scheduler.service.session_admin import SessionCommandError, call_service

    if webhook is not None:
        _check_url(webhook, "--webhook")
    settings = _settings()

    async def create(client: ServiceClient) -> SessionRecord:
        try:
            return await client.create_session(session_id, webhook_url=webhook)
        except RequestRejected as exc:
            if exc.status != 409:
                raise
            raise SessionCommandError(
                f"session {session_id} already exists ({exc.error}): `campaign sessions qr "
                f"{session_id}` shows its QR code, `campaign sessions status {session_id}` "
                "its status"
            ) from None

    record = call_service(settings, create, doing=f"creating session {session_id}",
                          session_id=session_id)
    _say(f"Session {session_id} created"
         + (f", webhook {hide_url_secrets(record.webhookUrl or webhook)}" if webhook else "") + ".")
    if record.status == "connected":
        _say(f"It is already connected{f' as {record.phone}' if record.phone else ''}.")
        return
    _show_qr(settings, session_id, output)


@sessions_app.command("qr")
def qr_command(session_id: str = SESSION_ID, output: Path | None = OUTPUT_OPTION) -> None:
    """Print the session's QR code in the terminal and save it as a PNG."""
    _show_qr(_settings(), session_id, output)


def last_status_event(settings: Settings,
                      session_id: str) -> tuple[SessionStatusRow | None, str]:
    """The last ``connection.status`` of the session that the project's receiver stored
    (during runs and ``campaign serve``), None when there is none or no ledger yet (none
    is created for this); and the zone to show it in (the newest run's, else UTC)."""
    from scheduler.ledger.db import open_ledger
    from scheduler.ledger.runs import Ledger
    from scheduler.ledger.sender_store import last_session_status

    if not settings.database_url:
        if settings.project_dir is None and not settings.state_dir.is_absolute():
            return None, "UTC"  # not in a project: no ledger to read
        if not (settings.state_path() / "campaign.db").is_file():
            return None, "UTC"
    engine = open_ledger(settings.resolved_database_url())
    try:
        row = last_session_status(engine, session_id)
        ledger = Ledger(engine)
        runs = ledger.list_runs()  # times in the newest campaign's zone, as `events` does
        return row, str(ledger.options(runs[0]).timezone) if runs else "UTC"
    finally:
        engine.dispose()


def _event_text(row: SessionStatusRow | None, zone: str) -> str:
    if row is None:
        return ("last status event: none received yet (the receiver stores them during runs "
                "and `campaign serve`)")
    why = f" ({row.reason})" if row.reason else ""
    return f"last status event at {local_time(row.at, zone, seconds=True)}: {row.status}{why}"


@sessions_app.command("status")
def status_command(session_id: str = SESSION_ID, as_json: bool = JSON_OPTION) -> None:
    """Show a session's status, phone and name, what to do if it cannot send, and the last
    status event (``connection.status``) the receiver stored for it."""
    from scheduler.service.session_admin import call_service, find_session

    settings = _settings()

    async def lookup(client: ServiceClient) -> SessionRecord:
        return await find_session(client, session_id)

    record = call_service(settings, lookup, doing=f"reading the status of {session_id}",
                          session_id=session_id)
    event, zone = last_status_event(settings, session_id)
    if as_json:
        data = _record_json(record)
        if event is not None:
            data["lastStatusEvent"] = {"status": event.status, "reason": event.reason,
                                       "at": event.at.isoformat()}
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        _print_status(record, zone)
        _say(f"  {_event_text(event, zone)}")


@sessions_app.command("webhook")
def webhook_command(
    session_id: str = SESSION_ID,
    url: str = typer.Argument(..., help="Where the service should POST this session's events."),
) -> None:
    """Set the URL the service posts the session's events to."""
    from scheduler.service.session_admin import call_service

    _check_url(url, "webhook URL")
    settings = _settings()

    async def set_url(client: ServiceClient) -> None:
        await client.set_webhook(session_id, url)

    call_service(settings, set_url, doing=f"setting the webhook of {session_id}",
                 session_id=session_id)
    _say(f"Session {session_id}: events now go to {hide_url_secrets(url)}")


def register(app: typer.Typer) -> None:
    """Add ``campaign sessions ...`` to the command line."""
    app.add_typer(sessions_app, name="sessions")
