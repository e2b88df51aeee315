"""``campaign dashboard-user hash [--user NAME] [--role ROLE]``: a password hash for a
dashboard login.

The password is read from a hidden prompt (typed twice), or from the first line of standard
input when that is not a terminal (``printf '%s\\n' "$PW" | campaign dashboard-user hash``),
never from an argument (arguments are seen by other users and kept in shell history). It
prints the argon2id hash, or with ``--user`` the whole ``[dashboard.users.NAME]`` block to
paste into ``config.toml``. Needs no project, no ledger and no service.
"""

from __future__ import annotations

import sys

import typer

from scheduler.core.errors import SchedulerError

app = typer.Typer(help="Logins of the web dashboard (`campaign dashboard`).",
                  no_args_is_help=True)


def read_password() -> str:
    """The password: a hidden prompt typed twice on a terminal, else stdin's first line."""
    if sys.stdin is not None and sys.stdin.isatty():
        value: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True,
                                  err=True)
        return value
    line = sys.stdin.readline() if sys.stdin is not None else ""
    if not line:
        raise SchedulerError("no password given: type it at the prompt, or pipe it in on "
                             "standard input (never as an argument)")
    return line.rstrip("\r\n")


def toml_block(name: str, role: str, password_hash: str) -> str:
    """The ``config.toml`` lines of one login."""
    quoted = name if name.replace("-", "").replace("_", "").isalnum() else f'"{name}"'
    return (f"[dashboard.users.{quoted}]\nrole = \"{role}\"\n"
            f"password_hash = \"{password_hash}\"\n")


@app.command("hash")
def hash_command(
    user: str | None = typer.Option(None, "--user", show_default=False,
                                    help="Print a \\[dashboard.users.NAME] block for this "
                                         "name instead of the bare hash."),
    role: str = typer.Option("viewer", "--role",
                             help="The role of that block: viewer or operator."),
) -> None:
    """Hash a dashboard password (argon2id) for config.toml; read from a prompt or stdin."""
    from scheduler.dashboard.passwords import hash_password
    from scheduler.dashboard.users import MAX_NAME_CHARS

    if role not in ("viewer", "operator"):
        raise SchedulerError(f"--role {role}: a role is viewer or operator")
    if user is not None and (not user.strip() or user != user.strip()
                             or len(user) > MAX_NAME_CHARS or '"' in user):
        raise SchedulerError(f"--user: a user name has 1 to {MAX_NAME_CHARS} characters, "
                             "no quotes and no spaces around it")
    password_hash = hash_password(read_password())
    typer.echo(toml_block(user, role, password_hash) if user else password_hash, nl=not user)


def register(root: typer.Typer) -> None:
    """Add ``campaign dashboard-user``."""
    root.add_typer(app, name="dashboard-user")
