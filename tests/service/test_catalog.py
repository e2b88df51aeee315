"""Catalog products and asynchronous commands: the client against a real sandbox.

A product read at once and through a queued command are the same product; a queued command
is seen ``queued``, then ``running``, then ``done`` (or ``failed``) as the sandbox's clock
moves; the client's wait backs off and is bounded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from scheduler.service.catalog_client import CommandFailed, CommandStillRunning
from scheduler.service.catalog_models import CommandRecord
from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import InvalidRequest, RequestRejected, SessionNotFound
from tests.factories import FakeClock

SESSION = "loja"
BUSINESS = "5511977776666@s.whatsapp.net"


@pytest.fixture
async def client(sandbox: Any) -> AsyncIterator[ServiceClient]:
    """A client of the test sandbox, with a connected session."""
    sandbox.create_session(SESSION)
    async with ServiceClient(sandbox.base_url, sandbox.api_key, timeout_s=5) as c:
        yield c


class Timed:
    """A sandbox on a fake clock and a client whose sleeps move that clock."""

    def __init__(self, make_sandbox: Callable[..., Any], **knobs: Any) -> None:
        self.clock = FakeClock()
        self.box = make_sandbox(clock=self.clock, **knobs)
        self.box.create_session(SESSION)
        self.sleeps: list[float] = []
        self.seen: list[CommandRecord] = []

    def monotonic(self) -> float:
        return self.clock().timestamp()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await self.clock.sleep(seconds)

    def waits(self) -> dict[str, Any]:
        """The injected clock, sleep and status callback for the client's waits."""
        return {"clock": self.monotonic, "sleep": self.sleep, "on_status": self.seen.append}


async def test_a_product_is_read_at_once(client: ServiceClient, sandbox: Any) -> None:
    product = await client.get_product(SESSION, "8812345", BUSINESS)
    assert product.id == "8812345"
    assert product.name and product.price and product.price > 0
    assert product.currency == "BRL"
    assert product.url and product.imageUrl
    assert product.fields()["businessJid"] == BUSINESS  # extra fields are kept
    again = await client.get_product(SESSION, "8812345", BUSINESS)
    assert again == product
    other = await client.get_product(SESSION, "8812346", BUSINESS)
    assert other.id == "8812346"


async def test_product_errors(client: ServiceClient, sandbox: Any) -> None:
    with pytest.raises(RequestRejected) as missing:
        await client.get_product(SESSION, "missing-1", BUSINESS)
    assert missing.value.status == 404 and "Product not found" in str(missing.value)
    with pytest.raises(SessionNotFound):
        await client.get_product("nobody", "1", BUSINESS)
    sandbox.create_session("offline", connect=False)
    with pytest.raises(RequestRejected) as offline:
        await client.get_product("offline", "1", BUSINESS)
    assert offline.value.status == 409
    with pytest.raises(InvalidRequest, match="business_jid"):
        await client.get_product(SESSION, "1", "")
    with pytest.raises(RequestRejected) as unknown:
        await client.get_command("cmd_nope")
    assert unknown.value.status == 404


async def test_the_queued_body_carries_async_true_and_a_string_flag_is_accepted(
        client: ServiceClient, sandbox: Any) -> None:
    ack = await client.queue_product(SESSION, "42", BUSINESS)
    assert ack.commandId.startswith("cmd_") and ack.status == "queued"
    as_text = sandbox.api("POST", "/api/v1/catalog/product/get", json={
        "sessionId": SESSION, "product_id": "42", "business_jid": BUSINESS, "async": "true"})
    assert as_text.status_code == 200 and as_text.json()["commandId"] != ack.commandId
    at_once = sandbox.api("POST", "/api/v1/catalog/product/get", json={
        "sessionId": SESSION, "product_id": "42", "business_jid": BUSINESS, "async": False})
    assert at_once.json()["data"]["id"] == "42"


