"""Dispatcher test harness: a real sandbox on loopback, a real ledger, a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from scheduler.httpserver import BackgroundServer
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.sandbox import SandboxConfig, create_app
from scheduler.service.client import ServiceClient

#: Monday 23 Nov 2026, 12:00 UTC (09:00 in São Paulo).
T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


class FakeClock:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Advance simulated time and let other tasks run."""
        self.now += timedelta(seconds=max(seconds, 0.0))
        await asyncio.sleep(0)


@dataclass
class Service:
    """A running sandbox: URL, key, the in-memory world, and inspection helpers."""

    base_url: str
    api_key: str
    app: Any

    def sends(self) -> list[dict[str, Any]]:
        """Every send the sandbox accepted, in order."""
        data = httpx.get(f"{self.base_url}/sandbox/sends").json()
        return data["sends"] if isinstance(data, dict) else data

    def post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """POST to an inspection endpoint."""
        return httpx.post(f"{self.base_url}{path}", json=body or {})

    def client(self, **kw: Any) -> ServiceClient:
        """A service client for this sandbox."""
        return ServiceClient(self.base_url, self.api_key, **kw)

    async def connect(self, *sessions: str, webhook_url: str | None = None) -> None:
        """Create and scan sessions."""
        async with self.client() as client:
            for name in sessions:
                await client.create_session(name, webhook_url=webhook_url)
                self.post(f"/sandbox/sessions/{name}/scan").raise_for_status()


@pytest.fixture
def fake_clock() -> FakeClock:
    """A simulated clock starting at T0."""
    return FakeClock()


@pytest.fixture
def service_factory() -> Iterator[Any]:
    """Start sandboxes with a given config; all are stopped at the end of the test."""
    servers: list[BackgroundServer] = []

    def start(**config: Any) -> Service:
        config.setdefault("seed", 7)
        config.setdefault("reply_rate", 0.0)
        config.setdefault("delivered_rate", 0.0)
        app = create_app(SandboxConfig(**config))
        server = BackgroundServer(app).start()
        servers.append(server)
        return Service(server.base_url, app.state.sandbox.config.api_key.get_secret_value(),
                       app)

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def dledger(ledger_url: str, fake_clock: FakeClock) -> Iterator[Ledger]:
    """A real ledger (SQLite file, or PostgreSQL on that pass) on the fake clock."""
    engine = open_ledger(ledger_url)
    yield Ledger(engine, clock=fake_clock)
    engine.dispose()


def make_run(ledger: Ledger, recipients: int, *, steps: int = 1, senders: tuple[str, ...] = ("s1",),
             definition: dict[str, Any] | None = None, start: datetime = T0,
             name: str = "test") -> int:
    """A stored run of ``recipients`` × ``steps`` text deliveries."""
    snapshot = {"name": name, "senders": list(senders), "pace": {"rate": "10/s"},
                "schedule": {"timezone": "America/Sao_Paulo"},
                "steps": [{"type": "text"} for _ in range(steps)]}
    snapshot.update(definition or {})
    run_id = ledger.create_run(campaign_name=name, channel="whatsapp", definition_path="t.toml",
                               definition=snapshot, delivery_mode=snapshot.get("delivery",
                                                                              "at-most-once"),
                               timezone="America/Sao_Paulo")
    rows = [
        {"row": i + 1, "to": f"55119{i:08d}", "step": s, "kind": "text",
         "path": "/api/v1/messages/send/text", "payload": {"text": f"Olá {i}, passo {s}"},
         "variables": {}, "region": "BR", "state": "planned", "reason": None}
        for i in range(recipients) for s in range(steps)
    ]
    ledger.store_plan(run_id, [rows], start_at=start)
    return run_id


def write_project(root: Path, recipients: int, *, rate: str = "20/s",
                  senders: tuple[str, ...] = ("s1",), name: str = "lote") -> Path:
    """A project folder (campaigns/, data/, templates/) with one text campaign."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    lines = ["nome,telefone"] + [f"Pessoa {i},1198765{i:04d}" for i in range(recipients)]
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sender_list = ", ".join(f'"{s}"' for s in senders)
    path = root / "campaigns" / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsenders = [{sender_list}]\n'
        f'[recipients]\nfile = "data/{name}.csv"\nphone_column = "telefone"\n'
        f'[schedule]\ntimezone = "UTC"\n[pace]\nrate = "{rate}"\n'
        '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n',
        encoding="utf-8",
    )
    return path
