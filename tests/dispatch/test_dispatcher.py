"""The dispatcher against a real sandbox: pacing, windows, caps, faults, senders, steps."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from datetime import datetime, timedelta

import pytest

from scheduler.dispatch.exceptions import RunStopped
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.windows import SendWindow
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.client import ServiceClient
from scheduler.settings.engine import EngineSettings
from tests.engine import dispatcher_for
from tests.factories import T0, FakeClock, Service, make_run


def _options(**kw) -> DispatchOptions:
    kw.setdefault("senders", ("s1",))
    kw.setdefault("rate", 10.0)
    kw.setdefault("timezone", "America/Sao_Paulo")
    return DispatchOptions(**kw)


async def _dispatch(ledger: Ledger, service: Service, run_id: int, clock: FakeClock,
                    options: DispatchOptions, *, api_key: str | None = None, **kw):
    async with ServiceClient(service.base_url, api_key or service.api_key) as client:
        dispatcher = dispatcher_for(ledger, client, run_id, options, clock=clock,
                                    rng=random.Random(3), **kw)
        result = await dispatcher.run()
    return dispatcher, result


def _at(send: dict) -> datetime:
    return datetime.fromisoformat(send["at"].replace("Z", "+00:00"))


def _rows(ledger: Ledger, run_id: int) -> list[dict]:
    with ledger.engine.connect() as conn:
        return [dict(r) for r in conn.execute(tables.deliveries.select().where(
            tables.deliveries.c.run_id == run_id).order_by(tables.deliveries.c.seq)).mappings()]


async def test_every_step_is_sent_once_in_order_by_the_same_sender(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1", "s2")
    run_id = make_run(ledger, 20, steps=2, senders=("s1", "s2"))
    _, result = await _dispatch(ledger, service, run_id, clock,
                                _options(senders=("s1", "s2"), step_delays_s=(0.0, 30.0)))
    assert result.status == RunStatus.COMPLETED
    assert result.counts == {"accepted": 40}
    sends = service.sends()
    assert len(sends) == 40
    assert len({(s["to"], s["body"]["text"]) for s in sends}) == 40  # no duplicates
    by_to: dict[str, list[dict]] = {}
    for send in sends:
        by_to.setdefault(send["to"], []).append(send)
    for pair in by_to.values():
        first, second = pair
        assert first["body"]["text"].endswith("passo 0")
        assert second["sessionId"] == first["sessionId"]  # sticky sender
        assert _at(second) - _at(first) >= timedelta(seconds=30)  # the step's delay
    assert Counter(s["sessionId"] for s in sends) == {"s1": 20, "s2": 20}  # rotation
    assert all(r["message_id"] for r in _rows(ledger, run_id))


async def test_the_rate_is_kept_per_sender(ledger: Ledger, service_factory,
                                           clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 12)
    await _dispatch(ledger, service, run_id, clock, _options(rate=2.0))
    times = [_at(s) for s in service.sends()]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert len(times) == 12
    assert min(gaps) >= 0.5 - 1e-6
    assert (times[-1] - times[0]).total_seconds() == pytest.approx(5.5, abs=0.05)


async def test_jitter_adds_a_random_pause_between_sends(ledger: Ledger, service_factory,
                                                        clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 10)
    await _dispatch(ledger, service, run_id, clock, _options(rate=10.0, jitter=(2.0, 8.0)))
    times = [_at(s) for s in service.sends()]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    assert all(2.0 - 1e-6 <= g <= 8.0 + 0.2 for g in gaps)
    assert len({round(g, 2) for g in gaps}) > 3  # really random


async def test_a_window_that_closes_mid_run_reopens_the_next_day(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 100)
    window = SendWindow.parse("09:00-09:01", "mon-fri", "America/Sao_Paulo")  # 12:00Z
    dispatcher, result = await _dispatch(ledger, service, run_id, clock,
                                         _options(rate=1.0, window=window))
    assert result.status == RunStatus.COMPLETED
    days = Counter(_at(s).date() for s in service.sends())
    assert days == {T0.date(): 60, (T0 + timedelta(days=1)).date(): 40}
    assert all(window.is_open(_at(s)) for s in service.sends())
    notes = [e.what for e in dispatcher.timeline]
    assert any("window closed; paused until 2026-11-24 09:00" in n for n in notes)
    assert any("resumed" in n for n in notes)


async def test_the_daily_cap_spreads_sends_over_local_days(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 12)
    await _dispatch(ledger, service, run_id, clock, _options(rate=5.0, daily_cap=5))
    zone = SendWindow(tz="America/Sao_Paulo").zone
    per_day = Counter(_at(s).astimezone(zone).date() for s in service.sends())
    assert sorted(per_day.values()) == [2, 5, 5]


async def test_the_latest_send_time_expires_what_is_left(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 10)
    _, result = await _dispatch(ledger, service, run_id, clock,
                                _options(rate=1.0, latest=T0 + timedelta(seconds=3.5)))
    assert result.counts == {"accepted": 4, "expired": 6}
    assert len(service.sends()) == 4


async def test_a_429_burst_slows_the_sender_and_nothing_is_lost_or_doubled(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock, throttle_rate=0.6, throttle_retry_after_s=2)
    await service.connect("s1")
    run_id = make_run(ledger, 30)
    options = _options(rate=10.0, engine=EngineSettings(send_max_attempts=50))
    dispatcher, result = await _dispatch(ledger, service, run_id, clock, options)
    assert result.counts == {"accepted": 30}
    sends = service.sends()
    assert sorted(s["to"] for s in sends) == sorted({s["to"] for s in sends})
    assert len(sends) == 30
    rows = _rows(ledger, run_id)
    assert max(r["attempts"] for r in rows) > 1
    # honoured Retry-After: a throttled row was not retried before 2 s had passed
    assert (clock.now - T0).total_seconds() > 2
    assert dispatcher.pool is not None and dispatcher.pool.senders["s1"].slowdown >= 1.0


async def test_a_sender_that_disconnects_hands_its_work_to_the_others(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1", "s2")
    run_id = make_run(ledger, 40, senders=("s1", "s2"))
    done = {"n": 0}

    def progress(counts: dict[str, int]) -> None:
        done["n"] = counts.get("accepted", 0)
        if done["n"] >= 10 and "cut" not in done:
            done["cut"] = True
            service.post("/sandbox/sessions/s2/disconnect").raise_for_status()

    dispatcher, result = await _dispatch(
        ledger, service, run_id, clock,
        _options(senders=("s1", "s2"), rate=5.0, engine=EngineSettings(sender_cooloff_s=3600)),
        on_progress=progress)
    assert result.counts == {"accepted": 40}
    sends = service.sends()
    assert len(sends) == len({s["to"] for s in sends}) == 40
    assert Counter(s["sessionId"] for s in sends)["s1"] > 25
    assert any("sender s2 paused" in e.what for e in dispatcher.timeline)


async def test_a_rejected_body_fails_at_once_with_the_services_message(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 3, steps=2)
    with ledger.engine.begin() as conn:  # corrupt one stored body: an unknown field
        conn.execute(tables.deliveries.update().where(
            tables.deliveries.c.run_id == run_id, tables.deliveries.c.seq == 0,
        ).values(payload='{"text": "x", "colour": "red"}'))
    _, result = await _dispatch(ledger, service, run_id, clock, _options())
    assert result.counts == {"accepted": 4, "failed": 1, "skipped": 1}
    failed = next(r for r in _rows(ledger, run_id) if r["state"] == "failed")
    assert "HTTP 400" in failed["last_error"] and "colour" in failed["last_error"]
    assert failed["attempts"] == 1


async def test_a_refused_key_stops_the_run_and_says_why(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 5)
    with pytest.raises(RunStopped, match="refused the API key"):
        await _dispatch(ledger, service, run_id, clock, _options(), api_key="wrong")
    run = ledger.get_run(run_id)
    assert run.status == RunStatus.PAUSED
    assert "HTTP 401" in (run.stop_reason or "")
    assert "wrong" not in (run.stop_reason or "")
    assert ledger.counts(run_id) == {"planned": 5}
    assert service.sends() == []


async def test_server_errors_are_retried_with_backoff_until_they_pass(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock, fail_rate=0.5)
    await service.connect("s1")
    run_id = make_run(ledger, 20)
    _, result = await _dispatch(ledger, service, run_id, clock,
                                _options(engine=EngineSettings(
                                    send_max_attempts=30, sender_failure_threshold=1000)))
    assert result.counts == {"accepted": 20}
    assert len(service.sends()) == 20


async def test_pause_request_from_the_ledger_stops_within_the_poll(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = make_run(ledger, 50)

    def progress(counts: dict[str, int]) -> None:
        if counts.get("accepted", 0) >= 5:
            ledger.request(run_id, "pause")

    _, result = await _dispatch(ledger, service, run_id, clock, _options(rate=2.0),
                                on_progress=progress)
    assert result.status == RunStatus.PAUSED
    sent = len(service.sends())
    assert 5 <= sent < 50
    ledger.request(run_id, "resume")
    _, result = await _dispatch(ledger, service, run_id, clock, _options(rate=2.0))
    assert result.status == RunStatus.COMPLETED
    assert len(service.sends()) == 50 == len({s["to"] for s in service.sends()})


async def test_windows_in_each_recipients_own_time_zone(
        ledger: Ledger, service_factory, clock: FakeClock) -> None:
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = ledger.create_run(campaign_name="tz", channel="whatsapp", definition_path="t",
                                definition={"senders": ["s1"]}, delivery_mode="at-most-once",
                                timezone="America/Sao_Paulo")
    rows = [{"row": i + 1, "to": to, "step": 0, "kind": "text",
             "path": "/api/v1/messages/send/text", "payload": {"text": "oi"}, "variables": {},
             "region": region, "state": "planned", "reason": None}
            for i, (to, region) in enumerate([("12125550123", "US"),
                                              ("5511987650001", "BR")])]
    ledger.store_plan(run_id, [rows], start_at=T0)
    window = SendWindow.parse("09:00-09:01", "*", "America/Sao_Paulo")
    await _dispatch(ledger, service, run_id, clock,
                    _options(window=window, recipient_timezone=True))
    at = {s["to"]: _at(s) for s in service.sends()}
    assert at["5511987650001"] == T0  # 09:00 in São Paulo
    assert at["12125550123"] == T0 + timedelta(hours=2)  # 09:00 in New York (EST)
