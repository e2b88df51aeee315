"""What the campaigns routes read and the start of a run does: the project's campaign files
with ``campaign validate``'s and ``campaign plan``'s results (the dashboard's campaigns page's
own checks, :class:`~scheduler.dashboard.campaign_files.CampaignFiles`, the check handed in
by the command that serves the API), and a new run of
one of them planned as ``campaign run FILE`` plans it
(:func:`scheduler.usecases.launch.plan_new_run`), behind an ``Idempotency-Key``
(:mod:`scheduler.ledger.idempotency`).

The API never sends: the run it plans is left ``planned`` for a live ``campaign serve``
worker, which takes every planned run of its target within a second (``Server.
runs_to_dispatch``). With none live, the answer says so (``campaign serve`` sends it, or
``campaign run FILE`` continues it in the foreground).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scheduler.core.errors import SchedulerError

if TYPE_CHECKING:
    from scheduler.dashboard.campaign_files import CampaignCheck, CampaignFiles, Check
    from scheduler.ledger.runs import Ledger
    from scheduler.settings.load import Settings


class NoSuchCampaign(SchedulerError):
    """A name that is no campaign file of the project (HTTP 404)."""


def campaign_files(settings: Settings | None, check: Check | None) -> CampaignFiles:
    """The project's ``campaigns/`` folder, each file's ``check`` kept until it changes
    (``campaign api`` and ``serve`` pass ``campaign plan``'s, as the dashboard's)."""
    from scheduler.dashboard.campaign_files import CampaignFiles

    root = (settings.project_dir if settings is not None else None) or Path.cwd()
    return CampaignFiles(root / "campaigns", check)


def find_file(files: CampaignFiles, name: str) -> Path:
    """The campaign file ``name`` (as listed: ``promo/black-friday.toml``) or
    :class:`NoSuchCampaign`; nothing outside the folder is ever reached."""
    for path in files.files():
        if path.relative_to(files.folder).as_posix() == name:
            return path
    shown = name if len(name) <= 80 and name.isprintable() else "(that name)"
    raise NoSuchCampaign(f"no campaign file {shown!r} under campaigns/ (see GET "
                         "/api/v1/campaigns)")


def describe(check: CampaignCheck, *, plan: bool) -> dict[str, Any]:
    """One file as the campaigns routes answer it (``plan``: with the whole plan report)."""
    doc: dict[str, Any] = {"name": check.name, "campaign": check.campaign,
                           "channel": check.channel, "valid": check.valid,
                           "errors": check.errors, "recipients": check.recipients,
                           "deliveries": check.deliveries}
    if plan:
        doc["plan"] = check.plan
    return doc


def request_hash(body: dict[str, Any]) -> str:
    """The SHA-256 of a start's body (its keys sorted): what an ``Idempotency-Key`` keeps."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def live_workers(ledger: Ledger, settings: Settings, now: datetime) -> int:
    """The live ``campaign serve`` workers that take a planned or resumed run: PostgreSQL's,
    or SQLite's one (the API served beside it, or on its own next to it)."""
    from scheduler.views.workers import served_by_workers, workers_view

    if ledger.engine.dialect.name == "sqlite":
        return len(workers_view(ledger, settings.worker_lease_s, now).workers)
    return served_by_workers(ledger, settings.worker_lease_s, now)


def start_run(ledger: Ledger, settings: Settings, files: CampaignFiles, key: str,
              body: dict[str, Any], now: datetime) -> tuple[dict[str, Any], bool]:
    """Start a run of ``body["campaign"]`` under ``key``: (the answer, whether a run was
    planned now). The same key with the same body gives the run it started; with another,
    :class:`~scheduler.ledger.idempotency.KeyReused`."""
    from scheduler.ledger import idempotency

    path = find_file(files, body["campaign"])  # an unknown file claims no key
    claim = idempotency.claim(ledger.engine, key, request_hash(body), now)
    if claim.run_id is not None:
        return answer(ledger, settings, claim.run_id, now, notes=[]), False
    created: list[int] = []

    def bind(run_id: int) -> None:  # the run exists: the key answers it from now on
        idempotency.settle(ledger.engine, key, run_id)
        created.append(run_id)

    try:
        run_id, notes = _plan(ledger, settings, path, body, on_created=bind)
    except BaseException:  # nothing of it will be sent: the key may start a run again
        idempotency.release(ledger.engine, key, run_id=created[0] if created else None)
        raise
    return answer(ledger, settings, run_id, now, notes=notes), True


def _plan(ledger: Ledger, settings: Settings, path: Path, body: dict[str, Any], *,
          on_created: Callable[[int], None]) -> tuple[int, list[str]]:
    """``campaign run FILE``'s checks and plan (its own functions), without sending."""
    from rich.console import Console

    from scheduler.campaign.plan import load_campaign
    from scheduler.usecases.launch import RunRefused, check_senders, plan_new_run
    from scheduler.usecases.planning import unfinished_run_for
    from scheduler.wiring import target_of

    service = settings.service_endpoint()  # a half-configured service stops here
    target = target_of(service)
    campaign = load_campaign(path)
    check_senders(settings, service, campaign)
    unfinished = unfinished_run_for(ledger, campaign.spec.name)
    if unfinished is not None:
        raise RunRefused(
            f"run {unfinished.id} of {campaign.spec.name!r} is not finished "
            f"({unfinished.status}): resume it (POST /api/v1/runs/{unfinished.id}/resume) or "
            f"cancel it (POST /api/v1/runs/{unfinished.id}/cancel) before a new run")
    said = io.StringIO()
    console = Console(file=said, width=200, highlight=False, color_system=None)
    run = plan_new_run(ledger, path, campaign, target, console,
                       new_run=bool(body.get("new_run")),
                       include_previous=bool(body.get("include_previous")),
                       on_created=on_created)
    assert run.id is not None
    return run.id, [line for line in said.getvalue().splitlines() if line.strip()]


def answer(ledger: Ledger, settings: Settings, run_id: int, now: datetime, *,
           notes: list[str]) -> dict[str, Any]:
    """What a start answers: the run, its status and counts, who sends it."""
    run = ledger.get_run(run_id)
    workers = live_workers(ledger, settings, now)
    note = None if workers else (
        "no live `campaign serve` worker: the run waits, planned, until `campaign serve` "
        "runs (or `campaign run FILE` continues it in the foreground)")
    return {"run": run_id, "campaign": run.campaign_name, "status": run.status,
            "counts": ledger.counts(run_id), "live_workers": workers, "said": notes,
            "note": note}
