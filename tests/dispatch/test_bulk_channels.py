"""Bulk channels as pure functions: grouping, pacing by batch, request bodies, answers per row.

The end-to-end runs against the sandbox are in ``tests/channels``; these pin the rules.
"""

from __future__ import annotations

import random
from collections import deque
from datetime import UTC, datetime, timedelta

import orjson
import pytest

from scheduler.dispatch import picking
from scheduler.dispatch.channels import channel_for
from scheduler.dispatch.channels.sms import SmsChannel
from scheduler.dispatch.channels.voice import VoiceChannel, answers_for
from scheduler.dispatch.dispatcher.run_state import SendOutcome
from scheduler.dispatch.dispatcher.settling import settle
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.retry import Verdict, classify
from scheduler.dispatch.senders import SenderPool
from scheduler.ledger.rows import DueDelivery
from scheduler.service.account_models import SmsBulkResult, VoiceBulkResult, voice_key
from scheduler.service.exceptions import InsufficientBalance
from scheduler.settings.engine import EngineSettings

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def row(i: int, payload: dict[str, object], *, to: str | None = None) -> DueDelivery:
    return DueDelivery(id=i, seq=i, step=0, to=to or f"55119{i:08d}", path="/x",
                       payload=orjson.dumps(payload).decode(), sender=None, region=None,
                       attempts=0)


def pool(rate: float = 10.0, daily_cap: int | None = None) -> SenderPool:
    return SenderPool(["account"], rate=rate, rng=random.Random(1), tz=UTC,
                      daily_cap=daily_cap, now=T0)


def test_equal_texts_share_a_bulk_and_other_texts_keep_their_place() -> None:
    a, b = {"text": "Oi"}, {"text": "Olá Ana"}
    buffer = deque([row(1, a), row(2, b), row(3, a), row(4, a), row(5, b)])
    picked = picking.pick(buffer, pool(), SmsChannel(batch_size=2), T0, room=8)
    first = picked.groups[0]
    assert [r.id for r in first.rows] == [1, 3]  # same text, up to the batch size
    assert [r.id for r in buffer] == [2, 4, 5]  # the rest keep plan order
    assert picked.rows == 2


def test_a_bulk_of_n_spends_n_tokens_of_the_pace() -> None:
    senders = pool(rate=10.0)
    buffer = deque(row(i, {"text": "Oi"}) for i in range(1, 41))
    picked = picking.pick(buffer, senders, SmsChannel(batch_size=20), T0, room=8)
    assert [len(g.rows) for g in picked.groups] == [20]  # the second bulk must wait
    assert picked.wake == T0 + timedelta(seconds=2)  # 20 messages at 10/s
    later = picking.pick(buffer, senders, SmsChannel(batch_size=20), picked.wake, room=8)
    assert [len(g.rows) for g in later.groups] == [20]


def test_a_bulk_never_exceeds_the_daily_cap() -> None:
    buffer = deque(row(i, {"text": "Oi"}) for i in range(1, 30))
    picked = picking.pick(buffer, pool(daily_cap=7), SmsChannel(batch_size=100), T0, room=8)
    assert picked.rows == 7


def test_calls_in_progress_bound_the_voice_batch() -> None:
    flow = {"flowId": "f1"}
    buffer = deque(row(i, {**flow, "variables": {"nome": f"n{i}"}}) for i in range(1, 10))
    voice = VoiceChannel(batch_size=10, max_calls=10)
    picked = picking.pick(buffer, pool(rate=100), voice, T0, room=8, call_room=3)
    assert picked.rows == 3  # every recipient of one flow, but only 3 calls may start
    full = picking.pick(buffer, pool(rate=100), voice, T0, room=8, call_room=0)
    assert full.rows == 0 and full.calls_full


def test_sms_requests_are_the_bulk_body_and_never_carry_a_session() -> None:
    sms = SmsChannel()
    body = {"text": "Oi", "route": "marketing"}
    (single,) = sms.requests([row(1, body, to="5511999990001")], "account")
    assert single.path == "/api/v1/sms/send"
    assert single.body == {"to": "5511999990001", "text": "Oi", "route": "marketing"}
    (bulk,) = sms.requests([row(1, body, to="5511999990001"),
                            row(2, body, to="5511999990002")], "account")
    assert bulk.path == "/api/v1/sms/bulk"
    assert bulk.body == {"to": ["5511999990001", "5511999990002"], "text": "Oi",
                         "route": "marketing"}
    assert "sessionId" not in bulk.body


def test_sms_bulk_results_map_to_each_recipient() -> None:
    sms = SmsChannel(prices={"marketing": 50_000})
    rows = [row(i, {"text": "Oi"}, to=f"551199999000{i}") for i in range(1, 5)]
    answer = SmsBulkResult.model_validate({"success": True, "results": [
        {"to": "+55 11 99999-0001", "messageId": "M1", "status": "sent"},
        {"to": "5511999990002", "status": "failed", "error": "INVALID_NUMBER"},
        {"to": "5511999990003", "status": "skipped"},
    ]})
    got = sms._bulk_answers(rows, answer, sms.estimate(rows[0].payload))
    assert got[0].message_id == "M1"
    assert got[0].details == {"segments": 1, "encoding": "GSM-7", "costMicroReais": 50_000}
    assert classify(got[1].error) is Verdict.FAIL  # type: ignore[arg-type]
    assert isinstance(got[2].error, InsufficientBalance)
    assert classify(got[2].error) is Verdict.OUT_OF_FUNDS
    assert classify(got[3].error) is Verdict.AMBIGUOUS  # type: ignore[arg-type]


