"""Webhook delivery: envelope, duplicates, retries, 404 stops, reordering, delays, routing."""

from __future__ import annotations

import time

from tests.sandbox.support import TO


def wait_log(box, predicate, count=1, timeout=5.0):
    """Poll ``/sandbox/webhooks`` until ``count`` attempts satisfy ``predicate``."""
    deadline = time.monotonic() + timeout
    while True:
        matching = [entry for entry in box.webhooks() if predicate(entry)]
        if len(matching) >= count or time.monotonic() > deadline:
            return matching
        time.sleep(0.01)


def send_texts(box, n):
    return [
        box.send("text", {"sessionId": "s1", "to": TO, "text": f"m{i}"}).json()["messageId"]
        for i in range(n)
    ]


def test_delivery_is_logged(wired):
    send_texts(wired.sandbox, 1)
    wired.sink.wait_for()
    [entry] = wait_log(wired.sandbox, lambda e: True)
    assert entry["url"] == wired.sink.url
    assert entry["event"] == "messages.sent"
    assert entry["status"] == 200
    assert entry["attempt"] == 1
    assert wired.sink.requests[0]["headers"]["content-type"] == "application/json"


def test_duplicates_arrive(make_sandbox, webhook_sink):
    box = make_sandbox(webhook_duplicate_rate=1.0)
    box.create_session("s1", webhook_url=webhook_sink.url)
    [message_id] = send_texts(box, 1)
    events = webhook_sink.wait_for(lambda e: e["event"] == "messages.sent", count=2)
    assert len(events) == 2
    assert events[0] == events[1]
    assert events[0]["data"]["id"].lower() == message_id


def test_failed_delivery_is_retried_until_accepted(make_sandbox, webhook_sink):
    box = make_sandbox(webhook_retry_base_s=0.05, webhook_max_attempts=20)
    box.create_session("s1", webhook_url=webhook_sink.url)
    webhook_sink.status_code = 500
    send_texts(box, 1)
    failed = wait_log(box, lambda e: e["status"] == 500, count=2)
    assert [e["attempt"] for e in failed[:2]] == [1, 2]
    webhook_sink.status_code = 200
    webhook_sink.wait_for(lambda e: e["event"] == "messages.sent")
    [ok] = wait_log(box, lambda e: e["status"] == 200)
    assert ok["attempt"] >= 3


def test_retries_stop_after_max_attempts(make_sandbox, webhook_sink):
    box = make_sandbox(webhook_retry_base_s=0.005, webhook_max_attempts=3)
    box.create_session("s1", webhook_url=webhook_sink.url)
    webhook_sink.status_code = 503
    send_texts(box, 1)
    attempts = wait_log(box, lambda e: e["status"] == 503, count=3)
    assert [e["attempt"] for e in attempts] == [1, 2, 3]
    time.sleep(0.2)  # a 4th attempt would have come after 0.02 s
    assert len(box.webhooks()) == 3


def test_404_and_410_stop_retrying(make_sandbox, webhook_sink):
    box = make_sandbox(webhook_retry_base_s=0.005)
    box.create_session("s1", webhook_url=webhook_sink.url)
    for status in (404, 410):
        webhook_sink.status_code = status
        send_texts(box, 1)
        wait_log(box, lambda e, s=status: e["status"] == s)
    time.sleep(0.2)  # a retry would have come after 0.005 s
    assert [(e["status"], e["attempt"]) for e in box.webhooks()] == [(404, 1), (410, 1)]


def test_unreachable_webhook_is_logged_as_error(make_sandbox):
    box = make_sandbox(webhook_max_attempts=1)
    box.create_session("s1", webhook_url="http://127.0.0.1:9/hook")
    send_texts(box, 1)
    [entry] = wait_log(box, lambda e: True)
    assert entry["status"] is None
    assert entry["error"]


def test_reordering_changes_arrival_order(make_sandbox, webhook_sink):
    box = make_sandbox(webhook_reorder=True, webhook_concurrency=1, seed=5)
    box.create_session("s1", webhook_url=webhook_sink.url)
    sent = [m.lower() for m in send_texts(box, 12)]
    events = webhook_sink.wait_for(lambda e: e["event"] == "messages.sent", count=12)
    arrived = [e["data"]["id"].lower() for e in events]
    assert sorted(arrived) == sorted(sent)
    assert arrived != sent


def test_delayed_events_all_arrive(make_sandbox, webhook_sink):
    box = make_sandbox(webhook_delay_ms=(5, 30))
    box.create_session("s1", webhook_url=webhook_sink.url)
    sent = {m.lower() for m in send_texts(box, 5)}
    events = webhook_sink.wait_for(lambda e: e["event"] == "messages.sent", count=5)
    assert {e["data"]["id"].lower() for e in events} == sent


def test_webhook_config_per_event_and_disabled(sandbox, webhook_sink):
    per_event = {
        "enabled": True,
        "type": "per_event",
        "events": {
            "messages.sent": {"enabled": True, "webhookUrl": f"{webhook_sink.base_url}/sent"}
        },
    }
    sandbox.api(
        "POST",
        "/api/v1/sessions",
        json={"sessionId": "s1", "webhookUrl": webhook_sink.url, "webhookConfig": per_event},
    )
    sandbox.scan("s1")
    send_texts(sandbox, 1)
    webhook_sink.wait_for()
    assert webhook_sink.requests[0]["path"] == "/sent"

    sandbox.api(
        "POST",
        "/api/v1/sessions",
        json={
            "sessionId": "s2",
            "webhookUrl": webhook_sink.url,
            "webhookConfig": {"enabled": False},
        },
    )
    sandbox.scan("s2")
    sandbox.send("text", {"sessionId": "s2", "to": TO, "text": "x"})
    sandbox.send("text", {"sessionId": "s1", "to": TO, "text": "after"})
    webhook_sink.wait_for(count=2)
    assert {e["sessionId"] for e in webhook_sink.snapshot()} == {"s1"}


def test_webhook_url_set_later_is_used(sandbox, webhook_sink):
    sandbox.create_session("s1")
    send_texts(sandbox, 1)
    sandbox.api("POST", "/api/v1/sessions/s1/webhook", json={"webhookUrl": webhook_sink.url})
    [later] = send_texts(sandbox, 1)
    [event] = webhook_sink.wait_for()
    assert event["data"]["id"].lower() == later
    assert len(wait_log(sandbox, lambda e: True)) == 1
