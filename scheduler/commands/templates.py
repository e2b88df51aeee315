"""``campaign templates connect | list | create | delete``: official provider (``cloud_api``)
connections and their message templates, on the configured service.

``connect`` makes a manual ``cloud_api`` connection (ours where the service shows nothing:
``POST /api/v1/connections/cloud-api``); its access token is read from
``CAMPAIGN_CLOUD_API_TOKEN`` or ``--token-file``, never from the command line (it would show
in the process list) and never printed. Templates are listed as a table (``--json`` for
scripts), created with ``{{1}}`` … ``{{n}}`` body variables checked before sending, and
deleted in one language or all. Errors are one line naming the connection, never a
traceback: a QR session is not a ``cloud_api`` connection, a duplicate name and language.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.errors import SchedulerError

if TYPE_CHECKING:
    from scheduler.service.client import ServiceClient
    from scheduler.service.responses import SessionRecord
    from scheduler.service.template_models import TemplateRecord

#: Where ``connect`` reads the provider's access token from, unless ``--token-file``.
TOKEN_ENV = "CAMPAIGN_CLOUD_API_TOKEN"

templates_app = typer.Typer(
    name="templates",
    help="Official provider (cloud_api) connections and their message templates.",
    no_args_is_help=True,
)

JSON_OPTION = typer.Option(False, "--json", help="Print JSON instead of a table.")
CONNECTION = typer.Argument(..., help="The cloud_api connection (its session id).")
NAME = typer.Argument(..., help="Template name: lower case letters, digits and _.")


def _call(action: Any, doing: str, connection: str) -> Any:
    from scheduler.service.session_admin import call_service
    from scheduler.settings.load import load_settings

    return call_service(load_settings(), action, doing=doing, session_id=connection)


def _record(template: TemplateRecord) -> dict[str, Any]:
    return template.model_dump(mode="json", exclude_none=True)


def _option_file(option: str, path: Path) -> str:
    """The text of the file an option names, stripped; unreadable is an error naming both."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise SchedulerError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from None


def _token(token_file: Path | None) -> str:
    if token_file is not None:
        token = _option_file("--token-file", token_file)
        if not token:
            raise SchedulerError(f"--token-file {token_file} is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise SchedulerError(f"no access token: set {TOKEN_ENV} or give --token-file (the "
                             "token is never taken on the command line)")
    return token


def connect_command(
    connection: str = CONNECTION,
    phone_number_id: str = typer.Option(..., "--phone-number-id",
                                        help="The provider's phone number id (digits)."),
    business_account_id: str = typer.Option(..., "--business-account-id",
                                            help="The provider's business account id (digits)."),
    token_file: Path = typer.Option(None, "--token-file", help="A file holding the access "
                                    f"token (default: ${TOKEN_ENV})."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Connect an official provider number manually (no QR code): a cloud_api session."""
    token = _token(token_file)

    async def connect(client: ServiceClient) -> SessionRecord:
        return await client.connect_cloud_api(connection, phone_number_id=phone_number_id,
                                              business_account_id=business_account_id,
                                              access_token=token)

    record: SessionRecord = _call(connect, f"connecting {connection} (cloud_api)", connection)
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json", exclude_none=True),
                              ensure_ascii=False))
    else:
        kind = record.type or record.provider or "cloud_api"
        typer.echo(f"connected {record.sessionId} ({kind}, status {record.status or '?'})")


def list_command(connection: str = CONNECTION, as_json: bool = JSON_OPTION) -> None:
    """The connection's templates: name, language, category, variables, status, body."""

    async def listing(client: ServiceClient) -> list[TemplateRecord]:
        return await client.list_templates(connection)

    found: list[TemplateRecord] = _call(listing, f"listing the templates of {connection}",
                                        connection)
    if as_json:
        typer.echo(json.dumps([_record(t) for t in found], ensure_ascii=False))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    if not found:
        console.print(f"{connection} has no templates: add one with `campaign templates "
                      f"create {connection} NAME --language pt_BR --body 'Olá {{{{1}}}}'`",
                      markup=False)
        return
    table = Table("name", "language", "category", "variables", "status", "body",
                  title=f"Templates of {escape(connection)}")
    for item in found:
        table.add_row(escape(item.name), escape(item.language), escape(item.category or ""),
                      "?" if item.variables is None else str(item.variables),
                      escape(item.status or ""), escape(item.body or ""))
    console.print(table)


def create_command(
    connection: str = CONNECTION,
    name: str = NAME,
    language: str = typer.Option(..., "--language", "-l", help="Language code, e.g. pt_BR."),
    body: str = typer.Option(None, "--body", help="Body text with {{1}} … {{n}} variables."),
    body_file: Path = typer.Option(None, "--body-file", help="Read the body from a file."),
    category: str = typer.Option(None, "--category",
                                 help="MARKETING, UTILITY or AUTHENTICATION."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Create a template; its {{1}} … {{n}} body variables are checked before sending."""
    if (body is None) == (body_file is None):
        raise SchedulerError("give the template's text with --body or --body-file (one)")
    if body_file is not None:
        body = _option_file("--body-file", body_file)
    assert body is not None
    text = body

    async def create(client: ServiceClient) -> TemplateRecord:
        return await client.create_template(connection, name, language, text,
                                            category=category.upper() if category else None)

    made: TemplateRecord = _call(create, f"creating template {name} ({language}) on "
                                 f"{connection}", connection)
    if as_json:
        typer.echo(json.dumps(_record(made), ensure_ascii=False))
    else:
        typer.echo(f"created template {made.name} ({made.language}) on {connection}: "
                   f"{made.variables} body variable(s), {made.status or 'status unknown'}")


def delete_command(
    connection: str = CONNECTION,
    name: str = NAME,
    language: str = typer.Option(None, "--language", "-l",
                                 help="Only this language (default: every language)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Delete a template in one language, or in every language."""

    async def delete(client: ServiceClient) -> TemplateRecord | None:
        return await client.delete_template(connection, name, language)

    removed = _call(delete, f"deleting template {name} on {connection}", connection)
    shown = f"{name} ({language})" if language else name
    if as_json:
        typer.echo(json.dumps({"deleted": shown, "connection": connection,
                               "template": _record(removed) if removed else None},
                              ensure_ascii=False))
    else:
        typer.echo(f"deleted template {shown} from {connection}")


def register(app: typer.Typer) -> None:
    """Add ``campaign templates ...`` to ``app``."""
    templates_app.command("connect")(connect_command)
    templates_app.command("list")(list_command)
    templates_app.command("create")(create_command)
    templates_app.command("delete")(delete_command)
    app.add_typer(templates_app, name="templates")
