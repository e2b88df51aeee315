"""Planning runs: a new run from a campaign file, a re-plan, the run to continue.

The plan is stored in one transaction (all or nothing); each run records its target and
the fingerprint of the files it was planned from (see ``scheduler.campaign.fingerprint``).
A label filter is resolved from the run's ledger (``scheduler.usecases.label_lookup``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from scheduler.campaign.label_filter import LabelAudience
from scheduler.campaign.loader import Campaign
from scheduler.core.errors import SchedulerError
from scheduler.ledger.models import Run
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.ledger.suppression_list import listed_numbers
from scheduler.usecases.experiment_plan import experiment_plan
from scheduler.usecases.label_lookup import label_audience
from scheduler.usecases.link_setup import bind_run, refuse_unlinkable

if TYPE_CHECKING:
    from scheduler.privacy.erased import ErasedNumbers


def plan_run(ledger: Ledger, campaign_path: Path, *, start_at: datetime,
             fire_time: datetime | None = None,
             on_progress: Callable[[int], None] | None = None,
             target: str | None = None, skip_previous: bool = False,
             campaign: Campaign | None = None,
             labels: LabelAudience | None = None, rehearsal: bool = False,
             consent: dict[str, str] | None = None,
             erased: ErasedNumbers | None = None,
             listed: frozenset[str] | None = None,
             on_created: Callable[[int], None] | None = None) -> int:
    """Plan the campaign file and store it as a new run; returns the run id.

    ``campaign``: the file already loaded and checked by the caller (not read again).
    ``labels``: its label filter, when read elsewhere (else from this ledger's labels).
    ``rehearsal``: the configured service is not asked anything (see ``usecases.lookups``).
    ``consent``: the imported consent records, when read elsewhere (else from this ledger).
    ``erased``: the numbers erased at the person's request, when read elsewhere (else from
    this ledger, with the project's erasure key).
    ``listed``: the ledger's suppression list, numbers in clear, when read elsewhere (else
    from this ledger, once): the plan skips and counts them as the plan writer would.
    ``on_created``: called with the run's id as soon as the run exists, before its rows are
    planned (the HTTP API binds its ``Idempotency-Key`` to the run there, so a retry during
    a long plan answers this run instead of planning another).

    The plan is stored in one transaction: a bad row stops everything and stores nothing.
    The run records its ``target`` and the fingerprint of the files it was planned from;
    ``skip_previous`` skips numbers that received a step of the campaign's earlier runs to
    the same target.
    """
    from scheduler.campaign.fingerprint import fingerprint_of
    from scheduler.campaign.options import fallback_run_options, run_options
    from scheduler.campaign.plan import build_plan, load_campaign
    from scheduler.usecases.lookups import require_remote

    if campaign is None:
        campaign = load_campaign(campaign_path)
    require_remote(campaign, rehearsal=rehearsal)  # templates, products: once, before any row
    if labels is None:
        labels = label_audience(ledger.engine, campaign)
    if consent is None:
        consent = imported_consent(ledger, campaign)
    if erased is None:
        erased = ledger_erased(ledger)
    if listed is None:
        listed = listed_numbers(ledger.engine)
    plan = build_plan(campaign, labels=labels, imported=consent,
                      erased=erased.reason if erased is not None else None, listed=listed)
    spec = campaign.spec
    refuse_unlinkable(campaign)  # before the run exists: nothing to mark failed
    options = run_options(campaign)
    run_id = ledger.create_run(
        campaign_name=spec.name, channel=spec.channel, definition_path=str(campaign_path),
        definition=spec.model_dump(mode="json"), delivery_mode=spec.delivery,
        timezone=spec.schedule.timezone, fire_time=fire_time, target=target,
        fingerprint=fingerprint_of(campaign).model_dump_json(), options=options,
    )
    try:
        if on_created is not None:
            on_created(run_id)
        fallback = fallback_run_options(campaign, options)
        if spec.fallback is not None and fallback is not None:
            # the fallback run: planned empty, filled row by row by the parent's verdicts
            ledger.create_fallback_run(run_id, spec.fallback.channel, fallback.to_json())
        links = bind_run(campaign, ledger.engine, run_id)
        ledger.store_plan(run_id, plan.chunks(), start_at=start_at, on_progress=on_progress,
                          skip_previous_of=(spec.name, target) if skip_previous else None,
                          links=links, experiment=experiment_plan(campaign))
    except BaseException as exc:
        # the campaign's own error (a row, a render bound), so that `runs` and `status` say it
        lines = str(exc).splitlines() if isinstance(exc, SchedulerError) else []
        reason = "the plan could not be stored" + (
            f": {lines[0]}" + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else "")
            if lines else "")
        ledger.set_status(run_id, RunStatus.FAILED, reason=reason)
        ledger.release(run_id)
        raise
    return run_id


def replan_run(ledger: Ledger, run: Run, campaign_path: Path, *, start_at: datetime,
               on_progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Plan an unfinished run again from the files as they are now (see ``Ledger.replan``);
    its fallback run, if any, stays as it is (the rows its parent handed it stay there)."""
    from scheduler.campaign.fingerprint import fingerprint_of
    from scheduler.campaign.options import run_options
    from scheduler.campaign.plan import build_plan, load_campaign
    from scheduler.usecases.lookups import require_remote

    campaign = load_campaign(campaign_path)
    require_remote(campaign)
    assert run.id is not None
    erased = ledger_erased(ledger)
    plan = build_plan(campaign, labels=label_audience(ledger.engine, campaign),
                      imported=imported_consent(ledger, campaign),
                      erased=erased.reason if erased is not None else None,
                      listed=listed_numbers(ledger.engine))
    links = bind_run(campaign, ledger.engine, run.id)
    return ledger.replan(
        run.id, plan.chunks(), start_at=start_at,
        definition=campaign.spec.model_dump(mode="json"),
        fingerprint=fingerprint_of(campaign).model_dump_json(),
        options=run_options(campaign), on_progress=on_progress, links=links,
        experiment=experiment_plan(campaign))


def imported_consent(ledger: Ledger, campaign: Campaign) -> dict[str, str] | None:
    """The imported consent records of the campaign's channel, when it requires consent
    without a CSV column (None: not read)."""
    recipients = campaign.spec.recipients
    if recipients.consent != "required" or recipients.consent_column is not None:
        return None
    from scheduler.ledger.consent import consent_bases

    return consent_bases(ledger.engine, campaign.spec.channel)


def ledger_erased(ledger: Ledger) -> ErasedNumbers | None:
    """The numbers erased at the person's request in this ledger (None: none, or no key)."""
    from scheduler.ledger.privacy_key import project_key
    from scheduler.privacy.erased import erased_numbers

    return erased_numbers(ledger.engine, project_key)


def unfinished_run_for(ledger: Ledger, campaign_name: str) -> Run | None:
    """The campaign's run started by ``campaign run`` that did not finish, if any.

    A run whose planning was killed before its plan was stored is discarded (it holds no
    rows), so the campaign is planned again instead of "continuing" an empty run.
    """
    ledger.discard_interrupted_plans(campaign_name=campaign_name)
    for run in ledger.unfinished_runs(campaign_name=campaign_name):
        # a fallback run goes with its parent: never "the campaign's run" on its own
        if run.fire_time is None and run.planned_count and run.parent_run_id is None:
            return run
    return None


