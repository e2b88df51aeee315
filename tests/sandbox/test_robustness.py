"""Whatever a client sends, the sandbox answers with its envelope and never a 5xx."""

from __future__ import annotations

import json
import logging
import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.service.requests import SEND_KINDS
from tests.sandbox.support import sample_bodies, unique_id

FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | FINITE | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def fuzz_session(shared):
    """A connected session on the shared sandbox for every fuzzed send."""
    session_id = unique_id("fuzz")
    shared[0].create_session(session_id)
    return session_id


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def check_answer(response, allowed=(200, 400, 404, 409)):
    assert response.status_code in allowed, response.text
    body = response.json()
    if response.status_code >= 400:
        assert body["success"] is False
        assert isinstance(body["error"], str) and body["error"]
        assert body["statusCode"] == response.status_code
    else:
        assert body["success"] is True


@SETTINGS
@given(
    kind=st.sampled_from(sorted(SEND_KINDS)),
    drop=st.sets(st.text(max_size=12), max_size=3),
    changes=st.dictionaries(st.text(max_size=12), JSON_VALUES, max_size=3),
    data=st.data(),
)
def test_mutated_send_bodies_never_break_the_sandbox(
    shared, fuzz_session, kind, drop, changes, data
):
    box, _ = shared
    body = sample_bodies(fuzz_session)[kind]
    if body:
        drop |= set(data.draw(st.sets(st.sampled_from(sorted(body)), max_size=2)))
    mutated = {k: v for k, v in {**body, **changes}.items() if k not in drop}
    check_answer(box.send(kind, mutated))


@SETTINGS
@given(
    content=st.binary(max_size=64),
    content_type=st.sampled_from(
        [
            "application/json",
            "text/plain",
            "multipart/form-data",
            "application/x-www-form-urlencoded",
            "image/png",
        ]
    ),
)
def test_arbitrary_bytes_are_answered(shared, content, content_type):
    box, _ = shared
    response = box.api(
        "POST", SEND_KINDS["text"].path, content=content, headers={"content-type": content_type}
    )
    check_answer(response, allowed=(400,))


@SETTINGS
@given(
    update=st.dictionaries(
        st.sampled_from(
            ["fail_rate", "latency_ms", "webhook_reorder", "daily_message_limit", "bogus"]
        ),
        JSON_VALUES,
        max_size=2,
    )
)
def test_fault_updates_are_validated(shared, update):
    box, _ = shared
    response = box.http.post("/sandbox/faults", content=json.dumps(update))
    assert response.status_code in (200, 400), response.text
    box.set_faults(
        fail_rate=0.0, latency_ms="0-0", daily_message_limit=100_000, webhook_reorder=False
    )


def _post_and_vanish(box, body: bytes, *, cut: int = 0) -> None:
    """POST a text send on a raw socket and close it at once (the last ``cut`` bytes of
    the body never sent): a ``campaign run`` killed mid-request."""
    host, port = box.base_url.removeprefix("http://").split(":")
    head = (f"POST {SEND_KINDS['text'].path} HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: {box.api_key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    with socket.create_connection((host, int(port))) as conn:
        conn.sendall(head.encode() + body[:len(body) - cut])


def test_a_send_whose_client_vanished_mid_request_is_taken_and_its_event_posted(
        make_sandbox, webhook_sink, caplog):
    # issue 31: a `campaign run` killed while its send waits out the sandbox's latency;
    # the request had arrived whole, so the sandbox takes it as the service does, and
    # posts its messages.sent (no traceback, no sandbox bug)
    box = make_sandbox(latency_ms=(300, 300))
    box.create_session("s1", webhook_url=webhook_sink.url)
    caplog.set_level(logging.INFO)
    body = json.dumps({"sessionId": "s1", "to": "5511987654321", "text": "oi"}).encode()
    _post_and_vanish(box, body)
    deadline = time.monotonic() + 10
    while not box.sends():
        assert time.monotonic() < deadline, "the send was not taken"
        time.sleep(0.05)
    [taken] = box.sends()
    [sent] = webhook_sink.wait_for(lambda e: e["event"] == "messages.sent")
    assert sent["data"]["id"].lower() == taken["messageId"].lower()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


def test_a_client_gone_before_its_request_arrived_whole_is_one_plain_log_line(
        make_sandbox, caplog):
    box = make_sandbox(latency_ms=(300, 300))
    box.create_session("s1")
    caplog.set_level(logging.INFO)
    body = json.dumps({"sessionId": "s1", "to": "5511987654321", "text": "oi"}).encode()
    _post_and_vanish(box, body, cut=5)
    deadline = time.monotonic() + 10
    while not any("went away" in r.getMessage() for r in caplog.records):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.05)
    gone = [r for r in caplog.records if "went away" in r.getMessage()]
    assert [r.getMessage() for r in gone] == [
        f"client went away before its request was read: POST {SEND_KINDS['text'].path} "
        "(nothing done)"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert box.sends() == []  # nothing was taken
    assert box.send("text", {"sessionId": "s1", "to": "5511987654321", "text": "oi"}
                    ).status_code == 200  # and the next client is served
