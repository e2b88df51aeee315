"""Session status events: the models parse them, the sandbox sends them on create, scan,
disconnect and logout (``connection.status``, ``connection.qrcode``, ``connection.paircode``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler.service.events import (
    ConnectionPairCodeEvent,
    ConnectionQrCodeEvent,
    ConnectionStatusEvent,
    UnknownEvent,
    parse_event,
)
from scheduler.service.exceptions import EventParseError
from scheduler.service.session_events import SESSION_STATUSES

STAMP = "2026-11-23T08:00:00.000Z"


def _envelope(event: str, data: Any) -> dict[str, Any]:
    return {"event": event, "sessionId": "s1", "data": data, "timestamp": STAMP}


@pytest.mark.parametrize("status", SESSION_STATUSES)
def test_every_status_value_parses(status: str) -> None:
    event = parse_event(_envelope("connection.status", {"status": status, "extra": 1}))
    assert isinstance(event, ConnectionStatusEvent)
    assert event.data.status == status and event.data.known
    assert event.data.connected == (status == "connected")


def test_an_undocumented_status_is_kept_and_a_missing_one_refused() -> None:
    event = parse_event(_envelope("connection.status", {"status": "syncing"}))
    assert isinstance(event, ConnectionStatusEvent)
    assert event.data.status == "syncing" and not event.data.known
    with pytest.raises(EventParseError, match=r"connection\.status"):
        parse_event(_envelope("connection.status", {"reason": "no status"}))


def test_qr_and_pair_codes_parse() -> None:
    qr = parse_event(_envelope("connection.qrcode", {"qrCode": "2@abc", "qrCodeImage": "data:"}))
    assert isinstance(qr, ConnectionQrCodeEvent) and qr.data.qrCode == "2@abc"
    pair = parse_event(_envelope("connection.paircode", {"pairCode": "ABCD-EFGH"}))
    assert isinstance(pair, ConnectionPairCodeEvent) and pair.data.pairCode == "ABCD-EFGH"
    with pytest.raises(EventParseError):
        parse_event(_envelope("connection.qrcode", {"qrCode": ""}))
    assert isinstance(parse_event(_envelope("connection.other", {})), UnknownEvent)


def _statuses(sink: Any, session_id: str) -> list[str]:
    return [e["data"]["status"] for e in sink.of("connection.status")
            if e["sessionId"] == session_id]


def test_scan_disconnect_and_logout_each_send_their_status(make_sandbox, webhook_sink) -> None:
    box = make_sandbox(session_status_events=True)
    box.create_session("s1", webhook_url=webhook_sink.url, connect=False)
    webhook_sink.wait_for(lambda e: e["event"] == "connection.qrcode")
    first_qr = webhook_sink.of("connection.qrcode")[0]["data"]["qrCode"]
    assert first_qr == box.api("GET", "/api/v1/sessions/s1/qr").json()["qrCode"]
    assert _statuses(webhook_sink, "s1") == ["qr_ready"]

    box.scan("s1")
    webhook_sink.wait_for(lambda e: e["event"] == "connection.status", count=2)
    connected = webhook_sink.of("connection.status")[-1]
    assert connected["data"] == {"status": "connected", "reason": "scanned",
                                 "phone": box.api("GET", "/api/v1/sessions/s1").json()["data"]
                                 ["phone"]}

    box.disconnect("s1")
    webhook_sink.wait_for(lambda e: e["event"] == "connection.qrcode", count=2)
    webhook_sink.wait_for(lambda e: e["event"] == "connection.status", count=3)
    assert _statuses(webhook_sink, "s1") == ["qr_ready", "connected", "disconnected"]
    new_qr = webhook_sink.of("connection.qrcode")[-1]["data"]["qrCode"]
    assert new_qr != first_qr  # a disconnected session has a new QR code to scan

    box.scan("s1")
    record = box.logout("s1")
    assert record["status"] == "disconnected" and record["qrCode"]
    webhook_sink.wait_for(lambda e: e["event"] == "connection.status", count=5)
    assert _statuses(webhook_sink, "s1")[-2:] == ["connected", "logged_out"]
    sent = box.send("text", {"sessionId": "s1", "to": "5511988887777", "text": "oi"})
    assert sent.status_code == 409  # a logged-out session sends nothing until scanned again

    for raw in webhook_sink.snapshot():  # everything sent parses into the typed models
        assert not isinstance(parse_event(raw), UnknownEvent)


def test_a_pair_mode_session_sends_its_pairing_code(make_sandbox, webhook_sink) -> None:
    box = make_sandbox(session_status_events=True)
    body = {"sessionId": "p1", "webhookUrl": webhook_sink.url, "connectionMode": "pair",
            "pairPhone": "5511977776666"}
    assert box.api("POST", "/api/v1/sessions", json=body).json()["data"]["status"] == \
        "pair_code_ready"
    [code] = webhook_sink.wait_for(lambda e: e["event"] == "connection.paircode")
    assert code["data"]["phone"] == "5511977776666"
    assert len(code["data"]["pairCode"]) == 9 and code["data"]["pairCode"][4] == "-"
    assert _statuses(webhook_sink, "p1") == ["pair_code_ready"]


def test_deleting_a_session_logs_it_out_first(make_sandbox, webhook_sink) -> None:
    box = make_sandbox(session_status_events=True)
    box.create_session("s1", webhook_url=webhook_sink.url)
    assert box.api("DELETE", "/api/v1/sessions/s1").status_code == 200
    webhook_sink.wait_for(lambda e: e["event"] == "connection.status"
                          and e["data"]["status"] == "logged_out")


def test_the_quiet_sandbox_sends_no_status_events(make_sandbox, webhook_sink) -> None:
    box = make_sandbox()
    box.create_session("s1", webhook_url=webhook_sink.url)
    box.disconnect("s1")
    box.logout("s1")
    box.send("text", {"sessionId": "s1", "to": "5511988887777", "text": "oi"})
    box.scan("s1")
    box.send("text", {"sessionId": "s1", "to": "5511988887777", "text": "oi"})
    webhook_sink.wait_for(lambda e: e["event"] == "messages.sent")
    assert {e["event"] for e in webhook_sink.snapshot()} == {"messages.sent"}


def test_status_events_are_in_time_order_even_within_one_millisecond(
        make_sandbox, webhook_sink) -> None:
    frozen = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    box = make_sandbox(session_status_events=True, clock=lambda: frozen)
    box.create_session("s1", webhook_url=webhook_sink.url)  # qr_ready, then connected
    box.disconnect("s1")
    box.scan("s1")
    events = webhook_sink.wait_for(lambda e: e["event"] == "connection.status", count=4)
    by_time = sorted(events, key=lambda e: e["timestamp"])
    assert [e["data"]["status"] for e in by_time] == \
        ["qr_ready", "connected", "disconnected", "connected"]
    assert len({e["timestamp"] for e in events}) == 4
