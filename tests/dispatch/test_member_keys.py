"""The dispatcher with an account member's key: a ``read`` member's first send is a 403 that
stops the run at once (nothing sent, every row still planned) with what to do; a ``write``
member's key sends on its session."""

from __future__ import annotations

import random

import pytest

from scheduler.dispatch.exceptions import RunStopped
from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.client import ServiceClient
from tests.engine import dispatcher_for
from tests.factories import FakeClock, Service, make_run


async def _member_key(service: Service, permission: str) -> str:
    async with service.client() as owner:
        member = await owner.add_member("Ana", f"ana.{permission}@example.com", permission,
                                        ["s1"])
    return service.post(f"/sandbox/members/{member.user_id}/key").json()["apiKey"]


async def _dispatch(ledger: Ledger, service: Service, run_id: int, clock: FakeClock, key: str):
    options = DispatchOptions(senders=("s1",), rate=10.0, timezone="America/Sao_Paulo")
    async with ServiceClient(service.base_url, key) as client:
        return await dispatcher_for(ledger, client, run_id, options, clock=clock,
                                    rng=random.Random(3)).run()


async def test_a_read_members_key_stops_the_run_at_its_first_send(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    key = await _member_key(service, "read")
    run_id = make_run(ledger, 25)
    with pytest.raises(RunStopped, match="right to send") as stopped:
        await _dispatch(ledger, service, run_id, clock, key)
    message = str(stopped.value)
    assert "HTTP 403" in message and "write permission" in message and key not in message
    run = ledger.get_run(run_id)
    assert run.status == RunStatus.PAUSED
    assert "campaign members update" in (run.stop_reason or "")
    assert ledger.counts(run_id) == {"planned": 25}
    assert service.sends() == []


async def test_a_write_members_key_sends_the_run(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    key = await _member_key(service, "write")
    run_id = make_run(ledger, 5)
    result = await _dispatch(ledger, service, run_id, clock, key)
    assert result.counts == {"accepted": 5}
    assert len(service.sends()) == 5
