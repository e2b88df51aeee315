"""What the API's tests build: a project on the pass's ledger, its tokens, and the real API
app over a real uvicorn server on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from scheduler.api.app import create_api
from scheduler.commands.dashboard import check_campaign
from scheduler.core.httpserver import BackgroundServer
from scheduler.core.timeutil import utcnow
from scheduler.ledger.api_tokens import create_token
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings, load_settings


class Ticks:
    """A monotonic clock the test moves (for the failed-attempt limit)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Api:
    """A served API: its client (no token), the tokens by role, and the app."""

    client: httpx.Client
    tokens: dict[str, str]
    app: Any
    ticks: Ticks

    def as_(self, role: str | None) -> dict[str, str]:
        """The headers of a request with ``role``'s token (None: none)."""
        return {} if role is None else {"Authorization": f"Bearer {self.tokens[role]}"}


def project_settings(root: Path, ledger_url: str, config: str = "") -> Settings:
    """The settings of a project at ``root`` (its config.toml holds ``config``)."""
    (root / "config.toml").write_text(config, encoding="utf-8")
    return load_settings(root / "config.toml", project_dir=root, database_url=ledger_url)


@contextmanager
def served(ledger: Ledger, settings: Settings) -> Iterator[Api]:
    """The API over ``ledger`` on a free loopback port, with a viewer's and an operator's
    token."""
    tokens = {role: create_token(ledger.engine, f"test-{role}", role, utcnow())
              for role in ("viewer", "operator")}
    ticks = Ticks()
    app = create_api(settings, ledger, monotonic_s=ticks, check=check_campaign)
    with BackgroundServer(app) as server, httpx.Client(base_url=server.base_url,
                                                       timeout=30) as client:
        yield Api(client, tokens, app, ticks)
