"""The account webhook's secret and URL: configured, or made once and kept for the project."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from scheduler.ledger.runs import Ledger
from scheduler.settings.load import Settings
from scheduler.tracking import account_webhook_url
from scheduler.tracking.identity import IDENTITY_FILE, account_secret
from scheduler.wiring import ensure_account_webhook
from tests.factories import start_service
from tests.tracking.support import ReceiverHandle, sms


def project_settings(root: Path, **values: object) -> Settings:
    return Settings(project_dir=root, base_url=None, api_key=None, **values)  # type: ignore[arg-type]


def test_the_configured_secret_wins(tmp_path: Path) -> None:
    config = project_settings(tmp_path, webhook_secret="from-settings")
    assert account_secret(config, create=True) == "from-settings"
    assert not (tmp_path / "state" / IDENTITY_FILE).exists()


def test_a_secret_is_made_once_and_kept_readable_by_its_owner_only(tmp_path: Path) -> None:
    config = project_settings(tmp_path)
    assert account_secret(config) is None  # nothing made until a run registers the webhook
    made = account_secret(config, create=True)
    assert made and len(made) >= 32
    assert account_secret(project_settings(tmp_path)) == made  # the next process reads it
    mode = stat.S_IMODE(os.stat(tmp_path / "state" / IDENTITY_FILE).st_mode)
    assert mode == 0o600


@pytest.mark.parametrize(("webhook_url", "expected"), [
    ("https://hooks.example.com/webhooks/session", "https://hooks.example.com/webhooks/account"),
    ("https://hooks.example.com/base/webhooks/session/?x=1",
     "https://hooks.example.com/base/webhooks/account"),
    ("https://hooks.example.com/in", "https://hooks.example.com/webhooks/account"),
])
def test_the_account_url_sits_beside_the_session_route(webhook_url: str, expected: str) -> None:
    config = Settings(base_url=None, api_key=None, webhook_url=webhook_url)
    assert account_webhook_url(config) == expected


def test_a_receiver_started_before_the_secret_was_made_accepts_events_signed_with_it(
        tmp_path: Path, tledger: Ledger, make_receiver: Callable[..., ReceiverHandle]) -> None:
    receiver = make_receiver(tledger, webhook_secret=None, project_dir=tmp_path)
    event = sms("sms.delivered", "unknown-id", "5511999990001")
    assert receiver.post_account(event, secret="anything").status_code == 401
    made = account_secret(receiver.settings, create=True)
    assert made is not None
    assert receiver.post_account(event, secret=made).status_code == 200
    assert receiver.post_account(event, secret="wrong").status_code == 401


def test_a_run_registers_the_account_webhook_at_the_service(tmp_path: Path) -> None:
    config = project_settings(tmp_path)
    service, server = start_service()
    try:
        async def register() -> None:
            async with service.client() as client:
                await ensure_account_webhook(client, config, "sms",
                                             "http://127.0.0.1:9/webhooks/account")
                return None

        asyncio.run(register())
        listed = httpx.get(f"{service.base_url}/api/v1/account/webhooks",
                           headers={"Authorization": service.api_key}).json()["webhooks"]
    finally:
        server.stop()
    sms_hook = next(w for w in listed if w["channel"] == "sms")
    assert sms_hook["url"] == "http://127.0.0.1:9/webhooks/account"
    assert sms_hook["hasSecret"] is True and sms_hook["enabled"] is True
    assert "secret" not in sms_hook
    assert account_secret(config) is not None  # made and kept for the receiver
