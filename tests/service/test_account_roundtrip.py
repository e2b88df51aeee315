"""SMS, voice and account-webhook calls of the client: round trips against the sandbox (and
the events it posts, parsed), error mapping, and the exact wire bodies (scripted server)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from typing import Any

import pytest

from scheduler.service import account_models as am
from scheduler.service import events as ev
from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import (
    InsufficientBalance,
    InvalidRequest,
    RateLimited,
    RequestRejected,
    UnexpectedResponse,
)
from scheduler.service.responses import normalise_message_id
from tests.service.support import API_KEY, Scripted

TO = "5511988887777"
AUDIO = "https://cdn.example.com/aviso.mp3"


def numbers(count: int) -> list[str]:
    return [f"55119{i:08d}" for i in range(count)]


@pytest.fixture
async def client(sandbox: Any) -> AsyncIterator[ServiceClient]:
    """A client of the test sandbox."""
    async with ServiceClient(sandbox.base_url, sandbox.api_key, timeout_s=5) as c:
        yield c


@pytest.fixture
async def scripted_client(scripted: Scripted, transport: str) -> AsyncIterator[ServiceClient]:
    """A client of the scripted server, over each transport."""
    async with ServiceClient(scripted.base_url, API_KEY, transport=transport,  # type: ignore[arg-type]
                             timeout_s=5) as c:
        yield c


async def test_sms_round_trips_and_its_reports_parse(client: ServiceClient, sandbox: Any,
                                                     webhook_sink: Any) -> None:
    config = await client.set_account_webhook("sms", url=webhook_sink.url, secret="s3cr3t")
    assert config.config is not None and config.config.hasSecret and config.config.url
    single = await client.send_sms(TO, "Olá, tudo bem?", route="otp", sender="LOJA")
    assert single.success and single.messageId and single.status == "sent"
    assert single.segments == 1
    assert single.costMicroReais == sandbox.state.config.sms_price_micro["otp"]
    bulk = await client.send_sms_bulk(numbers(3), "Promo de hoje")
    assert (bulk.sent, bulk.failed, bulk.skipped) == (3, 0, 0)
    assert [item.to for item in bulk.results] == numbers(3)
    sent = sandbox.sends()
    assert sent[0]["body"] == {"to": TO, "text": "Olá, tudo bem?", "route": "otp",
                               "sender": "LOJA"}
    assert sent[1]["body"] == {"to": numbers(3), "text": "Promo de hoje"}

    keys = {single.message_key} | {normalise_message_id(i.messageId) for i in bulk.results}
    raws = webhook_sink.wait_for(lambda e: e.get("channel") == "sms", count=4)
    outcomes = {o["messageId"]: o["outcome"] for o in sandbox.outcomes("sms")}
    for raw in raws:
        event = ev.parse_event(raw)
        assert isinstance(event, ev.SmsEvent)
        assert normalise_message_id(event.data.messageId) in keys
        assert event.event == f"sms.{outcomes[event.data.messageId]}"
    for request in webhook_sink.requests:
        signature = hmac.new(b"s3cr3t", request["raw"], hashlib.sha256).hexdigest()
        assert request["headers"]["x-dapi-signature"] == signature


async def test_voice_round_trips_and_its_events_parse(client: ServiceClient, sandbox: Any,
                                                      webhook_sink: Any) -> None:
    await client.set_account_webhook("voice", url=webhook_sink.url, events=["call.ended"])
    single = await client.call_voice(am.VoiceCallBody(to=TO, audioUrl=AUDIO, audioSecs=20))
    assert single.success and single.callId and single.tier
    assert single.reservedMicroReais == sandbox.state.config.voice_reserve_micro
    keyed = await client.dial(TO, flow_id="pesquisa", maxAttempts=2, **{"from": "551130000000"})
    assert keyed.callId and keyed.callId != single.callId
    recipients = [am.VoiceRecipient(phone=p, variables={"nome": "Ana"}) for p in numbers(3)]
    bulk = await client.call_voice_bulk(am.VoiceBulkBody(flowId="pesquisa",
                                                         recipients=recipients))
    assert (bulk.dialed, bulk.skipped) == (3, 0) and bulk.bulkId
    assert sandbox.sends()[1]["body"] == {"to": TO, "flowId": "pesquisa", "from": "551130000000",
                                          "maxAttempts": 2}
    assert sandbox.sends()[2]["body"]["recipients"][0] == {"phone": numbers(1)[0],
                                                           "variables": {"nome": "Ana"}}

    ended = [ev.parse_event(raw) for raw in
             webhook_sink.wait_for(lambda e: e.get("event") == "call.ended", count=5)]
    assert {e.event for e in ev_list(webhook_sink)} == {"call.ended"}  # the events filter
    by_key = {}
    for event in ended:
        assert isinstance(event, ev.VoiceEvent)
        key = am.voice_key(event.data.bulkCallId, event.data.to) or event.data.callId
        by_key[key] = event.data
    for phone in numbers(3):
        data = by_key[am.voice_key(bulk.bulkId, phone)]
        assert data.cause is not None and am.cause_text(data.cause)
    assert by_key[single.callId].bulkCallId is None


def ev_list(sink: Any) -> list[ev.Event]:
    return [ev.parse_event(raw) for raw in sink.snapshot()]


async def test_account_webhooks_get_and_put(client: ServiceClient) -> None:
    hooks = await client.get_account_webhooks()
    assert [w.channel for w in hooks.webhooks] == ["sms", "voice"]
    assert hooks.for_channel("sms") is not None and hooks.for_channel("sms").url is None  # type: ignore[union-attr]
    await client.set_account_webhook("voice", url="http://127.0.0.1:9/v", secret="x",
                                     events=["call.ended", "call.dtmf"])
    kept = await client.set_account_webhook("voice", enabled=False)  # the secret is kept
    assert kept.config is not None and kept.config.hasSecret and not kept.config.enabled
    cleared = await client.set_account_webhook("voice", secret=None)
    assert cleared.config is not None and not cleared.config.hasSecret
    voice = (await client.get_account_webhooks()).for_channel("voice")
    assert voice is not None
    assert (voice.url, voice.events, voice.enabled) == (
        "http://127.0.0.1:9/v", ["call.ended", "call.dtmf"], False)
    with pytest.raises(RequestRejected) as refused:
        await client.set_account_webhook("sms", events=["call.ended"])
    assert refused.value.status == 400
    with pytest.raises(InvalidRequest):
        await client.set_account_webhook("whatsapp", url="http://x")  # type: ignore[arg-type]


async def test_an_empty_wallet_is_insufficient_balance_until_topped_up(
        client: ServiceClient, sandbox: Any) -> None:
    sandbox.wallet(balanceMicroReais=150_000)
    bulk = await client.send_sms_bulk(numbers(4), "Oi")  # 60,000 each: two paid
    assert (bulk.sent, bulk.skipped) == (2, 2)
    assert [i.status for i in bulk.results] == ["sent", "sent", "skipped", "skipped"]
    with pytest.raises(InsufficientBalance) as empty:
        await client.send_sms(TO, "Oi")
    assert empty.value.status == 402 and "Insufficient balance" in str(empty.value)
    with pytest.raises(InsufficientBalance):
        await client.dial(TO, audio_url=AUDIO)
    voice = await client.call_voice_bulk(am.VoiceBulkBody(audioUrl=AUDIO, numbers=numbers(2)))
    assert (voice.dialed, voice.skipped) == (0, 2)
    sandbox.wallet(topUpMicroReais=60_000)
    assert (await client.send_sms(TO, "Oi")).costMicroReais == 60_000


async def test_too_many_calls_in_progress_is_rate_limited(client: ServiceClient,
                                                          sandbox: Any) -> None:
    sandbox.set_faults(voice_max_calls_in_progress=2, voice_time_scale=0.05)
    await client.call_voice_bulk(am.VoiceBulkBody(audioUrl=AUDIO, numbers=numbers(2)))
    with pytest.raises(RateLimited) as full:
        await client.dial(TO, audio_url=AUDIO)
    assert full.value.retry_after is not None and full.value.retry_after >= 1


async def test_bodies_are_checked_before_sending(client: ServiceClient, sandbox: Any) -> None:
    with pytest.raises(InvalidRequest, match="to"):
        await client.send_sms("+55 11 9888", "Oi")
    with pytest.raises(InvalidRequest, match="audioUrl and flowId"):
        await client.dial(TO, audio_url=AUDIO, flow_id="f")
    with pytest.raises(InvalidRequest, match="to"):
        await client.send_sms_bulk([], "Oi")
    assert sandbox.sends() == []


async def test_post_prepared_is_the_hot_path_of_bulk_bodies(client: ServiceClient,
                                                            sandbox: Any) -> None:
    body = {"to": numbers(2), "text": "Oi", "route": "marketing"}
    result = await client.post_prepared(am.SMS_BULK_PATH, body, am.SmsBulkResult)
    assert isinstance(result, am.SmsBulkResult) and result.sent == 2
    voice = {"flowId": "f", "recipients": [{"phone": TO, "variables": {"n": 1}}]}
    answer = await client.post_prepared(am.VOICE_BULK_PATH, voice, am.VoiceBulkResult)
    assert answer.dialed == 1
    with pytest.raises(RequestRejected) as refused:  # the sandbox validates what we skipped
        await client.post_prepared(am.SMS_BULK_PATH, {"to": [TO]}, am.SmsBulkResult)
    assert refused.value.status == 400 and "text" in refused.value.error
    with pytest.raises(InvalidRequest):
        await client.post_prepared(am.SMS_BULK_PATH, {"to": {TO}}, am.SmsBulkResult)


# --------------------------------------------------------------------------- wire and errors


async def test_secret_null_is_sent_only_when_asked(scripted_client: ServiceClient,
                                                   scripted: Scripted) -> None:
    scripted.reply(200, {"success": True, "config": {"channel": "sms"}})
    await scripted_client.set_account_webhook("sms", url="http://h/x")
    assert scripted.last["method"] == "PUT"
    assert scripted.last["path"] == "/api/v1/account/webhooks/sms"
    assert scripted.last["body"] == {"url": "http://h/x"}
    await scripted_client.set_account_webhook("sms", secret=None, events=[])
    assert scripted.last["body"] == {"secret": None, "events": []}
    await scripted_client.set_account_webhook("voice", secret="k", enabled=True)
    assert scripted.last["body"] == {"secret": "k", "enabled": True}


async def test_account_answers_map_to_errors(scripted_client: ServiceClient,
                                             scripted: Scripted) -> None:
    scripted.reply(402, {"success": False, "error": "Insufficient balance", "statusCode": 402})
    with pytest.raises(InsufficientBalance):
        await scripted_client.send_sms(TO, "Oi")
    scripted.reply(200, {"success": False, "error": "Insufficient balance", "statusCode": 402})
    with pytest.raises(InsufficientBalance):
        await scripted_client.send_sms(TO, "Oi")
    scripted.reply(200, {"success": False, "error": "Trunk unavailable"})
    with pytest.raises(RequestRejected) as rejected:
        await scripted_client.dial(TO, flow_id="f")
    assert type(rejected.value) is RequestRejected and rejected.value.error == "Trunk unavailable"
    scripted.reply(429, {"error": "slow down"}, headers={"Retry-After": "7"})
    with pytest.raises(RateLimited) as limited:
        await scripted_client.send_sms_bulk([TO], "Oi")
    assert limited.value.retry_after == 7
    scripted.reply(200, text="<html>gateway</html>")
    with pytest.raises(UnexpectedResponse):
        await scripted_client.call_voice_bulk(am.VoiceBulkBody(flowId="f", numbers=[TO]))
    scripted.reply(200, {"success": True, "results": [{"to": TO, "status": "queued?"}]})
    with pytest.raises(UnexpectedResponse, match="SmsBulkResult"):
        await scripted_client.send_sms_bulk([TO], "Oi")
    assert API_KEY not in str(limited.value)
