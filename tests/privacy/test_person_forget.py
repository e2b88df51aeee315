"""``campaign person export`` and ``person forget`` on a real run against the sandbox, on
SQLite and PostgreSQL: before, the export holds every value a scan of every text and JSON
column finds about the person; after, the scan finds nothing, the old run's report opens
with the same totals, and a new campaign holding the number skips it with the erasure
reason."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from openpyxl import load_workbook
from sqlalchemy import create_engine, text

from tests.app.support import clean_env, text_sends
from tests.incli import in_process
from tests.privacy.support import (
    DIGITS,
    NAME,
    NEEDLES,
    OTHERS,
    PHONE,
    scan,
    strings_in,
    write_campaign,
)


def _summary(root: Path, run: int, env: dict[str, str]) -> dict[str, Any]:
    """The run's report's Summary sheet (label → value), numbers only."""
    for old in (root / "reports").glob("*.xlsx"):
        old.unlink()
    out = in_process(env, "report", str(run), cwd=root)
    assert out.returncode == 0, out.stderr
    book = load_workbook(next((root / "reports").glob("*.xlsx")))
    return {row[0]: row[1] for row in book["Summary"].iter_rows(values_only=True)
            if row[0] and isinstance(row[1], int | float)}


def _rows(url: str, sql: str) -> list[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)).all())
    finally:
        engine.dispose()


def test_forget_erases_the_person_everywhere_and_keeps_the_totals(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    service = make_sandbox(whatsapp_replies_by_number={
        DIGITS: [{"text": f"Sou {NAME}, de Itaquaquecetuba"}]})
    service.create_session("s1")
    root = tmp_path / "shop"
    campaign = write_campaign(root, "promo")
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="1", CAMPAIGN_DATABASE_URL=ledger_url)
    out = in_process(env, "run", str(campaign), cwd=root)
    assert out.returncode == 0, out.stderr
    assert len(text_sends(service.sends())) == 3
    before = scan(ledger_url)
    assert {t for t, *_ in before} >= {"deliveries", "events"}, before
    totals = _summary(root, 1, env)
    assert totals

    # export: every value the scan finds is in the JSON
    exported = in_process(env, "person", "export", "+55 (11) 98765-4321", "--out",
                          str(tmp_path / "p.json"), cwd=root)
    assert exported.returncode == 0, exported.stderr
    data = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert data["number"] == DIGITS and [r["id"] for r in data["runs"]] == [1]
    held = strings_in(data["tables"])
    missing = [(t, c, v) for t, c, _n, v in before if v not in held]
    assert not missing, missing

    forgot = in_process(env, "person", "forget", PHONE, "--reason", "LGPD art. 18",
                        "--yes", cwd=root)
    assert forgot.returncode == 0, forgot.stderr
    after = scan(ledger_url)
    assert after == [], after
    key = root / "state" / "erasure.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert _summary(root, 1, env) == totals
    audit = _rows(ledger_url, "SELECT action, who, via, reason, subject FROM privacy_audit "
                              "ORDER BY id")
    assert [(a, v, r) for a, _w, v, r, _s in audit] == [
        ("export", "cli", None), ("forget", "cli", "LGPD art. 18")]
    assert all(w and s for _a, w, _v, _r, s in audit)

    # a new campaign holding the number (another format) skips it with the reason
    again = write_campaign(root, "later", rows=[(NAME, "+55 11 98765-4321"), *OTHERS])
    sent_before = len(text_sends(service.sends()))
    out = in_process(env, "run", str(again), cwd=root)
    assert out.returncode == 0, out.stderr
    sent = text_sends(service.sends())[sent_before:]
    assert len(sent) == 2 and all(DIGITS not in json.dumps(s) for s in sent)
    skipped = _rows(ledger_url, "SELECT reason FROM deliveries WHERE run_id = 2 AND "
                                "state = 'skipped'")
    assert len(skipped) == 1
    assert skipped[0][0].startswith("erased at the person's request on 20")
    status = json.loads(in_process(env, "status", "--json", "2", cwd=root).stdout)
    assert any(k.startswith("erased at the person's request")
               for k in status["skipped_by_reason"]), status["skipped_by_reason"]
    assert scan(ledger_url, NEEDLES[:2]) == []  # the number is still nowhere in clear
