"""Business catalogs and asynchronous commands of the sandbox (all shapes ours).

- A product is made up from ``(seed, business_jid, product_id)`` (also without a seed), so
  the same product always has the same name, price and links. A product id that starts with
  ``missing`` is not in the catalog (404 ``Product not found`` at once; a queued command
  ``failed`` with that error).
- A queued command draws, when it is queued, how long it stays ``queued``
  (``command_queued_s``), then ``running`` (``command_running_s``), and whether it ends
  ``failed`` (``command_fail_rate``, error ``Catalog temporarily unavailable``) or ``done``;
  its status is read from the sandbox clock, so it moves over time without a worker.
- The static records of asynchronous sends (``world.commands``, ``done`` at once) are served
  by the same ``GET /api/v1/commands/{commandId}``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from scheduler.sandbox.common import ApiError, iso_ms, seeded

if TYPE_CHECKING:
    from scheduler.sandbox.world_view import WorldView

MISSING_PREFIX = "missing"
_NAMES = ("Camiseta", "Caneca", "Mochila", "Tênis", "Boné", "Garrafa", "Agenda", "Fone")
_COLOURS = ("azul", "preta", "branca", "verde", "vermelha", "cinza")
_AVAILABILITY = ("in stock", "in stock", "in stock", "out of stock")
UNAVAILABLE = "Catalog temporarily unavailable"


def product_record(seed: int | None, business_jid: str, product_id: str) -> dict[str, Any]:
    """The product ``product_id`` of ``business_jid``'s catalog; 404 when it is missing."""
    if product_id.startswith(MISSING_PREFIX):
        raise ApiError(404, "Product not found")
    # Its own stream, seeded even without a seed: a product never changes between reads.
    rng = random.Random(f"{seed}:product:{business_jid}:{product_id}")
    name = f"{rng.choice(_NAMES)} {rng.choice(_COLOURS)}"
    cents = rng.randrange(990, 49_990, 100)
    slug = product_id.replace("/", "-")
    return {
        "id": product_id,
        "name": name,
        "description": f"{name}, produto {product_id} do catálogo",
        "price": cents / 100,
        "currency": "BRL",
        "availability": rng.choice(_AVAILABILITY),
        "retailerId": f"SKU-{rng.randrange(10**6):06d}",
        "url": f"https://shop.example.com/p/{slug}",
        "imageUrl": f"https://cdn.example.com/catalog/{slug}.jpg",
        "businessJid": business_jid,
    }


@dataclass
class QueuedCommand:
    """A command and the times it was drawn to take."""

    command_id: str
    kind: str
    created: datetime
    starts: datetime
    ends: datetime
    result: dict[str, Any] | None
    error: str | None

    def record(self, now: datetime) -> dict[str, Any]:
        """Where the command stands at ``now``."""
        body: dict[str, Any] = {"commandId": self.command_id, "type": self.kind,
                                "createdAt": iso_ms(self.created)}
        if now < self.starts:
            return {**body, "status": "queued"}
        if now < self.ends:
            return {**body, "status": "running", "startedAt": iso_ms(self.starts)}
        body.update(startedAt=iso_ms(self.starts), finishedAt=iso_ms(self.ends))
        if self.error is not None:
            return {**body, "status": "failed", "error": self.error}
        return {**body, "status": "done", "result": self.result}


class CatalogDesk:
    """Products and the commands that fetch them later."""

    def __init__(self, sandbox: WorldView) -> None:
        self._sandbox = sandbox
        self._draws = seeded(sandbox.config.seed, "commands")
        self.commands: dict[str, QueuedCommand] = {}
        #: Every product read, ``(business_jid, product_id)`` in order (tests count them).
        self.fetches: list[tuple[str, str]] = []

    def product(self, business_jid: str, product_id: str) -> dict[str, Any]:
        """The product, now (``async`` false)."""
        self.fetches.append((business_jid, product_id))
        return product_record(self._sandbox.config.seed, business_jid, product_id)

    def queue_product(self, business_jid: str, product_id: str) -> dict[str, Any]:
        """Queue the product's fetch (``async`` true): the acknowledgement with its id."""
        sandbox = self._sandbox
        cfg = sandbox.config
        now = sandbox.now()
        queued = self._draws.uniform(*cfg.command_queued_s)
        running = self._draws.uniform(*cfg.command_running_s)
        fails = self._draws.random() < cfg.command_fail_rate
        result: dict[str, Any] | None = None
        error: str | None = UNAVAILABLE if fails else None
        if not fails:
            try:
                result = self.product(business_jid, product_id)
            except ApiError as exc:
                error = exc.error
        starts = now + timedelta(seconds=queued)
        command = QueuedCommand(
            command_id=sandbox.ids.command(), kind="catalog.product.get", created=now,
            starts=starts, ends=starts + timedelta(seconds=running), result=result, error=error,
        )
        self.commands[command.command_id] = command
        return {"success": True, "commandId": command.command_id, "status": "queued"}

    def command(self, command_id: str) -> dict[str, Any]:
        """The record of a command (a queued fetch or an asynchronous send); 404 if unknown."""
        queued = self.commands.get(command_id)
        if queued is not None:
            return queued.record(self._sandbox.now())
        static = self._sandbox.world.commands.get(command_id)
        if static is None:
            raise ApiError(404, "Command not found")
        return static
