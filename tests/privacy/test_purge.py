"""Retention: ``campaign purge`` removes rendered bodies and raw event payloads older than
``[privacy]`` says, and the run's report keeps its numbers; ``--dry-run`` counts the same
rows and removes nothing; ``serve``'s daily purge runs once a day by its clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from scheduler.core.timeutil import utcnow
from scheduler.ledger.db import open_ledger
from scheduler.privacy.retention import DailyPurge, purge
from scheduler.settings.privacy import PrivacySettings
from tests.app.support import clean_env
from tests.incli import in_process
from tests.privacy.support import write_campaign
from tests.privacy.test_person_forget import _summary


def _kept(url: str) -> dict[str, Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {
                "bodies": conn.execute(text(
                    "SELECT count(*) FROM deliveries WHERE payload <> '{}'")).scalar_one(),
                "payloads": conn.execute(text(
                    "SELECT count(*) FROM events WHERE payload <> '{}'")).scalar_one(),
                "rows": conn.execute(text(
                    "SELECT state, count(*) FROM deliveries GROUP BY state ORDER BY state")
                ).all(),
                "events": conn.execute(text("SELECT count(*) FROM events")).scalar_one(),
            }
    finally:
        engine.dispose()


def test_purge_removes_old_bodies_and_payloads_and_keeps_the_report(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    service = make_sandbox()
    service.create_session("s1")
    root = tmp_path / "shop"
    campaign = write_campaign(root, "old")
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="1", CAMPAIGN_DATABASE_URL=ledger_url)
    assert in_process(env, "run", str(campaign), cwd=root).returncode == 0
    totals = _summary(root, 1, env)
    before = _kept(ledger_url)
    assert before["bodies"] == 3 and before["payloads"] > 0

    # today nothing is old enough: said per table, nothing removed
    out = in_process(env, "purge", "--dry-run", cwd=root)
    assert out.returncode == 0, out.stderr
    assert "deliveries: would remove 0 rendered bodies older than" in out.stdout
    assert "events: would remove 0 raw event payloads older than" in out.stdout

    engine = open_ledger(ledger_url)
    try:
        settings = PrivacySettings(keep_bodies="90d", keep_events="180d")
        in_100_days = utcnow() + timedelta(days=100)
        dry = purge(engine, settings, in_100_days, dry_run=True)
        assert dry.counts == {"deliveries": 3, "events": 0}
        assert _kept(ledger_url) == before
        done = purge(engine, settings, in_100_days)
        assert done.counts == dry.counts
        assert _kept(ledger_url) == {**before, "bodies": 0}
        done = purge(engine, settings, utcnow() + timedelta(days=200))
        assert done.counts == {"deliveries": 0, "events": before["payloads"]}
        after = _kept(ledger_url)
        assert after == {**before, "bodies": 0, "payloads": 0}
    finally:
        engine.dispose()
    assert _summary(root, 1, env) == totals


def test_serve_purges_once_a_day_by_its_clock(ledger_url: str) -> None:
    now = [datetime(2026, 11, 29, 3, 0, tzinfo=utcnow().tzinfo)]
    engine = open_ledger(ledger_url)
    try:
        daily = DailyPurge(engine, PrivacySettings(), lambda: now[0])
        assert daily.run_if_due() is not None  # at start
        now[0] += timedelta(hours=23)
        assert daily.run_if_due() is None
        now[0] += timedelta(hours=1)
        done = daily.run_if_due()
        assert done is not None and done.bodies_before == now[0] - timedelta(days=90)
        assert done.events_before == now[0] - timedelta(days=180)
    finally:
        engine.dispose()


def test_keep_forever_and_a_bad_duration() -> None:
    forever = PrivacySettings(keep_bodies="0", keep_events="0")
    assert forever.bodies_for() is None and forever.events_for() is None
    try:
        PrivacySettings(keep_bodies="ninety days")
    except ValueError as exc:
        assert "keep_bodies" in str(exc) and "expected e.g." in str(exc)
    else:
        raise AssertionError("a bad duration was accepted")
