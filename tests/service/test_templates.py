"""Official provider (``cloud_api``) connections and templates: the client against a real
sandbox. A manual connection is connected without a QR code; templates are listed, created
(a duplicate name and language refused) and deleted; a template send is checked against the
template (name, language, number of body variables) and then behaves as a send
(``messages.sent``); calls on a ``cloud_api`` session are a typed refusal naming it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import (
    InvalidRequest,
    NotOnCloudApi,
    RateLimited,
    RequestRejected,
    ServerError,
    SessionNotFound,
)
from scheduler.service.template_models import SEND_TEMPLATE_PATH, body_variables

CONNECTION = "oficial"
QR_SESSION = "loja"
TO = "5511988887777"
TOKEN = "EAAG-secret-access-token-123"
WELCOME = "Olá {{1}}, seu pedido {{2}} saiu para entrega."


async def _connect(client: ServiceClient, session_id: str = CONNECTION,
                   webhook_url: str | None = None) -> Any:
    return await client.connect_cloud_api(session_id, phone_number_id="1234567890",
                                          business_account_id="9876543210",
                                          access_token=TOKEN, webhook_url=webhook_url)


@pytest.fixture
async def client(sandbox: Any) -> AsyncIterator[ServiceClient]:
    """A client of the test sandbox, with a QR session connected."""
    sandbox.create_session(QR_SESSION)
    async with ServiceClient(sandbox.base_url, sandbox.api_key, timeout_s=5) as c:
        yield c


async def test_a_manual_connection_is_connected_without_a_qr_code(
        client: ServiceClient, sandbox: Any) -> None:
    record = await _connect(client)
    assert (record.sessionId, record.provider, record.status) == (CONNECTION, "cloud_api",
                                                                  "connected")
    assert record.qrCode is None
    listed = {s.sessionId: s.provider for s in await client.list_sessions()}
    assert listed == {QR_SESSION: "whatsmeow", CONNECTION: "cloud_api"}
    assert TOKEN not in repr(sandbox.state.world.sessions[CONNECTION])  # the token is not kept
    with pytest.raises(RequestRejected) as twice:
        await _connect(client)
    assert twice.value.status == 409


async def test_a_bad_connection_body_is_refused_before_sending_without_the_token(
        client: ServiceClient, sandbox: Any) -> None:
    with pytest.raises(InvalidRequest) as bad:
        await client.connect_cloud_api(CONNECTION, phone_number_id="12ab",
                                       business_account_id="9876543210", access_token=TOKEN)
    assert "phoneNumberId" in str(bad.value) and TOKEN not in str(bad.value)
    assert CONNECTION not in sandbox.state.world.sessions


async def test_templates_are_created_listed_and_deleted(client: ServiceClient) -> None:
    await _connect(client)
    assert await client.list_templates(CONNECTION) == []
    made = await client.create_template(CONNECTION, "pedido_enviado", "pt_BR", WELCOME,
                                        category="UTILITY")
    assert (made.name, made.language, made.variables, made.status) == (
        "pedido_enviado", "pt_BR", 2, "APPROVED")
    await client.create_template(CONNECTION, "pedido_enviado", "en_US",
                                 "Hi {{1}}, order {{2}} is on its way.")
    await client.create_template(CONNECTION, "promo", "pt_BR", "Promoção de hoje!")
    listed = await client.list_templates(CONNECTION)
    assert [(t.name, t.language, t.variables) for t in listed] == [
        ("pedido_enviado", "en_US", 2), ("pedido_enviado", "pt_BR", 2), ("promo", "pt_BR", 0)]
    with pytest.raises(RequestRejected, match="already exists") as duplicate:
        await client.create_template(CONNECTION, "pedido_enviado", "pt_BR", "Outro {{1}}")
    assert duplicate.value.status == 409
    removed = await client.delete_template(CONNECTION, "pedido_enviado", "en_US")
    assert removed is not None and removed.language == "en_US"
    assert [t.key for t in await client.list_templates(CONNECTION)] == [
        ("pedido_enviado", "pt_BR"), ("promo", "pt_BR")]
    await client.delete_template(CONNECTION, "promo")
    with pytest.raises(RequestRejected, match="not found") as gone:
        await client.delete_template(CONNECTION, "promo")
    assert gone.value.status == 404


@pytest.mark.parametrize(("name", "language", "body", "problem"), [
    ("Pedido Enviado", "pt_BR", "Olá", "name"),
    ("pedido", "portuguese", "Olá", "language"),
    ("pedido", "pt_BR", "", "body"),
    ("pedido", "pt_BR", "Olá {{1}} e {{3}}", "missing {{2}}"),
    ("pedido", "pt_BR", "Olá {{0}}", "from {{1}}"),
])
async def test_a_bad_template_is_refused_before_sending(
        client: ServiceClient, sandbox: Any, name: str, language: str, body: str,
        problem: str) -> None:
    await _connect(client)
    with pytest.raises(InvalidRequest, match=re.escape(problem)):
        await client.create_template(CONNECTION, name, language, body)
    assert await client.list_templates(CONNECTION) == []


async def test_the_sandbox_checks_a_template_body_it_receives(
        client: ServiceClient, sandbox: Any) -> None:
    await _connect(client)
    answer = sandbox.api("POST", f"/api/v1/connections/cloud-api/{CONNECTION}/templates",
                         json={"name": "x", "language": "pt_BR", "body": "Olá {{2}}"})
    assert answer.status_code == 400 and "without gaps" in answer.json()["error"]


async def test_templates_of_a_qr_session_or_an_unknown_one(client: ServiceClient) -> None:
    with pytest.raises(NotOnCloudApi, match=f"session {QR_SESSION} is an unofficial"):
        await client.list_templates(QR_SESSION)
    with pytest.raises(SessionNotFound):
        await client.list_templates("ghost")


async def test_a_template_is_sent_and_reported_like_any_message(
        client: ServiceClient, sandbox: Any, webhook_sink: Any) -> None:
    await _connect(client, webhook_url=webhook_sink.url)
    await client.create_template(CONNECTION, "pedido_enviado", "pt_BR", WELCOME)
    result = await client.send_template(CONNECTION, TO, "pedido_enviado", "pt_BR",
                                        ["Ana", "A-77"])
    [sent] = [s for s in sandbox.sends() if s["path"] == SEND_TEMPLATE_PATH]
    assert sent["messageId"] == result.messageId
    assert sent["body"] == {"sessionId": CONNECTION, "to": TO, "template": {
        "name": "pedido_enviado", "language": "pt_BR", "bodyVariables": ["Ana", "A-77"]}}
    [event] = webhook_sink.wait_for(lambda e: e["event"] == "messages.sent", 1, 5)
    data = event["data"]
    assert data["id"].lower() == result.messageId.lower()
    assert data["type"] == "template"
    assert data["message"] == "Olá Ana, seu pedido A-77 saiu para entrega."
    assert data["to"]["jid"] == f"{TO}@s.whatsapp.net"
    limits = await client.get_limits(CONNECTION)
    assert limits.used.messages == 1
    # the interface does not forbid free-form text on a cloud_api session (inside WhatsApp's
    # 24-hour window it is allowed): the sandbox takes it; campaigns send templates only
    await client.send_text(CONNECTION, TO, "Obrigado pela resposta!")


async def test_a_template_send_that_does_not_match_is_refused(
        client: ServiceClient, sandbox: Any) -> None:
    await _connect(client)
    await client.create_template(CONNECTION, "pedido_enviado", "pt_BR", WELCOME)
    with pytest.raises(RequestRejected, match=r"takes 2 body variable\(s\), got 1"):
        await client.send_template(CONNECTION, TO, "pedido_enviado", "pt_BR", ["Ana"])
    with pytest.raises(RequestRejected, match=r"has no language en_US .*it has: pt_BR"):
        await client.send_template(CONNECTION, TO, "pedido_enviado", "en_US", ["Ana", "1"])
    with pytest.raises(RequestRejected, match="not found") as unknown:
        await client.send_template(CONNECTION, TO, "boas_vindas", "pt_BR")
    assert unknown.value.status == 404
    with pytest.raises(NotOnCloudApi, match=f"session {QR_SESSION}"):
        await client.send_template(QR_SESSION, TO, "pedido_enviado", "pt_BR", ["Ana", "1"])
    with pytest.raises(InvalidRequest, match="bodyVariables"):
        await client.send_template(CONNECTION, TO, "pedido_enviado", "pt_BR", ["Ana", ""])
    assert [s for s in sandbox.sends() if s["path"] == SEND_TEMPLATE_PATH] == []


async def test_calls_on_a_cloud_api_connection_are_a_typed_refusal_naming_it(
        client: ServiceClient, sandbox: Any) -> None:
    await _connect(client)
    for attempt in (client.place_call(CONNECTION, TO), client.stream_call(CONNECTION, TO),
                    client.send_call_event(CONNECTION, TO, title="Demo")):
        with pytest.raises(NotOnCloudApi, match=f"session {CONNECTION}"):
            await attempt
    with pytest.raises(NotOnCloudApi):
        await client.reject_call(CONNECTION, "C1", "1@lid")
    assert sandbox.sends() == []


def test_body_variables_are_counted_from_one_without_gaps() -> None:
    assert body_variables("Sem variáveis") == 0
    assert body_variables("{{1}} e {{ 2 }} e de novo {{1}}") == 2
    with pytest.raises(ValueError, match=re.escape("missing {{2}}")):
        body_variables("{{1}} {{3}}")


async def test_template_sends_get_the_injected_faults_of_every_send(
        client: ServiceClient, sandbox: Any) -> None:
    await _connect(client)
    await client.create_template(CONNECTION, "promo", "pt_BR", "Promoção {{1}}")
    sandbox.set_faults(fail_rate=1.0)
    with pytest.raises(ServerError):
        await client.send_template(CONNECTION, TO, "promo", "pt_BR", ["hoje"])
    sandbox.set_faults(fail_rate=0.0, throttle_rate=1.0)
    with pytest.raises(RateLimited):
        await client.send_template(CONNECTION, TO, "promo", "pt_BR", ["hoje"])
    assert [s for s in sandbox.sends() if s["path"] == SEND_TEMPLATE_PATH] == []
    sandbox.set_faults(throttle_rate=0.0)
    await client.send_template(CONNECTION, TO, "promo", "pt_BR", ["hoje"])
    assert len([s for s in sandbox.sends() if s["path"] == SEND_TEMPLATE_PATH]) == 1