async def test_a_command_is_queued_then_running_then_done(make_sandbox: Any) -> None:
    timed = Timed(make_sandbox, command_queued_s=(2, 2), command_running_s=(3, 3))
    box = timed.box
    async with ServiceClient(box.base_url, box.api_key, timeout_s=5) as client:
        ack = await client.queue_product(SESSION, "777", BUSINESS)
        assert (await client.get_command(ack.commandId)).status == "queued"
        record = await client.wait_for_command(ack.commandId, first_delay_s=0.5, **timed.waits())
        direct = await client.get_product(SESSION, "777", BUSINESS)
    assert [seen.status for seen in timed.seen] == ["queued", "running", "done"]
    assert record.status == "done" and record.finished
    assert record.result["id"] == "777" and record.result["name"] == direct.name
    # Back-off: each pause twice the one before, until the command was done at t = 5 s.
    assert timed.sleeps == [0.5, 1.0, 2.0, 4.0]


async def test_fetch_product_through_a_command_waits_for_it(make_sandbox: Any) -> None:
    timed = Timed(make_sandbox, command_queued_s=(1, 1), command_running_s=(1, 1))
    box = timed.box
    async with ServiceClient(box.base_url, box.api_key, timeout_s=5) as client:
        queued = await client.fetch_product(SESSION, "9", BUSINESS, queued=True, **timed.waits())
        at_once = await client.fetch_product(SESSION, "9", BUSINESS)
    assert queued == at_once
    assert timed.seen[-1].status == "done"


async def test_a_failed_command(make_sandbox: Any) -> None:
    timed = Timed(make_sandbox, command_queued_s=(1, 1), command_running_s=(1, 1),
                  command_fail_rate=1.0)
    box = timed.box
    async with ServiceClient(box.base_url, box.api_key, timeout_s=5) as client:
        ack = await client.queue_product(SESSION, "9", BUSINESS)
        record = await client.wait_for_command(ack.commandId, **timed.waits())
        assert record.status == "failed"
        assert record.error == "Catalog temporarily unavailable" and record.result is None
        with pytest.raises(CommandFailed, match="Catalog temporarily unavailable"):
            await client.fetch_product(SESSION, "9", BUSINESS, queued=True, **timed.waits())
        box.set_faults(command_fail_rate=0.0)
        with pytest.raises(CommandFailed, match="Product not found") as missing:
            await client.fetch_product(SESSION, "missing-9", BUSINESS, queued=True,
                                       **timed.waits())
    assert missing.value.record.status == "failed"


async def test_the_wait_is_bounded(make_sandbox: Any) -> None:
    timed = Timed(make_sandbox, command_queued_s=(1, 1), command_running_s=(600, 600))
    box = timed.box
    async with ServiceClient(box.base_url, box.api_key, timeout_s=5) as client:
        ack = await client.queue_product(SESSION, "9", BUSINESS)
        with pytest.raises(CommandStillRunning, match="still running after 10 s") as late:
            await client.wait_for_command(ack.commandId, timeout_s=10, max_delay_s=4,
                                          **timed.waits())
    assert late.value.record is not None and late.value.record.status == "running"
    assert timed.sleeps == [0.25, 0.5, 1.0, 2.0, 4.0, 2.25]  # capped, then the time left
    assert sum(timed.sleeps) == 10


async def test_a_command_in_real_time(make_sandbox: Any) -> None:
    box = make_sandbox(command_queued_s=(0.05, 0.05), command_running_s=(0.1, 0.1))
    box.create_session(SESSION)
    seen: list[str] = []
    async with ServiceClient(box.base_url, box.api_key, timeout_s=5) as client:
        product = await client.fetch_product(SESSION, "5", BUSINESS, queued=True, timeout_s=10,
                                             on_status=lambda r: seen.append(r.status))
    assert product.id == "5"
    assert seen[0] == "queued" and seen[-1] == "done"
