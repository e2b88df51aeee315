"""Every answer class maps to the right exception, over both transports and both code paths
(the send hot path and the httpx path), against a real server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import (
    Forbidden,
    NoAnswer,
    RateLimited,
    RequestRejected,
    ServerError,
    ServiceError,
    ServiceHTTPError,
    ServiceTimeout,
    ServiceUnreachable,
    SessionNotFound,
    Unauthorized,
    UnexpectedResponse,
)
from tests.service.support import API_KEY, Scripted

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
Call = Callable[[ServiceClient], Awaitable[object]]

CALLS: dict[str, Call] = {
    "send_text": lambda c: c.send_text("s1", "5511999990000", "hello"),
    "get_session": lambda c: c.get_session("s1"),
}


@pytest.fixture
async def client(scripted: Scripted, transport: str) -> AsyncIterator[ServiceClient]:
    """A client of the scripted server whose clock reads ``NOW``."""
    async with ServiceClient(scripted.base_url, API_KEY, transport=transport,  # type: ignore[arg-type]
                             clock=NOW.timestamp, timeout_s=5) as c:
        yield c


@pytest.fixture(params=sorted(CALLS))
def call(request: pytest.FixtureRequest) -> Call:
    """The hot path (a send) and the httpx path (a session read)."""
    return CALLS[request.param]


def assert_no_key(exc: BaseException, caplog: pytest.LogCaptureFixture | None = None) -> None:
    """The API key is in neither the message, the repr, nor any captured log line."""
    assert API_KEY not in str(exc)
    assert API_KEY not in repr(exc)
    assert API_KEY not in str(exc.args)
    if caplog is not None:
        assert API_KEY not in caplog.text


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, {"success": False, "error": "Invalid API key", "statusCode": 401}, Unauthorized),
        (403, {"success": False, "error": "No rights", "statusCode": 403}, Forbidden),
        (404, {"success": False, "error": "Session not found", "sessionId": "s1"},
         SessionNotFound),
        (404, {"success": False, "error": "Cannot find that", "statusCode": 404},
         RequestRejected),
        (400, {"success": False, "error": "to: invalid number", "statusCode": 400},
         RequestRejected),
        (422, {"detail": [{"loc": ["body", "to"], "msg": "bad"}]}, RequestRejected),
        (429, {"success": False, "error": "Too many requests"}, RateLimited),
        (500, {"success": False, "error": "Internal server error"}, ServerError),
        (502, {"error": "Bad gateway"}, ServerError),
        (503, {"success": False, "error": "Unavailable", "statusCode": 503}, ServerError),
    ],
)
async def test_status_classes(client: ServiceClient, scripted: Scripted, call: Call,
                              status: int, body: dict, expected: type[ServiceHTTPError],
                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    scripted.reply(status, body)
    with pytest.raises(expected) as info:
        await call(client)
    exc = info.value
    assert type(exc) is expected
    assert exc.status == status
    assert exc.path.startswith("/api/v1/")
    if isinstance(body.get("error"), str):
        assert exc.error == body["error"]
    assert str(status) in str(exc)
    assert exc.retryable == (status == 429 or status >= 500)
    assert_no_key(exc, caplog)


async def test_4xx_keeps_the_service_message(client: ServiceClient, scripted: Scripted) -> None:
    scripted.reply(400, {"success": False, "error": "text: Field required", "statusCode": 400})
    with pytest.raises(RequestRejected) as info:
        await client.send_text("s1", "5511999990000", "hello")
    assert not isinstance(info.value, SessionNotFound)
    assert info.value.error == "text: Field required"
    assert info.value.body["statusCode"] == 400
    assert not info.value.retryable


@pytest.mark.parametrize("text", ["<html><body><h1>502 Bad Gateway</h1></body></html>", ""])
async def test_non_json_error_body_is_still_clear(client: ServiceClient, scripted: Scripted,
                                                  call: Call, text: str) -> None:
    scripted.reply(502, text=text)
    with pytest.raises(ServerError) as info:
        await call(client)
    message = str(info.value)
    assert "502" in message
    assert ("Bad Gateway" in message) if text else ("empty error body" in message)


async def test_retry_after_seconds(client: ServiceClient, scripted: Scripted, call: Call) -> None:
    scripted.reply(429, {"error": "slow down"}, headers={"Retry-After": "7"})
    with pytest.raises(RateLimited) as info:
        await call(client)
    assert info.value.retry_after == 7.0


async def test_retry_after_http_date_is_relative_to_the_clock(
    client: ServiceClient, scripted: Scripted, call: Call
) -> None:
    later = datetime(2030, 1, 2, 3, 5, 35, tzinfo=UTC)  # NOW + 90 s
    scripted.reply(429, {"error": "slow down"},
                   headers={"Retry-After": format_datetime(later, usegmt=True)})
    with pytest.raises(RateLimited) as info:
        await call(client)
    assert info.value.retry_after == pytest.approx(90.0)


async def test_429_without_retry_after(client: ServiceClient, scripted: Scripted) -> None:
    scripted.reply(429, {"error": "slow down"})
    with pytest.raises(RateLimited) as info:
        await client.send_text("s1", "5511999990000", "hello")
    assert info.value.retry_after is None


async def test_success_false_on_200_is_an_error(client: ServiceClient, scripted: Scripted,
                                                call: Call) -> None:
    scripted.reply(200, {"success": False, "error": "Session not found", "sessionId": "s1"})
    with pytest.raises(SessionNotFound):
        await call(client)
    scripted.reply(200, {"success": False, "error": "Failed to reject call"})
    with pytest.raises(RequestRejected, match="Failed to reject call"):
        await client.reject_call("s1", "CALL1", "5511999990000@s.whatsapp.net")


@pytest.mark.parametrize("content", [b"not json at all", b"[1, 2]"])
async def test_unreadable_2xx_body(client: ServiceClient, scripted: Scripted, call: Call,
                                   content: bytes) -> None:
    scripted.reply(200, content, content_type="application/json")
    with pytest.raises(UnexpectedResponse):
        await call(client)


async def test_time_out(scripted: Scripted, transport: str, call: Call,
                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    scripted.reply(200, hang=True)
    async with ServiceClient(scripted.base_url, API_KEY, transport=transport,  # type: ignore[arg-type]
                             timeout_s=0.3) as client:
        with pytest.raises(ServiceTimeout) as info:
            await call(client)
    exc = info.value
    assert isinstance(exc, NoAnswer) and exc.retryable
    assert exc.maybe_applied  # the request was sent: it may have been applied
    assert scripted.requests, "the request reached the server"
    assert_no_key(exc, caplog)



async def test_a_twin_keeps_the_configured_time_out_and_pool(
        scripted: Scripted, transport: str, call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    """The receiver rejects calls through a twin of the run's client (its own pool, for its
    own loop): the twin keeps the settings' time-out and connections, not the defaults."""
    from scheduler.settings.load import load_settings

    for name in ("CAMPAIGN_HTTP_TIMEOUT_S", "CAMPAIGN_HTTP_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings("/nonexistent.toml", base_url=scripted.base_url, api_key=API_KEY,
                             http_timeout_s=0.3, http_concurrency=5)
    scripted.reply(200, hang=True)
    async with ServiceClient.from_settings(settings, transport=transport) as client, \
            client.for_another_loop() as twin:
        assert (twin.timeout_s, twin.concurrency, twin.transport_kind) == (0.3, 5, transport)
        assert twin.http.timeout == client.http.timeout == httpx.Timeout(0.3)
        with pytest.raises(ServiceTimeout):  # the default 15 s would outlast the hang (10 s)
            await call(twin)

