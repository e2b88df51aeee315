"""Pure pieces of the client: Retry-After, aiohttp error translation, tolerant responses."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp.client_reqrep import ConnectionKey
from hypothesis import given
from hypothesis import strategies as st

from scheduler.service.exceptions import (
    InvalidRequest,
    ServiceTimeout,
    ServiceUnreachable,
    parse_retry_after,
)
from scheduler.service.responses import (
    Limits,
    QrCode,
    RejectCallResult,
    SendResult,
    SessionRecord,
    normalise_message_id,
    session_list,
)
from scheduler.service.transport import no_answer, translate_aiohttp_error

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()


def clock() -> float:
    """A fixed clock."""
    return NOW


@pytest.mark.parametrize(("value", "seconds"), [
    ("120", 120.0), ("0", 0.0), (" 3 ", 3.0), ("1.5", 1.5),
    ("Wed, 02 Jan 2030 03:05:05 GMT", 60.0),
    ("Wed, 02 Jan 2030 03:00:00 GMT", 0.0),  # in the past: retry now
    ("-5", None), ("soon", None), ("", None), (None, None), ("nan", None),
    ("Wed, 02 Jan 2030 03:05:05", None),  # a date without a zone is not an HTTP date
])
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value, clock) == seconds


@given(st.integers(min_value=0, max_value=10**6))
def test_retry_after_date_round_trip(delta: int) -> None:
    when = datetime.fromtimestamp(NOW + delta, tz=UTC)
    assert parse_retry_after(format_datetime(when, usegmt=True), clock) == pytest.approx(delta)


def _connector_error() -> aiohttp.ClientConnectorError:
    key = ConnectionKey("127.0.0.1", 1, False, True, None, None, None)
    return aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))


@pytest.mark.parametrize(("exc", "kind"), [
    (aiohttp.ConnectionTimeoutError("connect"), httpx.ConnectTimeout),
    (aiohttp.SocketTimeoutError("read"), httpx.ReadTimeout),
    (TimeoutError(), httpx.TimeoutException),
    (_connector_error(), httpx.ConnectError),
    (aiohttp.ServerDisconnectedError(), httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError("cut"), httpx.ReadError),
    (aiohttp.InvalidURL("nope"), httpx.UnsupportedProtocol),
    (aiohttp.ClientOSError(104, "reset"), httpx.NetworkError),
    (aiohttp.ClientError("other"), httpx.TransportError),
])
def test_aiohttp_errors_keep_their_meaning(exc: BaseException, kind: type) -> None:
    translated = translate_aiohttp_error(exc)
    assert type(translated) is kind


@pytest.mark.parametrize(("exc", "kind", "maybe_applied"), [
    (httpx.ConnectError("refused"), ServiceUnreachable, False),
    (httpx.ConnectTimeout("slow"), ServiceTimeout, False),
    (httpx.PoolTimeout("busy"), ServiceTimeout, False),
    (httpx.ReadTimeout("slow"), ServiceTimeout, True),
    (httpx.RemoteProtocolError("dropped"), ServiceUnreachable, True),
    (httpx.ReadError("reset"), ServiceUnreachable, True),
])
def test_no_answer_says_whether_the_request_may_have_been_applied(
    exc: httpx.HTTPError, kind: type, maybe_applied: bool
) -> None:
    error = no_answer(exc, "POST", "/api/v1/x", "http://127.0.0.1:1", "KEY")
    assert type(error) is kind and error.retryable
    assert error.maybe_applied is maybe_applied  # type: ignore[attr-defined]


def test_no_answer_scrubs_the_key_and_refuses_bad_urls() -> None:
    error = no_answer(httpx.ConnectError("sent KEY123 here"), "GET", "/p", "http://h", "KEY123")
    assert "KEY123" not in str(error) and "***" in str(error)
    assert isinstance(no_answer(httpx.UnsupportedProtocol("ftp"), "GET", "/p", "ftp://h", None),
                      InvalidRequest)


def test_send_result_is_tolerant() -> None:
    result = SendResult.model_validate({"messageId": 123, "timestamp": "1700000000000",
                                        "status": "sent", "brandNew": {"x": 1}})
    assert (result.messageId, result.timestamp, result.success) == ("123", 1700000000000, None)
    assert SendResult.model_validate({"timestamp": "yesterday"}).timestamp is None
    assert SendResult(messageId=" 3eb0ab ").message_key == "3EB0AB"
    assert normalise_message_id(None) is None


@pytest.mark.parametrize("body", [
    {"sessionId": "s1", "status": "connected", "phone": "5511", "extra": 1},
    {"success": True, "data": {"sessionId": "s1", "status": "connected", "phone": "5511"}},
])
def test_session_record_bare_or_wrapped(body: dict[str, Any]) -> None:
    record = SessionRecord.from_body(body)
    assert (record.sessionId, record.status, record.phone) == ("s1", "connected", "5511")


@pytest.mark.parametrize("body", [
    [{"sessionId": "a"}, {"sessionId": "b"}],
    {"success": True, "data": [{"sessionId": "a"}, {"sessionId": "b"}]},
    {"success": True, "sessions": [{"sessionId": "a"}, {"sessionId": "b"}]},
    {"success": True, "data": {"sessions": [{"sessionId": "a"}, {"sessionId": "b"}]}},
])
def test_session_list_shapes(body: Any) -> None:
    assert [r.sessionId for r in session_list(body)] == ["a", "b"]


def test_session_list_refuses_other_shapes() -> None:
    with pytest.raises(ValueError):
        session_list({"data": "nope"})


@pytest.mark.parametrize("body", [
    None, [], "x", {}, {"data": 5}, {"data": {"limits": "lots"}},
    {"data": {"limits": {"messages": "many", "sms": -1, "voice": True}}},
    {"data": {"plan": 7, "period": ["day"], "limits": None, "used": 3}},
])
def test_limits_unknown_shapes_mean_no_limit_known(body: Any) -> None:
    limits = Limits.from_body(body)
    assert limits.remaining("messages") is None
    assert limits.remaining("sms") is None and limits.remaining("voice") is None


def test_limits_partial() -> None:
    limits = Limits.from_body({"sessionId": "s1", "data": {"limits": {"messages": 10},
                                                           "used": {"messages": 12.0}}})
    assert limits.sessionId == "s1" and limits.remaining() == 0 and limits.plan is None


def test_qr_code_png_and_reject_result() -> None:
    png = b"\x89PNG\r\n\x1a\n"
    qr = QrCode(qrCodeImage="data:image/png;base64," + base64.b64encode(png).decode())
    assert qr.png_bytes() == png and QrCode().png_bytes() is None
    failed = RejectCallResult.model_validate({"success": False, "error": "Failed to reject call",
                                              "sessionId": "s1"})
    assert failed.call_id is None and failed.error == "Failed to reject call"


def test_send_answer_bare_or_wrapped() -> None:
    from scheduler.service.responses import parse_send_result

    bare = parse_send_result(b'{"success":true,"messageId":"3EB0","timestamp":5,"status":"sent"}')
    assert (bare.messageId, bare.timestamp, bare.status) == ("3EB0", 5, "sent")
    wrapped = parse_send_result(b'{"success":true,"data":{"messageId":"3EB0","status":"sent"}}')
    assert (wrapped.success, wrapped.messageId) == (True, "3EB0")
    assert parse_send_result(b'{"success":true,"data":{"x":1}}').messageId is None
