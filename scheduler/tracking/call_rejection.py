"""Reject incoming calls the receiver was told about (``call.offer``), after the commit.

``POST /api/v1/calls/reject`` gets ``callId`` and ``from`` exactly as the offer reported
them (``from`` may be an ``@lid`` JID); when ``reject_calls_reply`` is set and the caller
has a phone number, a text follows. The outcome replaces the event's ``result``. An offer
found unapplied after a restart is not rejected late: the call is long over.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from scheduler.core.errors import SchedulerError
from scheduler.service.client import ServiceClient
from scheduler.settings.load import Settings
from scheduler.tracking.apply import CallToReject

logger = logging.getLogger("scheduler.tracking")

#: A ``ServiceClient`` (a twin of it is used: same address and key, the receiver's own
#: connection pool), a factory called on the receiver's loop, or None (from the settings).
ClientSource = ServiceClient | Callable[[], ServiceClient] | None


class CallRejecter:
    """Runs rejections in the background on the receiver's loop; owns a client it made."""

    def __init__(self, settings: Settings, client: ClientSource,
                 note: Callable[[int, str], Awaitable[None]]) -> None:
        self._settings = settings
        self._source = client
        self._client: ServiceClient | None = None
        self._owned = False
        self._note = note
        self._tasks: set[asyncio.Task[None]] = set()

    def _get_client(self) -> ServiceClient | None:
        if self._client is None:
            source = self._source
            if isinstance(source, ServiceClient):
                # Its connection pool belongs to the loop that first used it (the
                # dispatcher's): the receiver's loop gets a twin with the same address and key.
                self._client, self._owned = source.for_another_loop(), True
            elif source is None:
                if self._settings.service_endpoint() is not None:
                    self._client = ServiceClient.from_settings(self._settings)
                    self._owned = True
            else:
                self._client, self._owned = source(), True
        return self._client

    def submit(self, calls: list[CallToReject]) -> None:
        """Start rejecting ``calls`` (returns at once)."""
        loop = asyncio.get_running_loop()
        for call in calls:
            task = loop.create_task(self._reject(call), name=f"reject-{call.call_id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _reject(self, call: CallToReject) -> None:
        try:
            client = self._get_client()
        except SchedulerError as exc:
            await self._note(call.event_id, f"reject failed: {exc}")
            return
        if client is None:
            await self._note(call.event_id, "reject skipped: no service client configured")
            return
        try:
            answer = await client.reject_call(call.session_id, call.call_id, call.from_jid)
        except SchedulerError as exc:
            logger.warning("rejecting call %s on %s failed: %s", call.call_id,
                           call.session_id, exc)
            await self._note(call.event_id, f"reject failed: {exc}"[:500])
            return
        result = "rejected" if getattr(answer, "success", True) is not False else \
            f"reject failed: {getattr(answer, 'error', 'refused')}"
        text = self._settings.reject_calls_reply
        if text and call.number and result == "rejected":
            try:
                await client.send_text(call.session_id, call.number, text)
                result += "; reply sent"
            except SchedulerError as exc:
                result += f"; reply failed: {exc}"
        await self._note(call.event_id, result[:500])

    async def aclose(self) -> None:
        """Wait for rejections under way, then close a client this object made."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._owned and self._client is not None:
            await self._client.aclose()