async def test_connection_refused(closed_port: int, transport: str, call: Call,
                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with ServiceClient(f"http://127.0.0.1:{closed_port}", API_KEY,
                             transport=transport) as client:  # type: ignore[arg-type]
        with pytest.raises(ServiceUnreachable) as info:
            await call(client)
    exc = info.value
    assert not isinstance(exc, ServiceTimeout)
    assert exc.retryable and not exc.maybe_applied
    assert f"127.0.0.1:{closed_port}" in str(exc)
    assert_no_key(exc, caplog)


async def test_key_echoed_by_the_service_is_scrubbed(client: ServiceClient, scripted: Scripted,
                                                     call: Call) -> None:
    scripted.reply(400, {"error": f"bad header Authorization: {API_KEY}"})
    with pytest.raises(RequestRejected) as info:
        await call(client)
    assert "***" in info.value.error
    assert_no_key(info.value)
    scripted.reply(500, text=f"<pre>Authorization: {API_KEY}</pre>")
    with pytest.raises(ServerError) as info2:
        await call(client)
    assert_no_key(info2.value)


async def test_key_is_sent_raw_but_never_shown(client: ServiceClient, scripted: Scripted,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    await client.send_text("s1", "5511999990000", "hello")
    scripted.reply(200, {"success": True, "data": [{"sessionId": "s1"}]})
    assert [s.sessionId for s in await client.list_sessions()] == ["s1"]
    assert API_KEY not in caplog.text
    assert scripted.last["headers"]["authorization"] == API_KEY  # raw key, no "Bearer"
    assert API_KEY not in repr(client)
    assert API_KEY not in repr(client.http.headers)


async def test_every_service_error_is_a_scheduler_error(client: ServiceClient,
                                                        scripted: Scripted) -> None:
    from scheduler.core.errors import SchedulerError

    scripted.reply(418, {"error": "teapot"})
    with pytest.raises(ServiceError) as info:
        await client.send_text("s1", "5511999990000", "hello")
    assert isinstance(info.value, SchedulerError)
    assert type(info.value) is RequestRejected and info.value.status == 418
