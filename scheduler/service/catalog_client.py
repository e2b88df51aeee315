"""Catalog and asynchronous-command calls of the client (``CatalogCalls``).

:class:`CatalogCalls` is a mixin of :class:`scheduler.service.client.ServiceClient`; it uses
the client's ``_call`` plumbing, so errors are mapped as everywhere else. A product is read
at once (``async`` false) or queued (``async`` true: a ``commandId``), and any queued command
is waited for with :meth:`CatalogCalls.wait_for_command`: polls spaced by a growing delay
(back-off) inside a bounded wait, on an injectable clock and sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler.core.timeutil import monotonic
from scheduler.service.bodies import build
from scheduler.service.catalog_models import (
    CATALOG_PRODUCT_PATH,
    CatalogProduct,
    CatalogProductBody,
    CommandAck,
    CommandRecord,
    command_path,
)
from scheduler.service.exceptions import InvalidRequest, RateLimited, ServiceError
from scheduler.service.requests import wire_body

Answer = TypeVar("Answer")
Sleep = Callable[[float], Awaitable[None]]


class CommandFailed(ServiceError):
    """A queued command ended ``failed``; ``record`` holds its ``error``."""

    def __init__(self, record: CommandRecord) -> None:
        super().__init__(f"command {record.commandId} failed: {record.error or 'no reason given'}")
        self.record = record


class CommandStillRunning(ServiceError):
    """A queued command was not finished within the wait; ``record`` is its last state."""

    retryable = True

    def __init__(self, record: CommandRecord | None, command_id: str, waited_s: float) -> None:
        where = record.status if record is not None else "not known"
        super().__init__(f"command {command_id} is still {where} after {waited_s:g} s; "
                         "ask again later")
        self.record = record
        self.command_id = command_id


class CatalogCalls:
    """Catalog product and command endpoints; mixed into ``ServiceClient``."""

    if TYPE_CHECKING:

        async def _call(
            self, method: str, path: str, reader: Callable[[Any], Answer], body: Any = None
        ) -> Answer: ...

    # ------------------------------------------------------------------ catalog

    async def _product_request(self, session_id: str, product_id: str, business_jid: str,
                               queued: bool, reader: Callable[[Any], Answer]) -> Answer:
        body = build(CatalogProductBody, sessionId=session_id, product_id=product_id,
                     business_jid=business_jid, **{"async": queued})
        return await self._call("POST", CATALOG_PRODUCT_PATH, reader, wire_body(body))

    async def get_product(self, session_id: str, product_id: str,
                          business_jid: str) -> CatalogProduct:
        """``POST /api/v1/catalog/product/get`` with ``async: false``: the product."""
        return await self._product_request(session_id, product_id, business_jid, False,
                                           CatalogProduct.from_body)

    async def queue_product(self, session_id: str, product_id: str,
                            business_jid: str) -> CommandAck:
        """``POST /api/v1/catalog/product/get`` with ``async: true``: its ``commandId``."""
        return await self._product_request(session_id, product_id, business_jid, True,
                                           CommandAck.from_body)

    async def fetch_product(
        self, session_id: str, product_id: str, business_jid: str, *, queued: bool = False,
        timeout_s: float = 60.0, on_status: Callable[[CommandRecord], None] | None = None,
        sleep: Sleep | None = None, clock: Callable[[], float] | None = None,
    ) -> CatalogProduct:
        """The product, read at once or (``queued``) through a command waited for.

        A failed command is :class:`CommandFailed`; one not finished within ``timeout_s``
        is :class:`CommandStillRunning`."""
        if not queued:
            return await self.get_product(session_id, product_id, business_jid)
        ack = await self.queue_product(session_id, product_id, business_jid)
        record = await self.wait_for_command(ack.commandId, timeout_s=timeout_s,
                                             on_status=on_status, sleep=sleep, clock=clock)
        if record.status == "failed":
            raise CommandFailed(record)
        try:
            return CatalogProduct.from_body(record.result)
        except ValueError:
            raise CommandFailed(record.model_copy(update={
                "status": "failed", "error": "the command's result is not a product"})) from None

    # ------------------------------------------------------------------ commands

    async def get_command(self, command_id: str) -> CommandRecord:
        """``GET /api/v1/commands/{commandId}`` (ours): where a queued command stands."""
        if not command_id:
            raise InvalidRequest("command_id must not be empty")
        return await self._call("GET", command_path(command_id), CommandRecord.from_body)

    async def wait_for_command(
        self, command_id: str, *, timeout_s: float = 60.0, first_delay_s: float = 0.25,
        max_delay_s: float = 5.0, backoff: float = 2.0,
        on_status: Callable[[CommandRecord], None] | None = None,
        sleep: Sleep | None = None, clock: Callable[[], float] | None = None,
    ) -> CommandRecord:
        """Poll a command until it is ``done`` or ``failed`` and return that record.

        The delay between polls starts at ``first_delay_s`` and grows by ``backoff`` up to
        ``max_delay_s``; a 429 waits its ``Retry-After``; a poll that gets no answer or a 5xx
        counts as a poll that said nothing. After ``timeout_s`` (on ``clock``, monotonic
        seconds) :class:`CommandStillRunning` is raised. ``on_status`` sees each record whose
        status differs from the one before; ``sleep`` and ``clock`` are injectable for tests.
        """
        if timeout_s < 0 or first_delay_s <= 0 or max_delay_s < first_delay_s or backoff < 1:
            raise InvalidRequest("need timeout_s >= 0, 0 < first_delay_s <= max_delay_s and "
                                 "backoff >= 1")
        pause: Sleep = sleep or asyncio.sleep
        now = clock or monotonic
        start = now()
        delay = first_delay_s
        last: CommandRecord | None = None
        while True:
            wait = delay
            try:
                record = await self.get_command(command_id)
            except ServiceError as exc:
                if not exc.retryable:
                    raise
                if isinstance(exc, RateLimited) and exc.retry_after is not None:
                    wait = max(wait, exc.retry_after)
            else:
                if on_status is not None and (last is None or record.status != last.status):
                    on_status(record)
                last = record
                if record.finished:
                    return record
            left = timeout_s - (now() - start)
            if left <= 0:
                raise CommandStillRunning(last, command_id, timeout_s)
            await pause(min(wait, left))
            delay = min(delay * backoff, max_delay_s)
