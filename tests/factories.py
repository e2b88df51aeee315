"""What every test package builds: projects on disk, ledgers, stored runs, a fake clock, a
sandbox served in this process.

Test modules import these directly (``from tests.factories import make_run``); fixtures
built on them live in ``tests/conftest.py`` (``clock``, ``ledger``) and in the folders'
``conftest.py``. No test imports a conftest.

- :data:`T0`, :class:`FakeClock`: the simulated time most tests run at;
- :func:`open_test_ledger`: a migrated ledger on a URL of the pass (``ledger_url``);
- :func:`make_run`, :func:`plan_rows`, :func:`number`: stored runs of text deliveries;
- :func:`write_project`: a project folder with one text campaign, for the CLI;
  :class:`Project`: a project root whose files a test writes one by one;
- :class:`Service`, :func:`start_service`: a sandbox on loopback and its inspection calls.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from scheduler.core.httpserver import BackgroundServer
from scheduler.core.timeutil import SimulatedClock
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from scheduler.sandbox import SandboxConfig, create_app
from scheduler.sandbox.testing import write_text_project
from scheduler.service.client import ServiceClient

#: The repository's root (its example ``campaigns/``, ``templates/`` and ``data/``).
REPO = Path(__file__).resolve().parents[1]

#: Monday 23 Nov 2026, 12:00 UTC (09:00 in São Paulo).
T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)

# --------------------------------------------------------------------------- time


class FakeClock(SimulatedClock):
    """The product's simulated clock, starting at ``T0`` unless told otherwise."""

    def __init__(self, start: datetime = T0) -> None:
        super().__init__(start)


# --------------------------------------------------------------------------- ledgers and runs


def command_project(root: Path, monkeypatch: pytest.MonkeyPatch, ledger_url: str) -> None:
    """Make ``root`` the working folder of a project (empty config.toml) whose commands use
    the ledger at ``ledger_url``, no service and 80 columns, whatever the caller's env."""
    (root / "config.toml").write_text("")
    monkeypatch.chdir(root)
    for name in ("CAMPAIGN_BASE_URL", "CAMPAIGN_API_KEY", "CAMPAIGN_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", ledger_url)
    monkeypatch.setenv("COLUMNS", "80")


@contextmanager
def open_test_ledger(url: str, clock: Callable[[], datetime] | None = None) -> Iterator[Ledger]:
    """A migrated :class:`Ledger` on ``url`` (a ``ledger_url`` of the pass), on ``clock``
    (default: the real clock); its engine is disposed on exit."""
    engine = open_ledger(url)
    try:
        yield Ledger(engine) if clock is None else Ledger(engine, clock=clock)
    finally:
        engine.dispose()


def number(i: int) -> str:
    """The recipient of row ``i`` of :func:`make_run` and :func:`plan_rows`."""
    return f"55119{i:08d}"


def plan_rows(n: int, *, steps: int = 1, skip: set[int] | None = None) -> list[dict[str, Any]]:
    """Plan rows for ``n`` recipients with ``steps`` steps each (``skip``: duplicates)."""
    rows = []
    for i in range(n):
        for step in range(steps):
            skipped = skip is not None and i in skip
            rows.append(
                {
                    "row": i + 1,
                    "to": number(i),
                    "step": step,
                    "kind": "text",
                    "path": "/api/v1/messages/send/text",
                    "payload": {"text": f"olá {i}"},
                    "variables": {"nome": f"Ana {i}"},
                    "region": "BR",
                    "state": "skipped" if skipped else "planned",
                    "reason": "duplicate" if skipped else None,
                }
            )
    return rows


