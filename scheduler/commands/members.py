"""``campaign members list | add | update | remove``: account members of the configured service.

A member has a permission (``read``: list and read; ``write``: also send) on some sessions;
its own API key reaches only those. These commands need the owner's key of a configured
service (``CAMPAIGN_BASE_URL`` and ``CAMPAIGN_API_KEY``), like ``campaign sessions``; errors
(a bad e-mail, a member's key, an unknown member) are one line, never a traceback.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from scheduler.core.errors import SchedulerError

if TYPE_CHECKING:
    from scheduler.service.client import ServiceClient
    from scheduler.service.members_client import Member

members_app = typer.Typer(
    name="members",
    help="Account members and their per-session permissions: list, add, update, remove.",
    no_args_is_help=True,
)

JSON_OPTION = typer.Option(False, "--json", help="Print JSON instead of text.")
USER_ID = typer.Argument(..., help="The member's user_id (see `campaign members list`).")
PERMISSION = typer.Option(..., "--permission", "-p",
                          help="read (list and read only) or write (may also send).")
SESSIONS = typer.Option(..., "--session", "-s",
                        help="A session the member may use; repeat for several.")


def _permission(value: str) -> Any:
    from scheduler.service.members_client import PERMISSIONS

    if value not in PERMISSIONS:
        raise SchedulerError(f"permission {value!r}: use read (list and read only) or write "
                             "(may also send)")
    return value


def _line(member: Member) -> str:
    sessions = ", ".join(member.sessions) or "no sessions"
    return (f"{member.user_id}  {member.name or '?'} <{member.email or '?'}>  "
            f"{member.permission or '?'} on {sessions}")


def _show(member: Member, verb: str, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(member.model_dump(mode="json"), ensure_ascii=False))
    else:
        typer.echo(f"{verb} member {_line(member)}")


def _call(action: Any, doing: str) -> Any:
    from scheduler.service.session_admin import call_service
    from scheduler.settings.load import load_settings

    return call_service(load_settings(), action, doing=doing)


def list_command(as_json: bool = JSON_OPTION) -> None:
    """Every member of the account, with its permission and sessions."""

    async def listing(client: ServiceClient) -> list[Member]:
        return await client.list_members()

    members: list[Member] = _call(listing, "listing account members")
    if as_json:
        typer.echo(json.dumps([m.model_dump(mode="json") for m in members], ensure_ascii=False))
    elif not members:
        typer.echo("no members: add one with `campaign members add NAME EMAIL -p read -s ID`")
    else:
        for member in members:
            typer.echo(_line(member))


def add_command(
    name: str = typer.Argument(..., help="The member's name."),
    email: str = typer.Argument(..., help="The member's e-mail address."),
    permission: str = PERMISSION,
    sessions: list[str] = SESSIONS,
    as_json: bool = JSON_OPTION,
) -> None:
    """Add a member with a permission on some sessions."""
    chosen = _permission(permission)

    async def add(client: ServiceClient) -> Member:
        return await client.add_member(name, email, chosen, sessions)

    _show(_call(add, f"adding member {email}"), "added", as_json)


def update_command(
    user_id: int = USER_ID,
    permission: str = PERMISSION,
    sessions: list[str] = SESSIONS,
    as_json: bool = JSON_OPTION,
) -> None:
    """Replace a member's permission and sessions."""
    chosen = _permission(permission)

    async def update(client: ServiceClient) -> Member:
        return await client.update_member(user_id, chosen, sessions)

    _show(_call(update, f"updating member {user_id}"), "updated", as_json)


def remove_command(user_id: int = USER_ID, as_json: bool = JSON_OPTION) -> None:
    """Remove a member; its key stops reaching the account."""

    async def remove(client: ServiceClient) -> Member:
        return await client.remove_member(user_id)

    _show(_call(remove, f"removing member {user_id}"), "removed", as_json)


def register(app: typer.Typer) -> None:
    """Add ``campaign members ...`` to ``app``."""
    members_app.command("list")(list_command)
    members_app.command("add")(add_command)
    members_app.command("update")(update_command)
    members_app.command("remove")(remove_command)
    app.add_typer(members_app, name="members")
