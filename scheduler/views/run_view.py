"""A run as the dashboard and ``campaign status`` show it, read in ONE snapshot.

:func:`read_run_view` reads everything a run's page shows inside one
:func:`scheduler.ledger.access.snapshot`: the counts come from the per-run tallies the
database keeps (never a scan of the run's rows), the rest from indexed reads bounded by
a constant or by what the run did in the last minutes (see each part's docstring).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from scheduler.views.parts import (
    CallFunnel,
    ErrorGroup,
    FunnelView,
    Progress,
    RecentEvent,
    RunInfo,
    SenderGlance,
    SenderPace,
    SmsFunnel,
    StepFunnel,
    Stuck,
    Wait,
    WorkerPace,
)

__all__ = [
    "CallFunnel",
    "ErrorGroup",
    "FunnelView",
    "Progress",
    "RecentEvent",
    "RunInfo",
    "RunView",
    "SenderGlance",
    "SenderPace",
    "SmsFunnel",
    "StepFunnel",
    "Stuck",
    "Wait",
    "WorkerPace",
]


class RunView(BaseModel):
    """Everything a run's page shows, as of ``read_at`` (one consistent snapshot)."""

    run: RunInfo
    #: Deliveries by state (every state the run has rows in).
    counts: dict[str, int] = Field(default_factory=dict)
    funnel: FunnelView
    progress: Progress = Field(default_factory=Progress)
    #: Sends per sender in the last minutes.
    pace: list[SenderPace] = Field(default_factory=list)
    #: Why the run does not send now (empty: it sends, or it is finished).
    waits: list[Wait] = Field(default_factory=list)
    #: Failed rows grouped by error, most first.
    errors: list[ErrorGroup] = Field(default_factory=list)
    #: The run's newest events and replies, newest first (at most 20).
    events: list[RecentEvent] = Field(default_factory=list)
    workers: list[WorkerPace] = Field(default_factory=list)
    stuck: Stuck = Field(default_factory=Stuck)
    #: When the run's last send left (None: nothing sent yet).
    last_send_at: datetime | None = None
    senders: list[SenderGlance] = Field(default_factory=list)
    #: Skipped rows by the kind of their reason (blank_value, duplicate, invalid_number …).
    skipped_by_reason: dict[str, int] = Field(default_factory=dict)
    #: ``unknown`` rows: waiting for proof, unproven (safe to send again), unknowable.
    unknown_detail: dict[str, int] = Field(default_factory=dict)
    read_at: datetime
    #: A short token that changes when anything shown changes (live updates send a new
    #: fragment only then); ``read_at`` is not part of it.
    version: str = ""
