"""``person export`` and ``person forget`` as use cases: the CLI, the API and the dashboard
call these with who asks and why; each use is recorded in the privacy audit."""

from __future__ import annotations

import getpass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from scheduler.core.errors import SchedulerError
from scheduler.ledger import access
from scheduler.ledger import privacy as lp
from scheduler.ledger.access import Engine
from scheduler.ledger.privacy_key import ERASED_REASON, number_hash, pseudonym
from scheduler.privacy.numbers import formats, normalise


class RunRef(BaseModel):
    """A run that holds deliveries to the person."""

    id: int
    campaign_name: str
    channel: str
    status: str
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None


class PersonExport(BaseModel):
    """Everything the ledger holds about one number: its runs, then every row of every
    table that is about the person, whole, by table (deliveries with their rendered bodies
    and CSV values, events with their raw payloads, replies, link clicks, suppressions,
    label chats, consent records when the ledger keeps them, and any other row that holds
    the number)."""

    number: str
    formats: list[str]
    exported_at: datetime
    runs: list[RunRef] = Field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)

    def row_count(self) -> int:
        """How many rows the export holds."""
        return sum(len(rows) for rows in self.tables.values())


class Forgotten(BaseModel):
    """What ``person forget`` did: the pseudonym the rows now carry, rows per table."""

    pseudonym: str
    erased_at: datetime
    reason: str
    counts: dict[str, int]


def os_user() -> str:
    """The OS user running the command (who, in the audit)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def export_person(engine: Engine, raw: str, *, key: bytes | None, who: str, via: str,
                  now: datetime, reason: str | None = None, region: str = "BR"
                  ) -> PersonExport:
    """Everything about the number ``raw`` (any common format); recorded in the audit."""
    digits = normalise(raw, region)
    needles = formats(digits)
    listed = number_hash(key, digits) if key is not None else None
    subject = pseudonym(key, digits) if key is not None else "not-erased"
    with access.transaction(engine, "export a person's data") as conn:
        tables = lp.find_person(conn, digits, needles, listed)
        run_ids = [r["run_id"] for r in tables.get("deliveries", [])]
        runs = [RunRef(**r) for r in lp.runs_of(conn, run_ids)]
        lp.audit(conn, action="export", subject=subject, who=who, via=via, reason=reason,
                 at=now, counts={k: len(v) for k, v in tables.items()})
    return PersonExport(number=digits, formats=needles, exported_at=now, runs=runs,
                        tables=tables)


def forget_person(engine: Engine, raw: str, *, key: bytes, who: str, via: str, reason: str,
                  now: datetime, region: str = "BR") -> Forgotten:
    """Erase the number ``raw`` from every table in one transaction (see
    :func:`scheduler.ledger.privacy.forget`); recorded in the audit, by pseudonym."""
    if not reason.strip():
        raise SchedulerError("--reason: say why the person's data is erased")
    digits = normalise(raw, region)
    alias = pseudonym(key, digits)
    list_reason = ERASED_REASON.format(date=now.date().isoformat())
    with access.transaction(engine, "erase a person's data") as conn:
        counts = lp.forget(conn, digits, needles=formats(digits), pseudonym=alias,
                           number_hash=number_hash(key, digits), list_reason=list_reason,
                           now=now)
        lp.audit(conn, action="forget", subject=alias, who=who, via=via, reason=reason,
                 at=now, counts=counts)
    return Forgotten(pseudonym=alias, erased_at=now, reason=reason, counts=counts)
