"""Where a project lives: the folder whose ``state/`` holds the ledger, whatever the cwd.

A **project** is the nearest folder, at or above a starting point, that holds
``config.toml``, ``campaigns/`` or ``state/``. Commands given a campaign file start from the
file's folder (``shop/campaigns/welcome.toml`` → ``shop/``); the others start from the
current folder. ``CAMPAIGN_PROJECT_DIR`` names the project outright. So the same campaign run
from any folder reaches the same ledger, and a command run outside every project says so
instead of creating a second, empty ledger where it happens to be.
"""

from __future__ import annotations

import os
from pathlib import Path

from scheduler.core.errors import ConfigError

#: A folder holding any of these is a project root.
PROJECT_MARKERS = ("config.toml", "campaigns", "state")
PROJECT_ENV = "CAMPAIGN_PROJECT_DIR"


def find_project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding a project marker, else ``None``."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return None


def locate_project(near: Path | None = None) -> Path | None:
    """The project of this command: ``CAMPAIGN_PROJECT_DIR``, else found from ``near`` or cwd."""
    named = os.environ.get(PROJECT_ENV)
    if named:
        root = Path(named).expanduser()
        if not root.is_dir():
            raise ConfigError(f"{PROJECT_ENV}={named}: no such folder")
        return root.resolve()
    return find_project_root(near if near is not None else Path.cwd())


def no_project_message(near: Path | None = None) -> str:
    """Why there is no ledger here, and the two ways to name one."""
    where = (near.resolve().parent if near is not None and near.is_file() else
             (near or Path.cwd()).resolve())
    return (f"no campaign project at {where} or above (a folder holding config.toml, "
            f"campaigns/ or state/): run the command inside the project, or set "
            f"{PROJECT_ENV}=/path/to/project (or CAMPAIGN_DATABASE_URL)")
