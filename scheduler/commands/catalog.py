"""``campaign catalog get | command``: a business catalog's product, and queued commands.

``get PRODUCT --business JID`` reads one product through a sender session, at once or
(``--async``) as a queued command that is waited for, each change of its status shown;
``command ID`` shows (or ``--wait`` waits for) any queued command. Like ``campaign
sessions``, these need a configured service (``CAMPAIGN_BASE_URL`` and ``CAMPAIGN_API_KEY``).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.errors import SchedulerError

if TYPE_CHECKING:
    from scheduler.service.catalog_models import CatalogProduct, CommandRecord
    from scheduler.service.client import ServiceClient
    from scheduler.settings.load import Settings

catalog_app = typer.Typer(
    name="catalog",
    help="A business catalog's products, and asynchronous commands, on the configured service.",
    no_args_is_help=True,
)

JSON_OPTION = typer.Option(False, "--json", help="Print JSON instead of text.")
WAIT_OPTION = typer.Option(60.0, "--wait", min=0.0,
                           help="Longest wait for a queued command, in seconds.")
_DIGITS = re.compile(r"^[1-9][0-9]{7,14}$")
#: Product fields shown first, in this order, with their labels; other fields follow.
_SHOWN = (("name", "name"), ("description", "description"), ("availability", "availability"),
          ("retailerId", "retailer id"), ("url", "url"), ("imageUrl", "image"))


def _settings() -> Settings:
    from scheduler.settings.load import load_settings

    return load_settings()


def business_jid(value: str) -> str:
    """A business's JID from ``--business``: a JID, or a number (digits) made into one."""
    text = value.strip().lstrip("+")
    if _DIGITS.fullmatch(text):
        return f"{text}@s.whatsapp.net"
    if "@" in text and text.split("@", 1)[0] and text.split("@", 1)[1]:
        return text
    raise SchedulerError(f"--business {value!r}: expected a JID such as "
                         "5511999998888@s.whatsapp.net, or the business's number in digits")


async def sender_session(client: ServiceClient, session_id: str | None) -> str:
    """``session_id``, or the account's only connected session when none is given."""
    if session_id:
        return session_id
    connected = [r.sessionId for r in await client.list_sessions() if r.status == "connected"]
    if len(connected) == 1:
        return connected[0]
    found = ", ".join(connected) if connected else "none"
    raise SchedulerError(f"give the session to ask through with --session ID (connected "
                         f"sessions: {found}); `campaign sessions list` shows them all")


def product_lines(product: CatalogProduct, business: str, session_id: str) -> list[str]:
    """The product as lines of text: its id, then its fields, the price with its currency."""
    fields = product.fields()
    lines = [f"Product {fields.pop('id', '?')} of {business} (via session {session_id})"]
    price = fields.pop("price", None)
    currency = fields.pop("currency", None)
    fields.pop("businessJid", None)
    rows: list[tuple[str, Any]] = [(label, fields.pop(name)) for name, label in _SHOWN
                                   if name in fields]
    if price is not None:
        rows.insert(min(1, len(rows)), ("price", f"{price:.2f} {currency or ''}".rstrip()))
    rows += sorted(fields.items())
    lines += [f"  {label:<14}{value}" for label, value in rows]
    return lines


def _status_line(record: CommandRecord) -> str:
    return f"command {record.commandId}: {record.status}"


def _explain_command(exc: Exception, command_id: str | None) -> SchedulerError:
    from scheduler.service.catalog_client import CommandFailed, CommandStillRunning

    if isinstance(exc, CommandFailed):
        return SchedulerError(f"{exc}")
    assert isinstance(exc, CommandStillRunning)
    return SchedulerError(f"{exc}: `campaign catalog command {command_id or exc.command_id} "
                          "--wait 120` waits again")


def get_product(product_id: str, business: str, *, session_id: str | None, queued: bool,
                wait_s: float, as_json: bool, settings: Settings | None = None) -> None:
    """Fetch one product and print it (``queued``: through a command, its statuses shown)."""
    from scheduler.service.catalog_client import CommandFailed, CommandStillRunning
    from scheduler.service.session_admin import call_service

    jid = business_jid(business)
    settings = settings or _settings()

    def status(record: CommandRecord) -> None:
        if not as_json:
            typer.echo(_status_line(record))

    async def fetch(client: ServiceClient) -> tuple[str, CatalogProduct]:
        sid = await sender_session(client, session_id)
        try:
            product = await client.fetch_product(sid, product_id, jid, queued=queued,
                                                 timeout_s=wait_s, on_status=status)
        except (CommandFailed, CommandStillRunning) as exc:
            raise _explain_command(exc, None) from None
        return sid, product

    sid, product = call_service(settings, fetch, doing=f"fetching product {product_id}",
                                session_id=session_id)
    if as_json:
        typer.echo(json.dumps(product.fields(), ensure_ascii=False, indent=2))
        return
    for line in product_lines(product, jid, sid):
        typer.echo(line)


def show_command(command_id: str, *, wait_s: float, as_json: bool,
                 settings: Settings | None = None) -> None:
    """Print where a queued command stands (``wait_s`` > 0: once it is done or failed,
    waiting that long at most)."""
    from scheduler.service.catalog_client import CommandStillRunning
    from scheduler.service.session_admin import call_service

    settings = settings or _settings()

    async def look(client: ServiceClient) -> CommandRecord:
        if wait_s <= 0:
            return await client.get_command(command_id)
        try:
            return await client.wait_for_command(command_id, timeout_s=wait_s)
        except CommandStillRunning as exc:
            raise _explain_command(exc, command_id) from None

    record = call_service(settings, look, doing=f"reading command {command_id}")
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json", exclude_none=True),
                              ensure_ascii=False, indent=2))
        return
    typer.echo(_status_line(record))
    if record.error:
        typer.echo(f"  error: {record.error}")
    if record.result is not None:
        typer.echo(f"  result: {json.dumps(record.result, ensure_ascii=False)}")


@catalog_app.command("get")
def get_command(
    product_id: str = typer.Argument(..., help="The product's id in the catalog."),
    business: str = typer.Option(..., "--business", help="The business's JID (or number)."),
    session_id: str | None = typer.Option(
        None, "--session", help="Session to ask through (default: the only connected one)."),
    queued: bool = typer.Option(False, "--async", help="Queue it as a command and wait."),
    wait_s: float = WAIT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Show one product of a business's catalog."""
    get_product(product_id, business, session_id=session_id, queued=queued, wait_s=wait_s,
                as_json=as_json)


@catalog_app.command("command")
def command_command(
    command_id: str = typer.Argument(..., help="The commandId the service gave."),
    wait_s: float = typer.Option(0.0, "--wait", min=0.0, help="Wait up to this many seconds "
                                 "for it to be done or failed (0: show it now)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show where an asynchronous command stands."""
    show_command(command_id, wait_s=wait_s, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Add ``campaign catalog ...`` to the command line."""
    app.add_typer(catalog_app, name="catalog")
