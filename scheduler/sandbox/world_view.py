"""What the sandbox's desks use of the sandbox: :class:`WorldView`, a protocol.

The desks (recipients, incoming and outgoing calls, the account with its SMS and voice,
session status events, labels, the catalog) are built by
:class:`scheduler.sandbox.world.Sandbox` and handed the sandbox itself; they name its type
through this protocol, so that no desk imports the module that imports it. This module
imports no desk.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from scheduler.sandbox.common import IdFactory
from scheduler.sandbox.config import SandboxConfig
from scheduler.sandbox.payloads import Context
from scheduler.sandbox.state import Session, World
from scheduler.sandbox.webhooks import WebhookDispatcher
from scheduler.service.requests import SendBody, SendKind


class WorldView(Protocol):
    """The sandbox as its desks see it: settings, clock, state, ids, sessions, events."""

    @property
    def config(self) -> SandboxConfig:
        """The run-time settings (replaced whole when the knobs change)."""

    @property
    def world(self) -> World:
        """Sessions, the sends log, messages, media and commands."""

    @property
    def ids(self) -> IdFactory:
        """Message, trace, call and command ids."""

    @property
    def webhooks(self) -> WebhookDispatcher:
        """Posts events and runs delayed work."""

    @property
    def base_url(self) -> str | None:
        """Where clients reach the sandbox, once a send has said so."""

    def now(self) -> datetime:
        """The sandbox clock."""

    def now_ms(self) -> int:
        """The sandbox clock in epoch milliseconds."""

    def session(self, session_id: str) -> Session:
        """The session, or 404 ``Session not found``."""

    def logout(self, session_id: str) -> Session:
        """The phone logged the session out: ``logged_out``, the record ``disconnected``."""

    def sending_session(self, session_id: str) -> Session:
        """The session a send goes out on: 404 when unknown, 409 when not connected."""

    def check_limit(self, session: Session, counter: str = "messages") -> None:
        """429 with ``Retry-After`` when the session's daily ``counter`` is used up."""

    def accept_send(
        self, kind: SendKind, body: SendBody, received: dict[str, Any], base_url: str
    ) -> dict[str, Any]:
        """Record an accepted send, emit its events, wake the recipient; the answer."""

    def inbound_context(self, session_id: str, number: str) -> Context:
        """Payload context of a message the person at ``number`` sends to the session."""

    def emit(
        self, session: Session, event: str, data: dict[str, Any], at: datetime | None = None
    ) -> None:
        """Post one event to the session's webhook (if it has one for ``event``)."""

    def emit_later(
        self, delay_s: float, session_id: str, event: str, build: Callable[[], dict[str, Any]]
    ) -> None:
        """Emit ``build()`` after ``delay_s``; skipped if the session is gone by then."""
