"""The campaigns page's data: each file under the project's ``campaigns/`` with what
``campaign validate`` and ``campaign plan`` say of it, kept until the file changes.

The check itself is handed in (``campaign dashboard`` passes ``campaign plan``'s
``plan_report``, which validates too): the dashboard reads campaigns, it never edits them.
A check that raises (even a bug of the checks) is shown as that file's error, never as a
failed page.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from scheduler.core.errors import SchedulerError

logger = logging.getLogger("scheduler.dashboard")

#: ``check(path) -> (plan report, errors)``: ``campaign plan --json``'s object and the
#: problems ``campaign validate`` lists, one line each.
Check = Callable[[Path], tuple[dict[str, Any], list[str]]]


class CampaignCheck(BaseModel):
    """One campaign file and what validate and plan said of it."""

    path: Path
    #: The file's name under ``campaigns/`` (``promo/black-friday.toml``).
    name: str
    mtime_ns: int
    size: int
    campaign: str | None = None
    channel: str | None = None
    errors: list[str] = Field(default_factory=list)
    #: ``campaign plan --json``'s object (recipients, steps, senders, start, finish …).
    plan: dict[str, Any] = Field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """Whether validate found nothing wrong."""
        return not self.errors

    @property
    def recipients(self) -> dict[str, Any]:
        """The recipients' counts (read, valid, duplicates, …)."""
        found = self.plan.get("recipients")
        return found if isinstance(found, dict) else {}

    @property
    def deliveries(self) -> int:
        """Deliveries the plan would store (every step of every valid recipient)."""
        return sum(int(step.get("planned", 0)) for step in self.plan.get("steps", []))


class CampaignFiles:
    """The checks of a project's campaign files, each made again only when its file
    changes (its modification time or size)."""

    def __init__(self, folder: Path, check: Check | None) -> None:
        self.folder = folder
        self.check = check
        self._cache: dict[Path, CampaignCheck] = {}
        self._lock = threading.Lock()

    def files(self) -> list[Path]:
        """Every ``*.toml`` under the folder, sorted by their path."""
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.rglob("*.toml") if p.is_file())

    def read(self, *, again: bool = False) -> list[CampaignCheck]:
        """Every file with its check (``again``: check them all again)."""
        return [self.one(path, again=again) for path in self.files()]

    def one(self, path: Path, *, again: bool = False) -> CampaignCheck:
        """``path``'s check, from the cache while the file is unchanged."""
        stat = path.stat()
        with self._lock:
            cached = self._cache.get(path)
        if (cached is not None and not again and cached.mtime_ns == stat.st_mtime_ns
                and cached.size == stat.st_size):
            return cached
        made = self._check(path, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            self._cache[path] = made
        return made

    def _check(self, path: Path, mtime_ns: int, size: int) -> CampaignCheck:
        name = path.relative_to(self.folder).as_posix()
        base = CampaignCheck(path=path, name=name, mtime_ns=mtime_ns, size=size)
        if self.check is None:
            return base.model_copy(update={"errors": [
                "not checked: this server was started without the campaign checks"]})
        try:
            report, errors = self.check(path)
        except SchedulerError as exc:
            return base.model_copy(update={"errors": [str(exc)]})
        except Exception as exc:  # a file the checks trip on: its error, not the page's
            logger.exception("dashboard: checking %s failed", path)
            return base.model_copy(update={"errors": [
                f"could not be checked ({type(exc).__name__}: {exc}); run `campaign "
                f"validate` on it to see more"]})
        return base.model_copy(update={
            "campaign": report.get("campaign"), "channel": report.get("channel"),
            "errors": errors, "plan": report})
