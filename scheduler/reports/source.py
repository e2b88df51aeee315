"""The runs a report is about, as the report shows them; the rows themselves are read
through :mod:`scheduler.ledger.report_reads`, ``CHUNK_ROWS`` at a time."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from scheduler.ledger import report_reads
from scheduler.ledger.access import Engine
from scheduler.ledger.report_reads import ReportReads
from scheduler.reports.exceptions import CampaignNotFound, RunsNotFound

#: Rows per chunk when streaming a table.
CHUNK_ROWS = 5_000


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as the report shows it; times are aware UTC datetimes."""

    id: int
    campaign: str
    channel: str
    status: str
    timezone: str
    created_at: datetime | None
    fire_time: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    planned_count: int
    stop_reason: str | None
    definition: dict[str, Any] = field(default_factory=dict)
    target: str | None = None


def local_time(moment: datetime | str | None, zone: str) -> datetime | None:
    """``moment`` (aware, naive UTC or ISO text) as a naive time in ``zone``: a sheet's
    cells have no zone, a run's times are shown in its own."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(ZoneInfo(zone)).replace(tzinfo=None)


def _zone_name(name: str | None) -> str:
    """The run's IANA zone, or ``UTC`` when it is missing or unknown to this machine."""
    try:
        ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return name or "UTC"


def load_runs(reads: ReportReads, run_ids: Sequence[int]) -> list[RunInfo]:
    """The runs with these ids, in id order; :class:`RunsNotFound` names any that is missing."""
    wanted = sorted(set(run_ids))
    found = reads.runs(wanted)
    missing = [i for i in wanted if i not in found]
    if missing:
        raise RunsNotFound(missing)
    out = []
    for run_id in wanted:
        run = found[run_id]
        try:
            definition = json.loads(run.definition or "{}")
        except ValueError:
            definition = {}
        out.append(RunInfo(
            id=run_id, campaign=run.campaign_name, channel=run.channel,
            status=run.status, timezone=_zone_name(run.timezone),
            created_at=run.created_at, fire_time=run.fire_time,
            started_at=run.started_at, finished_at=run.finished_at,
            planned_count=run.planned_count or 0, stop_reason=run.stop_reason,
            definition=definition if isinstance(definition, dict) else {},
            target=run.target,
        ))  # fmt: skip
    return out


def campaign_run_ids(engine: Engine, name: str) -> list[int]:
    """Every run id of campaign ``name``, oldest first; :class:`CampaignNotFound` if none."""
    ids = report_reads.campaign_run_ids(engine, name)
    if not ids:
        raise CampaignNotFound(name)
    return ids
