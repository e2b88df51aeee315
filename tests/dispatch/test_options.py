"""A run is dispatched with the options stored with it; an old ledger's runs still work."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from alembic import command

from scheduler.dispatch.dispatcher import RunSetup, Timing
from scheduler.ledger.db import alembic_config, open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.settings.run import from_snapshot
from scheduler.wiring import dispatch_run, run_store
from tests.factories import T0, FakeClock, Service

OLD_DEFINITION = {"name": "antiga", "senders": ["s1", "s2"], "pace": {"rate": "1/min"},
                  "schedule": {"timezone": "America/Sao_Paulo", "window": "09:00-09:02"},
                  "steps": [{"type": "text"}]}


def _sent_at(service: Service) -> dict[str, list[datetime]]:
    by_sender: dict[str, list[datetime]] = {}
    for send in service.sends():
        at = datetime.fromisoformat(send["at"].replace("Z", "+00:00"))
        by_sender.setdefault(send["sessionId"], []).append(at)
    return by_sender


async def _dispatch(ledger: Ledger, service: Service, run_id: int, clock: FakeClock):
    async with service.client() as client:
        setup = RunSetup(timing=Timing.simulated_by(clock, clock.sleep),
                         rng=random.Random(1))
        return await dispatch_run(run_store(ledger, run_id), client, ledger.get_run(run_id), setup)


async def test_a_run_stored_before_options_is_sent_with_its_definitions_pace(
        ledger_url: str, service_factory, clock: FakeClock) -> None:
    """A run planned before runs stored their options (migration 0003): its rate, senders
    and window come from its definition snapshot, not from defaults."""
    service = service_factory(clock=clock)
    await service.connect("s1", "s2")
    engine = open_ledger(ledger_url)
    try:
        run_id = Ledger(engine, clock=clock).create_run(
            campaign_name="antiga", channel="whatsapp", definition_path="antiga.toml",
            definition=OLD_DEFINITION, delivery_mode="at-most-once",
            timezone="America/Sao_Paulo")
        command.downgrade(alembic_config(engine), "0002")  # the schema of the old program
        engine.dispose()
        engine = open_ledger(ledger_url)  # this program opens the old ledger: upgrades it
        ledger = Ledger(engine, clock=clock)
        assert ledger.get_run(run_id).options is None
        ledger.store_plan(run_id, [_rows(8)], start_at=T0)
        result = await _dispatch(ledger, service, run_id, clock)
    finally:
        engine.dispose()
    assert result.status == RunStatus.COMPLETED
    # 1/min per sender in a window of 09:00-09:02 São Paulo (T0 is 09:00 there), every day
    day, minute = timedelta(days=1), timedelta(minutes=1)
    assert _sent_at(service) == {sender: [T0, T0 + minute, T0 + day, T0 + day + minute]
                                 for sender in ("s1", "s2")}


def test_the_options_of_an_old_run_are_those_of_its_definition() -> None:
    options = from_snapshot(OLD_DEFINITION)
    assert (options.senders, options.rate_per_s, options.timezone) == (
        ("s1", "s2"), 1 / 60, "America/Sao_Paulo")
    assert options.window is not None and (options.window.opens_min,
                                           options.window.closes_min) == (540, 542)


def _rows(recipients: int) -> list[dict]:
    return [{"row": i + 1, "to": f"55119{i:08d}", "step": 0, "kind": "text",
             "path": "/api/v1/messages/send/text", "payload": {"text": f"Olá {i}"},
             "variables": {}, "region": "BR", "state": "planned", "reason": None}
            for i in range(recipients)]
