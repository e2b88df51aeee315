"""``[recipients] consent = "required"`` with ``consent_column``: only the rows that hold an
opt-in are planned and sent (the sandbox's record says so), the others are skipped with
their reason and counted by ``plan``, and the report shows each delivery's basis."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.plan import build_plan
from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.reports import write_report
from scheduler.service.client import ServiceClient
from scheduler.usecases.planning import plan_run
from tests.engine import dispatcher_for
from tests.factories import T0, FakeClock
from tests.incli import campaign as cli

CSV = ("nome,telefone,optin_em\n"
       "Ana,+55 11 98765-4301,2026-03-01 10:00\n"
       "Bia,+55 11 98765-4302,\n"
       "Caio,+55 21 98765-4303,2026-05-02T08:30:00-03:00\n"
       "Duda,+55 21 98765-4304,   \n")


def _project(root: Path, *, column: str = "optin_em") -> Path:
    (root / "data").mkdir()
    (root / "data" / "r.csv").write_text(CSV, encoding="utf-8")
    (root / "campaigns").mkdir()
    path = root / "campaigns" / "optin.toml"
    path.write_text(
        'name = "optin"\nsenders = ["s1"]\n'
        f'[recipients]\nfile = "data/r.csv"\nconsent = "required"\nconsent_column = "{column}"\n'
        '[pace]\nrate = "10/s"\njitter = "0s-0s"\n'
        '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n', encoding="utf-8")
    return path


def test_the_plan_skips_rows_without_consent_and_counts_them(tmp_path: Path) -> None:
    plan = build_plan(_project(tmp_path))
    rows = [row for chunk in plan.chunks() for row in chunk]
    assert [(r["to"], r["state"]) for r in rows] == [
        ("5511987654301", "planned"), ("5511987654302", "skipped"),
        ("5521987654303", "planned"), ("5521987654304", "skipped")]
    assert rows[1]["reason"] == ("no_consent: optin_em is empty (whatsapp opt-in required)")
    assert rows[0]["variables"]["consent_basis"] == "optin_em: 2026-03-01 10:00"
    assert plan.stats.no_consent == 2 and plan.stats.valid == 2
    assert plan.stats.recipients_json()["no_consent"] == 2


def test_plan_says_how_many_were_left_out_for_consent(tmp_path: Path) -> None:
    path = _project(tmp_path)
    done = cli("plan", str(path), "--start", "2026-12-01T09:00:00-03:00", cwd=tmp_path)
    assert "consent required: 2 recipients without it skipped (no_consent)" in done.stdout
    assert cli("validate", str(path), cwd=tmp_path).stdout.count(
        "skipped without consent (consent)") == 1


def test_a_missing_consent_column_is_an_error_naming_the_file_and_key(tmp_path: Path) -> None:
    path = _project(tmp_path, column="aceite")
    with pytest.raises(CampaignError) as raised:
        build_plan(path)
    said = str(raised.value)
    assert "r.csv" in said and "aceite" in said


async def test_a_campaign_requiring_consent_sends_only_to_the_consenting_rows(
        tmp_path: Path, ledger: Ledger, service_factory, clock: FakeClock) -> None:
    path = _project(tmp_path)
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = plan_run(ledger, path, start_at=T0, rehearsal=True)
    options = DispatchOptions(senders=("s1",), rate=10.0, timezone="America/Sao_Paulo")
    async with ServiceClient(service.base_url, service.api_key) as client:
        result = await dispatcher_for(ledger, client, run_id, options, clock=clock,
                                      rng=random.Random(1)).run()
    assert result.status == RunStatus.COMPLETED
    assert sorted(send["to"] for send in service.sends()) == ["5511987654301",
                                                              "5521987654303"]
    report = write_report(ledger, [run_id], fmt="csv", output=tmp_path / "r.csv")
    frame = pd.read_csv(report.path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
    basis = dict(zip(frame["Number"], frame["consent_basis"], strict=True))
    assert basis[next(n for n in basis if n.endswith("4301"))] == "optin_em: 2026-03-01 10:00"
    assert basis[next(n for n in basis if n.endswith("4303"))] == \
        "optin_em: 2026-05-02T08:30:00-03:00"
    assert basis[next(n for n in basis if n.endswith("4302"))] == ""