def test_sms_cost_counts_segments_of_the_text() -> None:
    sms = SmsChannel(prices={"marketing": 10, "otp": 30})
    long_ucs2 = {"text": "ação " * 20, "route": "otp"}  # 100 UCS-2 units: 2 parts of 67
    assert sms.estimate(orjson.dumps(long_ucs2).decode()) == {
        "segments": 2, "encoding": "UCS-2", "costMicroReais": 60}


def test_voice_bulk_carries_each_recipients_variables() -> None:
    voice = VoiceChannel()
    shared = {"flowId": "cobranca", "maxAttempts": 2}
    rows = [row(1, {**shared, "variables": {"nome": "Ana"}}, to="5511999990001"),
            row(2, {**shared, "variables": {"nome": "Bia"}}, to="5511999990002")]
    assert voice.group_key(rows[0]) == voice.group_key(rows[1])
    (request,) = voice.requests(rows, "account")
    assert request.path == "/api/v1/voice/bulk"
    assert request.body == {"flowId": "cobranca", "maxAttempts": 2, "recipients": [
        {"phone": "5511999990001", "variables": {"nome": "Ana"}},
        {"phone": "5511999990002", "variables": {"nome": "Bia"}}]}
    plain = [row(3, {"audioUrl": "https://x/a.mp3"}, to="5511999990003")]
    assert voice.requests(plain, "account")[0].body == {
        "audioUrl": "https://x/a.mp3", "numbers": ["5511999990003"]}


def test_voice_answers_dialed_head_and_skipped_tail() -> None:
    rows = [row(i, {"flowId": "f"}, to=f"551199999000{i}") for i in range(1, 5)]
    result = VoiceBulkResult.model_validate({"success": True, "bulkId": "B-7",
                                             "dialed": 3, "skipped": 1})
    got = answers_for(rows, result)
    assert [a.message_id for a in got[:3]] == [voice_key("B-7", r.to) for r in rows[:3]]
    assert got[0].message_id == "b-7:5511999990001"  # the ledger's case
    assert isinstance(got[3].error, InsufficientBalance)
    short = answers_for(rows, VoiceBulkResult.model_validate({"bulkId": "B", "dialed": 2}))
    assert classify(short[3].error) is Verdict.AMBIGUOUS  # type: ignore[arg-type]


def test_a_wallet_that_ran_out_pauses_and_keeps_the_rows() -> None:
    senders = pool()
    state = senders.senders["account"]
    batch = [SendOutcome(row(i, {"text": "Oi"}), state,
                         error=InsufficientBalance(402, "skipped")) for i in (1, 2)]
    batch.append(SendOutcome(row(3, {"text": "Oi"}), state, message_id="m3",
                             details={"segments": 1}))
    settled = settle(batch, senders, DispatchOptions(senders=("account",)),
                     random.Random(1), T0, events_received=True)
    assert [r[0] for r in settled.retries] == [1, 2]  # back to the plan, not failed
    assert not settled.failed
    assert settled.stop_reason is not None and "skipped 2 recipients" in settled.stop_reason
    assert settled.details == [(3, {"segments": 1})]


@pytest.mark.parametrize(("campaign", "account", "expected"), [(None, 30, 30), (5, 30, 5),
                                                               (50, 30, 30)])
def test_calls_allowed_are_the_campaigns_within_the_accounts(
        campaign: int | None, account: int, expected: int) -> None:
    options = DispatchOptions(senders=("account",), max_calls=campaign,
                              engine=EngineSettings(voice_max_calls=account))
    channel = channel_for("voice", options)
    assert isinstance(channel, VoiceChannel) and channel.max_calls == expected


def test_personalised_texts_go_alone_and_shared_ones_still_group() -> None:
    shared = {"text": "Oferta da semana"}
    rows = [row(i, shared if i % 3 == 0 else {"text": f"Olá cliente {i}"}) for i in range(1, 31)]
    buffer, senders, groups, now = deque(rows), pool(rate=1000), [], T0
    while buffer:  # the pace lets one request out per turn here: turns a second apart
        groups += picking.pick(buffer, senders, SmsChannel(batch_size=50), now, room=64).groups
        now += timedelta(seconds=1)
    sizes = {g.rows[0].payload: len(g.rows) for g in groups}
    assert sizes[orjson.dumps(shared).decode()] == 10  # every third row, one bulk
    assert sum(1 for n in sizes.values() if n == 1) == 20  # each personal text alone
    assert sorted(r.id for g in groups for r in g.rows) == list(range(1, 31))
