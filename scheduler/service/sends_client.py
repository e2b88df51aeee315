"""Typed sends of the client (``SendCalls``): ``send`` of any send body, and ``send_text``.

:class:`SendCalls` is a mixin of :class:`scheduler.service.client.ServiceClient`: each method
validates a body model of :mod:`scheduler.service.requests` (an :class:`InvalidRequest` before
anything is sent), then posts it through the client's ``send_prepared`` hot path. Unset
optionals are left out of the wire body; ``mentionAll``, ``contextInfo`` and ``async_`` go in
``**extra``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler.service import requests as rq
from scheduler.service.bodies import build
from scheduler.service.exceptions import InvalidRequest
from scheduler.service.responses import SendResult

_PATH_BY_MODEL: dict[type[rq.SendBody], str] = {k.model: k.path for k in rq.SEND_KINDS.values()}


class SendCalls:
    """``messages/send/*`` and ``interactive/send/*`` by model; mixed into ``ServiceClient``."""

    if TYPE_CHECKING:

        async def send_prepared(self, path: str, body: dict[str, Any]) -> SendResult: ...

    async def send(self, body: rq.SendBody) -> SendResult:
        """Send any send body model to its endpoint (the path comes from ``SEND_KINDS``)."""
        path = _PATH_BY_MODEL.get(type(body))
        if path is None:
            raise InvalidRequest(f"{type(body).__name__} is not a send body of SEND_KINDS")
        return await self.send_prepared(path, rq.wire_body(body))

    async def send_text(self, session_id: str, to: str, text: str, **extra: Any) -> SendResult:
        """``messages/send/text``."""
        return await self.send(build(rq.TextBody, sessionId=session_id, to=to, text=text,
                                     **extra))
