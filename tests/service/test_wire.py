"""What the client puts on the wire: paths, exactly the listed fields, unset optionals absent,
local refusals before any request is made."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

from scheduler.core.errors import ConfigError
from scheduler.service import requests as rq
from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import InvalidRequest
from scheduler.service.responses import Ack, RejectCallResult, SendResult, SessionRecord

if TYPE_CHECKING:
    from tests.service.support import Scripted

TO = "5511999990000"


@pytest.fixture
async def client(scripted: Scripted, api_key: str) -> AsyncIterator[ServiceClient]:
    """A client of the scripted server (aiohttp transport)."""
    async with ServiceClient(scripted.base_url, api_key) as c:
        yield c


#: One body per send type (wire names, after session and recipient).
SENDS: dict[str, dict[str, Any]] = {
    "text": {"text": "hi"},
    "image": {"image": "https://x/i.jpg"},
    "video": {"video": "https://x/v.mp4", "gifPlayback": True},
    "audio": {"audio": "https://x/a.ogg", "ptt": False},
    "document": {"document": "https://x/d.pdf", "fileName": "d.pdf"},
    "sticker": {"sticker": "https://x/s.webp"},
    "location": {"latitude": -23.5, "longitude": -46.6},
    "contact": {"contactName": "Ana", "contactPhone": "5511900001111"},
    "poll": {"question": "Q?", "options": ["a", "b"]},
    "reaction": {"messageId": "3EB0AB", "emoji": "👍"},
    "album": {"media": [{"type": "image", "url": "https://x/1.jpg"},
                        {"type": "video", "url": "https://x/2.mp4"}]},
    "list": {"description": "Pick", "buttonText": "Open",
             "sections": [{"rows": [{"rowId": "r1", "title": "One"}]}]},
    "carousel": {"cards": [{"body": "Card"}]},
    "nativeflow": {"title": "T", "body": "B",
                   "buttons": [{"type": "copy", "title": "Copy", "copy_code": "X"}]},
    "pix": {"content": "Pay", "pixKey": "key@pix"},
}


def test_every_send_kind_is_checked() -> None:
    assert set(SENDS) == set(rq.SEND_KINDS)


@pytest.mark.parametrize(("kind", "wire"), SENDS.items(), ids=list(SENDS))
async def test_sends_put_exactly_the_set_fields_on_the_wire(
    client: ServiceClient, scripted: Scripted, kind: str, wire: dict[str, Any],
) -> None:
    result = await client.send(rq.SEND_KINDS[kind].model(sessionId="s1", to=TO, **wire))
    assert isinstance(result, SendResult) and result.messageId == "3EB0A1B2C3D4"
    request = scripted.last
    assert request["method"] == "POST" and request["path"] == rq.SEND_KINDS[kind].path
    assert request["body"] == {"sessionId": "s1", "to": TO, **wire}
    assert None not in request["body"].values()
    assert request["headers"]["content-type"] == "application/json"


async def test_extra_wire_fields(client: ServiceClient, scripted: Scripted) -> None:
    await client.send_text("s1", TO, "hi", mentionAll=True, async_="true",
                           contextInfo={"stanzaId": "X"})
    assert scripted.last["body"] == {"sessionId": "s1", "to": TO, "text": "hi",
                                     "mentionAll": True, "async": "true",
                                     "contextInfo": {"stanzaId": "X"}}


async def test_generic_send_and_prepared_send(client: ServiceClient, scripted: Scripted) -> None:
    body = rq.PixBody(sessionId="s1", to=TO, content="Pay", pixKey="k", pixAmount=10.5)
    await client.send(body)
    assert scripted.last["path"] == "/api/v1/interactive/send/pix"
    assert scripted.last["body"] == rq.wire_body(body)
    await client.send_prepared(rq.SEND_KINDS["text"].path, {"sessionId": "s1", "to": TO,
                                                            "text": "olá ✓"})
    assert scripted.last["body"]["text"] == "olá ✓"


@pytest.mark.parametrize(
    "bad",
    [
        lambda c: c.send_text("s1", "+5511999990000", "hi"),  # a leading + is not allowed
        lambda c: c.send_text("", TO, "hi"),
        lambda c: c.send_text("s1", TO, ""),  # no text
        lambda c: c.send_text("s1", TO, "hi", unknownField=1),
        lambda c: c.send(rq.SendBody(sessionId="s1", to=TO)),  # not a concrete kind
        lambda c: c.get_session(""),
        lambda c: c.forward_passkey("s1", {}),
        lambda c: c.send_prepared("/api/v1/messages/send/text", {"x": object()}),
    ],
)
async def test_refused_locally_before_any_request(client: ServiceClient, scripted: Scripted,
                                                  bad: Any) -> None:
    with pytest.raises(InvalidRequest):
        await bad(client)
    assert scripted.requests == []


@pytest.mark.parametrize("code", ["ABCD1234X", "abcd1234", "ABCD-123", "", "ABCD123"])
async def test_migration_code_checked_before_any_request(
    scripted: Scripted, closed_port: int, api_key: str, code: str
) -> None:
    # Against a closed port: a request would give ServiceUnreachable, not InvalidRequest.
    async with ServiceClient(f"http://127.0.0.1:{closed_port}", api_key) as client:
        with pytest.raises(InvalidRequest, match="8 characters"):
            await client.migrate_session(code, jid="5511@s.whatsapp.net")
    async with ServiceClient(scripted.base_url, api_key) as client:
        with pytest.raises(InvalidRequest):
            await client.migrate_session(code)
    assert scripted.requests == []


async def test_migration_sends_the_listed_fields(client: ServiceClient, scripted: Scripted) -> None:
    scripted.reply(200, {"success": True})
    ack = await client.migrate_session("AB12CD34", jid="5511@s.whatsapp.net", registrationId=7,
                                       noiseKey={"priv": "a", "pub": "b"})
    assert isinstance(ack, Ack) and ack.success
    assert scripted.last["path"] == "/api/v1/session-migration/migrate"
    assert scripted.last["body"] == {"code": "AB12CD34", "jid": "5511@s.whatsapp.net",
                                     "registrationId": 7, "noiseKey": {"priv": "a", "pub": "b"}}


async def test_session_endpoints(client: ServiceClient, scripted: Scripted) -> None:
    scripted.reply(200, {"success": True, "data": {"sessionId": "s 1/x", "status": "connecting"}})
    record = await client.create_session("s 1/x", webhook_url="http://127.0.0.1:9/hook")
    assert isinstance(record, SessionRecord) and record.status == "connecting"
    assert scripted.last["body"] == {"sessionId": "s 1/x", "type": "unofficial",
                                     "webhookUrl": "http://127.0.0.1:9/hook"}
    await client.get_session("s 1/x")
    assert scripted.last["method"] == "GET"
    assert scripted.last["path"] == "/api/v1/sessions/s 1/x"  # one escaped segment, decoded
    scripted.reply(200, {"success": True})
    await client.set_webhook("s1", "http://127.0.0.1:9/h2")
    assert (scripted.last["path"], scripted.last["body"]) == (
        "/api/v1/sessions/s1/webhook", {"webhookUrl": "http://127.0.0.1:9/h2"})
    await client.set_call_settings("s1", reject_calls=True)
    assert (scripted.last["path"], scripted.last["body"]) == (
        "/api/v1/sessions/s1/call-settings", {"rejectCalls": True})
    await client.set_mark_previous_as_read("s1", False)
    assert (scripted.last["path"], scripted.last["body"]) == (
        "/api/v1/sessions/s1/mark-previous-as-read-settings", {"markPreviousAsRead": False})
    assertion = {"id": "cred", "response": {"signature": "sig"}}
    await client.forward_passkey("s1", assertion)
    assert (scripted.last["path"], scripted.last["body"]) == (
        "/api/v1/sessions/s1/auth/passkey", assertion)


async def test_qr_json_and_png(client: ServiceClient, scripted: Scripted) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(32)
    scripted.reply(200, {"sessionId": "s1", "status": "connecting", "qrCode": "2@abc",
                         "qrCodeImage": "data:image/png;base64,"
                         + __import__("base64").b64encode(png).decode(),
                         "qrCodeUpdatedAt": "2030-01-01T00:00:00.000Z"})
    qr = await client.get_qr("s1")
    assert qr.qrCode == "2@abc" and qr.png_bytes() == png
    assert scripted.last["path"] == "/api/v1/sessions/s1/qr" and scripted.last["query"] == {}
    scripted.reply(200, png, content_type="image/png")
    assert await client.get_qr_png("s1") == png
    assert scripted.last["query"] == {"image": "1"}


async def test_reject_call_passes_from_exactly(client: ServiceClient, scripted: Scripted) -> None:
    scripted.reply(200, {"success": True, "sessionId": "s1", "data": {"callId": "C1"}})
    result = await client.reject_call("s1", "C1", "123456789012345@lid")
    assert isinstance(result, RejectCallResult) and result.call_id == "C1"
    assert scripted.last["body"] == {"sessionId": "s1", "callId": "C1",
                                     "from": "123456789012345@lid"}


async def test_limits_tolerate_shapes(client: ServiceClient, scripted: Scripted) -> None:
    scripted.reply(200, {"success": True, "sessionId": "s1", "data": {
        "plan": "pro", "period": "day", "limits": {"messages": 1000, "sms": 10},
        "used": {"messages": 250}, "resetsAt": "2030-01-02T00:00:00Z"}})
    limits = await client.get_limits("s1")
    assert scripted.last["path"] == "/api/v1/limits/s1"
    assert (limits.plan, limits.remaining("messages"), limits.remaining("sms")) == ("pro", 750, 10)
    assert limits.remaining("voice") is None
    scripted.reply(200, {"something": "else"})
    assert (await client.get_limits("s1")).remaining() is None
    scripted.reply(404, {"error": "Cannot GET /api/v1/limits/s1"})  # endpoint not offered
    assert (await client.get_limits("s1")).remaining() is None


def test_construction_checks_and_from_settings(api_key: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.settings.load import load_settings

    for name in ("CAMPAIGN_BASE_URL", "CAMPAIGN_API_KEY", "CAMPAIGN_API_KEY_FILE"):
        monkeypatch.delenv(name, raising=False)

    with pytest.raises(ConfigError):
        ServiceClient("127.0.0.1:8787", api_key)
    with pytest.raises(ConfigError):
        ServiceClient("http://127.0.0.1:8787", "")
    with pytest.raises(ConfigError):
        ServiceClient("http://127.0.0.1:8787", api_key, transport="curl")  # type: ignore[arg-type]
    settings = load_settings("/nonexistent.toml", base_url="http://127.0.0.1:8787/",
                             api_key=api_key, http_concurrency=8)
    client = ServiceClient.from_settings(settings, transport="httpx")
    assert client.base_url == "http://127.0.0.1:8787" and client.transport_kind == "httpx"
    assert api_key not in repr(client)
    with pytest.raises(ConfigError):
        ServiceClient.from_settings(load_settings("/nonexistent.toml", api_key=api_key))