def make_run(
    ledger: Ledger,
    recipients: int,
    *,
    steps: int = 1,
    senders: tuple[str, ...] = ("s1",),
    definition: dict[str, Any] | None = None,
    start: datetime = T0,
    name: str = "test",
) -> int:
    """A stored run of ``recipients`` × ``steps`` text deliveries; its id."""
    snapshot = {
        "name": name,
        "senders": list(senders),
        "pace": {"rate": "10/s"},
        "schedule": {"timezone": "America/Sao_Paulo"},
        "steps": [{"type": "text"} for _ in range(steps)],
    }
    snapshot.update(definition or {})
    run_id = ledger.create_run(
        campaign_name=name,
        channel="whatsapp",
        definition_path="t.toml",
        definition=snapshot,
        delivery_mode=snapshot.get("delivery", "at-most-once"),
        timezone="America/Sao_Paulo",
    )
    rows = [
        {
            "row": i + 1,
            "to": number(i),
            "step": s,
            "kind": "text",
            "path": "/api/v1/messages/send/text",
            "payload": {"text": f"Olá {i}, passo {s}"},
            "variables": {},
            "region": "BR",
            "state": "planned",
            "reason": None,
        }
        for i in range(recipients)
        for s in range(steps)
    ]
    ledger.store_plan(run_id, [rows], start_at=start)
    return run_id


# --------------------------------------------------------------------------- projects


def write_project(
    root: Path,
    recipients: int,
    *,
    rate: str = "20/s",
    senders: tuple[str, ...] = ("s1",),
    name: str = "lote",
) -> Path:
    """A project folder (campaigns/, data/, templates/) with one text campaign; its file."""
    return write_text_project(root, recipients, rate=rate, senders=senders, name=name,
                              text="Oi {{ nome }}")


#: The recipients of :meth:`Project.basic`: two valid numbers, an invalid one, a duplicate.
BASIC_CSV = (
    "nome;telefone;cidade;valor\n"
    "Maria da Silva;(11) 98765-4321;São Paulo;1234.5\n"
    "JOÃO SOUZA;+55 21 99876-5432;Rio de Janeiro;10\n"
    "Ana Lima;1234;Recife;5\n"
    "Maria Dup;5511987654321;São Paulo;7\n"
)


@dataclass
class Project:
    """A temporary project root with helpers to write its files."""

    root: Path

    @classmethod
    def empty(cls, root: Path) -> Project:
        """A project at ``root`` with its empty campaigns/, templates/ and data/ folders."""
        for folder in ("campaigns", "templates", "data"):
            (root / folder).mkdir()
        return cls(root)

    def write(self, relative: str, text: str, encoding: str = "utf-8") -> Path:
        """Write a text file under the root (dedented), creating folders."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(textwrap.dedent(text).encode(encoding))
        return path

    def write_bytes(self, relative: str, data: bytes) -> Path:
        """Write raw bytes under the root."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def campaign(self, body: str, name: str = "c.toml") -> Path:
        """Write ``campaigns/<name>``."""
        return self.write(f"campaigns/{name}", body)

    def basic(
        self,
        steps: str = '[[steps]]\ntype = "text"\ntext = "Olá {{ nome }}"\n',
        extra: str = "",
        csv: str = BASIC_CSV,
    ) -> Path:
        """A minimal valid WhatsApp campaign over ``data/r.csv`` with the given steps."""
        self.write("data/r.csv", csv)
        head = (
            'name = "t"\nsenders = ["s1", "s2"]\n' + extra + "\n"
            '[recipients]\nfile = "data/r.csv"\nphone_column = "telefone"\n\n'
        )
        return self.campaign(head + textwrap.dedent(steps))


# --------------------------------------------------------------------------- the sandbox


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


def start_service(**config: Any) -> tuple[Service, BackgroundServer]:
    """Serve a sandbox (seed 7, recipients that never answer, unless ``config`` says
    otherwise) on a free loopback port; the caller stops the server."""
    config.setdefault("seed", 7)
    config.setdefault("reply_rate", 0.0)
    config.setdefault("delivered_rate", 0.0)
    config.setdefault("session_status_events", False)  # tests that want them say so
    app = create_app(SandboxConfig(**config))
    server = BackgroundServer(app).start()
    service = Service(server.base_url, app.state.sandbox.config.api_key.get_secret_value(), app)
    return service, server
