"""Every client call and every send type round-trip against the sandbox, and the events the
sandbox posts (``messages.sent`` of every type, calls) parse into the event models."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.service import event_data as d
from scheduler.service import events as ev
from scheduler.service import requests as rq
from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import (
    RateLimited,
    RequestRejected,
    ServerError,
    SessionNotFound,
    Unauthorized,
)
from scheduler.service.responses import SendResult

SID = "rt1"
TO = "5511988887777"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

#: One body per send type (wire names, after session and recipient).
SENDS: dict[str, dict[str, Any]] = {
    "text": {"text": "Olá!"},
    "image": {"image": "https://cdn.example.com/p.jpg", "caption": "Promo"},
    "video": {"video": "https://cdn.example.com/c.mp4", "caption": "Clip"},
    "audio": {"audio": "https://cdn.example.com/n.ogg", "ptt": True},
    "document": {"document": "https://cdn.example.com/t.pdf", "mimetype": "application/pdf",
                 "fileName": "t.pdf"},
    "sticker": {"sticker": "https://cdn.example.com/s.webp"},
    "location": {"latitude": -23.55, "longitude": -46.63, "name": "Loja",
                 "address": "Av. Paulista"},
    "contact": {"contactName": "Suporte", "contactPhone": "5511900001111"},
    "poll": {"question": "Cor?", "options": ["Azul", "Verde"]},
    "album": {"media": [{"type": "image", "url": "https://cdn.example.com/1.jpg"},
                        {"type": "video", "url": "https://cdn.example.com/2.mp4"}]},
    "list": {"description": "Escolha", "buttonText": "Abrir", "title": "Menu",
             "sections": [{"title": "A", "rows": [{"rowId": "r1", "title": "Um"}]}]},
    "carousel": {"cards": [{"body": "Card 1"}, {"body": "Card 2"}]},
    "nativeflow": {"title": "T", "body": "B", "buttons": [
        {"type": "quick_reply", "title": "Sim", "id": "yes"}]},
    "pix": {"content": "Pague aqui", "pixKey": "loja@pix", "pixAmount": 10.5},
}
MEDIA_MODELS = {"image": d.ImageMedia, "video": d.VideoMedia, "audio": d.AudioMedia,
                "document": d.DocumentMedia, "sticker": d.StickerMedia}
DATA_MODELS = {"location": d.LocationData, "contact": d.ContactData, "list": d.ListData,
               "carousel": d.CarouselData, "reaction": d.ReactionData}


@pytest.fixture
async def client(sandbox: Any) -> AsyncIterator[ServiceClient]:
    """A client of the test sandbox."""
    async with ServiceClient(sandbox.base_url, sandbox.api_key, timeout_s=5) as c:
        yield c


@pytest.fixture
async def connected(client: ServiceClient, sandbox: Any, webhook_sink: Any) -> ServiceClient:
    """The client, with session ``SID`` created through it, wired to the sink and scanned."""
    await client.create_session(SID, webhook_url=webhook_sink.url)
    sandbox.scan(SID)
    return client


async def test_session_lifecycle(client: ServiceClient, sandbox: Any, webhook_sink: Any) -> None:
    record = await client.create_session(SID, webhook_url=webhook_sink.url, ignore_groups=True)
    assert record.sessionId == SID and record.status in {"connecting", "qr_ready"}
    qr = await client.get_qr(SID)
    assert qr.sessionId == SID and qr.qrCode and qr.qrCodeUpdatedAt
    assert (qr.png_bytes() or b"").startswith(PNG_MAGIC)
    assert (await client.get_qr_png(SID)).startswith(PNG_MAGIC)
    sandbox.scan(SID)
    assert (await client.get_session(SID)).status == "connected"
    assert SID in [s.sessionId for s in await client.list_sessions()]
    assert (await client.set_webhook(SID, webhook_sink.url + "/v2")).success
    assert (await client.set_call_settings(SID, reject_calls=False)).success
    assert (await client.set_mark_previous_as_read(SID, True)).success
    assert (await client.get_session(SID)).webhookUrl == webhook_sink.url + "/v2"
    assert (await client.forward_passkey(SID, {"id": "cred", "response": {"sig": "x"}})).success
    assert (await client.migrate_session("AB12CD34", jid=f"{TO}@s.whatsapp.net")).success
    limits = await client.get_limits(SID)
    assert limits.remaining("messages") is not None and limits.remaining("messages") > 0


async def test_every_send_round_trips_and_its_event_parses(connected: ServiceClient,
                                                           sandbox: Any, webhook_sink: Any) -> None:
    results: dict[str, SendResult] = {}
    for kind, args in SENDS.items():
        results[kind] = await connected.send(rq.SEND_KINDS[kind].model(sessionId=SID, to=TO,
                                                                       **args))
        assert results[kind].messageId, kind
    reaction = await connected.send(rq.ReactionBody(
        sessionId=SID, to=TO, messageId=results["text"].messageId or "", emoji="👍"))
    results["reaction"] = reaction
    accepted = [s for s in sandbox.sends() if s.get("sessionId", SID) == SID]
    assert len(accepted) >= len(results)

    keys = {r.message_key for r in results.values()}
    events = webhook_sink.wait_for(
        lambda e: e.get("event") == "messages.sent" and str(e["data"]["id"]).upper() in keys,
        count=len(results))
    parsed = [ev.parse_event(raw) for raw in events]
    by_key = {e.data.message_key: e for e in parsed if isinstance(e, ev.MessageEvent)}
    for kind, result in results.items():
        event = by_key[result.message_key]  # matched across letter case
        assert event.event == "messages.sent" and event.sessionId == SID
        assert event.data.fromMe is True and event.data.to and TO in (event.data.to.jid or "")
        expected_type = "image" if kind == "album" else kind
        assert event.data.type in {expected_type, kind}
        if event.data.type in MEDIA_MODELS:
            assert isinstance(event.data.media_data, MEDIA_MODELS[event.data.type]), kind
        if event.data.type in DATA_MODELS:
            assert isinstance(event.data.data, DATA_MODELS[event.data.type]), kind
    reacted = by_key[reaction.message_key].data.data
    assert isinstance(reacted, d.ReactionData)
    assert reacted.original_message_key == results["text"].message_key


async def test_incoming_call_offer_and_reject(connected: ServiceClient, sandbox: Any,
                                              webhook_sink: Any) -> None:
    call = sandbox.incoming_call(SID)
    offer_raw = webhook_sink.wait_for(lambda e: e.get("event") == "call.offer")[0]
    offer = ev.parse_event(offer_raw)
    assert isinstance(offer, ev.CallOfferEvent) and offer.data.callId == call["callId"]
    result = await connected.reject_call(SID, offer.data.callId, offer.data.from_)
    assert result.success and result.call_id == offer.data.callId
    rejected = ev.parse_event(webhook_sink.wait_for(lambda e: e.get("event") == "call.rejected")[0])
    assert isinstance(rejected, ev.CallRelayEvent) and rejected.data.callId == call["callId"]
    with pytest.raises(RequestRejected):
        await connected.reject_call(SID, "NO-SUCH-CALL", offer.data.from_)


async def test_every_event_the_sandbox_posted_parses(connected: ServiceClient, sandbox: Any,
                                                     webhook_sink: Any) -> None:
    await connected.send_text(SID, TO, "oi")
    sandbox.incoming_call(SID)
    webhook_sink.wait_for(lambda e: e.get("event") == "call.offer")
    for raw in webhook_sink.snapshot():
        event = ev.parse_event(raw)  # never EventParseError
        assert event.event == raw["event"]


async def test_sandbox_errors_map_to_the_tree(client: ServiceClient, sandbox: Any,
                                              connected: ServiceClient) -> None:
    with pytest.raises(SessionNotFound):
        await client.get_session("no-such-session")
    with pytest.raises(SessionNotFound):
        await client.send_text("no-such-session", TO, "oi")
    async with ServiceClient(sandbox.base_url, "wrong-key") as stranger:
        with pytest.raises(Unauthorized):
            await stranger.list_sessions()
    sandbox.set_faults(throttle_rate=1.0)
    with pytest.raises(RateLimited) as info:
        await client.send_text(SID, TO, "oi")
    assert info.value.retry_after is not None
    sandbox.set_faults(throttle_rate=0.0, fail_rate=1.0)
    with pytest.raises(ServerError):
        await client.send_text(SID, TO, "oi")
