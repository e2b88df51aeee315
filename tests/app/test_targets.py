"""Where sends go, and where the ledger is: never a silent sandbox, never a second ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import load_workbook

from tests.app.support import clean_env, text_sends
from tests.factories import write_project
from tests.incli import in_process


def test_a_service_without_its_key_is_an_error_and_nothing_is_sent(make_sandbox, tmp_path
                                                                    ) -> None:
    service = make_sandbox()
    service.create_session("s1")
    campaign = write_project(tmp_path / "shop", 5)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for key in ({"CAMPAIGN_API_KEY": ""}, {}):
        env = clean_env(CAMPAIGN_BASE_URL=service.base_url, **key)
        out = in_process(env, "run", str(campaign), cwd=elsewhere)  # refused: no process
        assert out.returncode == 1, out.stdout
        assert "CAMPAIGN_API_KEY" in out.stderr and "Traceback" not in out.stderr
        assert "sandbox" not in out.stdout.lower()
    out = in_process(clean_env(CAMPAIGN_API_KEY=service.api_key), "run", str(campaign),
                     cwd=elsewhere)
    assert out.returncode == 1 and "no service address" in out.stderr
    assert service.api_key not in out.stderr + out.stdout
    assert service.sends() == []
    runs = in_process(clean_env(), "runs", "--json", cwd=tmp_path / "shop")
    assert json.loads(runs.stdout)["runs"] == []  # nothing planned, nothing recorded


def test_a_sandbox_run_says_so_in_every_place_that_shows_it(tmp_path: Path) -> None:
    campaign = write_project(tmp_path / "shop", 4)
    env = clean_env(CAMPAIGN_VERIFY_GRACE_S="1")
    out = in_process(env, "run", str(campaign), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert "embedded sandbox" in first and "CAMPAIGN_BASE_URL" in first
    status = in_process(env, "status", cwd=tmp_path / "shop")
    assert "sent to the embedded sandbox" in status.stdout
    runs = json.loads(in_process(env, "runs", "--json", cwd=tmp_path / "shop").stdout)
    assert runs["runs"][0]["target"] == "sandbox"
    report = in_process(env, "report", "1", cwd=tmp_path / "shop")
    assert report.returncode == 0, report.stderr
    book = load_workbook(next((tmp_path / "shop" / "reports").glob("*.xlsx")))
    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(values_only=True) if row[0]}
    assert "embedded sandbox" in str(summary["Sent to"])


@pytest.mark.slow
def test_the_same_campaign_reaches_the_same_ledger_from_any_folder(make_sandbox, tmp_path
                                                                   ) -> None:
    service = make_sandbox()
    service.create_session("s1")
    shop = tmp_path / "shop"
    campaign = write_project(shop, 3)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="1")
    assert in_process(env, "run", str(campaign), cwd=elsewhere).returncode == 0
    assert not (elsewhere / "state").exists() and (shop / "state" / "campaign.db").is_file()
    # a subfolder of the project finds the same ledger
    status = in_process(env, "status", "--json", cwd=shop / "data")
    assert json.loads(status.stdout)["run"] == 1
    # outside every project: said plainly, and no empty ledger is made
    lost = in_process(env, "runs", cwd=elsewhere)
    assert lost.returncode == 1 and "no campaign project" in lost.stderr
    assert not (elsewhere / "state").exists()
    named = in_process({**env, "CAMPAIGN_PROJECT_DIR": str(shop)}, "runs", cwd=elsewhere)
    assert str(shop / "state" / "campaign.db") in named.stdout.replace("\n", "")
    # the same file run again from the project itself is the same campaign: not re-sent
    again = in_process(env, "run", "campaigns/lote.toml", cwd=shop)
    assert again.returncode == 1 and "already ran" in again.stderr
    assert len(text_sends(service.sends())) == 3
