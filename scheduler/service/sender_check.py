"""Are a campaign's senders ready? Every sender session must exist and be ``connected``.

With a real service, a sender that does not exist or is not connected would otherwise show
up only mid-run as ``HTTP 404 Session not found`` or a refused send. :func:`check_senders`
asks the service once (``GET /api/v1/sessions``, the documented listing) and returns one
:class:`SenderProblem` per sender that cannot send, each with the command that fixes it;
:func:`raise_for_problems` turns them into one :class:`SendersNotReady` error naming all of
them at once. :func:`verify_senders` does both for a configured service, from synchronous
code such as ``campaign run`` before it plans.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from scheduler.core.errors import SchedulerError
from scheduler.service.client import ServiceClient
from scheduler.service.exceptions import ServiceError
from scheduler.service.responses import SessionRecord
from scheduler.service.session_admin import explain, shown_url

#: The one status in which a session can send.
READY_STATUS = "connected"
#: Statuses of a session waiting for the phone to read its QR code (or pairing code).
WAITING_STATUSES = frozenset({"connecting", "qr_ready", "pair_code_ready"})
#: Statuses of a session that was connected and lost its link to the phone.
DROPPED_STATUSES = frozenset({"disconnected", "logged_out"})
#: ``SenderProblem.problem`` of a session the account does not have.
MISSING = "missing"


class SessionLister(Protocol):
    """What :func:`check_senders` needs of a client: the account's sessions."""

    async def list_sessions(self) -> list[SessionRecord]:
        """Every session the key can see."""
        ...


class SenderProblem(BaseModel):
    """Why one sender cannot send, and the command that fixes it."""

    model_config = ConfigDict(frozen=True)

    sender: str
    #: ``"missing"``, or the session's status (``connecting``, ``disconnected``, ...).
    problem: str
    #: What is wrong, as a sentence fragment ("does not exist on this account").
    reason: str
    #: What to do, naming the ``campaign sessions`` command.
    fix: str

    def sentence(self) -> str:
        """``<sender> <reason>: <fix>``, one line."""
        return f"{self.sender} {self.reason}: {self.fix}"


def qr_hint(session_id: str) -> str:
    """The fix of a session waiting for its QR code to be scanned."""
    return f"scan the QR from `campaign sessions qr {session_id}` with the sender's phone"


def problem_for(session_id: str, record: SessionRecord | None, *,
                calls: bool = False) -> SenderProblem | None:
    """The problem of one sender given its record (``None``: the account has no such session).

    A session is ready only when its status is ``connected``; a missing status is a problem
    too, never assumed to be fine. With ``calls`` (a campaign placing WhatsApp calls), an
    official provider (``cloud_api``) connection is one as well: calls are not available
    on it.
    """
    if calls and record is not None and "cloud_api" in (record.type, record.provider):
        return SenderProblem(
            sender=session_id, problem="cloud_api",
            reason="is an official provider (cloud_api) connection, where WhatsApp calls "
                   "are not available",
            fix="place the calls from a session connected by QR code (type unofficial): "
                "name such sessions in the campaign's senders")
    if record is None:
        return SenderProblem(
            sender=session_id, problem=MISSING,
            reason="does not exist on this account (or this API key may not see it)",
            fix=f"create it with `campaign sessions create {session_id}`, then "
                f"{qr_hint(session_id)}",
        )
    status = (record.status or "").strip()
    if status == READY_STATUS:
        return None
    if status in WAITING_STATUSES:
        reason = f"is not connected yet (status {status}, waiting for the phone)"
        fix = qr_hint(session_id)
        if status == "pair_code_ready":
            fix = f"enter the pairing code on the sender's phone, or {fix}"
    elif status in DROPPED_STATUSES:
        reason = f"is {status.replace('_', ' ')} (status {status})"
        fix = f"reconnect it: {qr_hint(session_id)}"
    else:
        shown = status or "not reported"
        reason = f"is not connected (status {shown})"
        fix = (f"check it with `campaign sessions status {session_id}`; if it needs the phone, "
               f"{qr_hint(session_id)}")
    return SenderProblem(sender=session_id, problem=status or "unknown", reason=reason, fix=fix)


def _unique(sender_ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(sender_ids))


async def check_senders(client: SessionLister, sender_ids: Iterable[str], *,
                        calls: bool = False) -> list[SenderProblem]:
    """One problem per sender that is missing or not connected, in the senders' order.

    One request (``GET /api/v1/sessions``); a service error (401, unreachable, ...) is raised
    as the client's :class:`~scheduler.service.exceptions.ServiceError`.
    """
    records = {record.sessionId: record for record in await client.list_sessions()}
    problems = (problem_for(sender, records.get(sender), calls=calls)
                for sender in _unique(sender_ids))
    return [problem for problem in problems if problem is not None]


class SendersNotReady(SchedulerError):
    """Some senders of a campaign are missing or not connected; ``problems`` lists them."""

    def __init__(self, problems: list[SenderProblem], *, service: str = "the service",
                 total: int | None = None) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        total = count if total is None else max(total, count)
        of = f" of {total}" if total != count else ""
        noun = "sender" if total == 1 else "senders"
        verb = "is" if count == 1 else "are"
        details = "; ".join(problem.sentence() for problem in self.problems)
        super().__init__(f"{count}{of} {noun} {verb} not ready on {service}: {details}")


def raise_for_problems(problems: list[SenderProblem], *, service: str = "the service",
                       total: int | None = None) -> None:
    """Raise :class:`SendersNotReady` naming every problem at once; nothing when empty."""
    if problems:
        raise SendersNotReady(problems, service=service, total=total)


async def require_senders(client: SessionLister, sender_ids: Iterable[str], *,
                          base_url: str, calls: bool = False) -> None:
    """Raise one clear error unless every sender exists and is connected.

    Service errors become one-line :class:`~scheduler.core.errors.SchedulerError` messages that
    say what to do (:func:`~scheduler.service.session_admin.explain`).
    """
    senders = _unique(sender_ids)
    try:
        problems = await check_senders(client, senders, calls=calls)
    except ServiceError as exc:
        raise explain(exc, base_url=base_url, doing="checking the campaign's senders") from None
    raise_for_problems(problems, service=shown_url(base_url), total=len(senders))


def verify_senders(base_url: str, api_key: str, sender_ids: Iterable[str], *,
                   timeout_s: float = 15.0, calls: bool = False, **client_options: Any) -> None:
    """:func:`require_senders` against a configured service, from synchronous code.

    For ``campaign run`` before it plans; not for the embedded sandbox (it creates and
    connects its own sessions).
    """
    senders = _unique(sender_ids)

    async def check() -> None:
        async with ServiceClient(base_url, api_key, timeout_s=timeout_s, concurrency=2,
                                 **client_options) as client:
            await require_senders(client, senders, base_url=base_url, calls=calls)

    asyncio.run(check())
