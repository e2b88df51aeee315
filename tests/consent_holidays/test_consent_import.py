"""``campaign consent import FILE``: records keep their source (file, row), time, channel
and what was agreed to; a bad file names file, row and field and stores nothing; a campaign
requiring consent without a column sends only to the imported numbers of its channel."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select

from scheduler.campaign.consent_import import ConsentFileError, read_consent_file
from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger import access
from scheduler.ledger.consent import consent_bases, consents, store_consents
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.client import ServiceClient
from scheduler.usecases.planning import plan_run
from tests.engine import dispatcher_for
from tests.factories import T0, FakeClock
from tests.incli import campaign as cli

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
SP = ZoneInfo("America/Sao_Paulo")
GOOD = ("numero;canal;quando;texto;versao\n"
        "(11) 98765-4301;whatsapp;2026-03-01 10:00;Aceito receber ofertas;\n"
        "+55 21 98765-4303;WhatsApp;2026-05-02;;termos-v2\n"
        "11 98765-4302;sms;2026-05-02T08:00:00-03:00;SMS sim;\n")


def _count(ledger: Ledger) -> int:
    with access.read(ledger.engine) as conn:
        return int(conn.execute(select(func.count()).select_from(consents)).scalar_one())


def test_each_record_keeps_its_source_time_channel_and_text(tmp_path: Path,
                                                            ledger: Ledger) -> None:
    path = tmp_path / "optin.csv"
    path.write_text(GOOD, encoding="utf-8")
    records = read_consent_file(path, zone=SP, now=NOW)
    assert store_consents(ledger.engine, records) == 3
    with access.read(ledger.engine) as conn:
        rows = conn.execute(select(consents).order_by(consents.c.id)).all()
    first = rows[0]
    assert (first.number, first.channel, first.source_file, first.source_row) == (
        "5511987654301", "whatsapp", str(path), 1)
    assert first.given_at == datetime(2026, 3, 1, 13, 0, tzinfo=UTC)  # 10:00 in São Paulo
    assert first.text == "Aceito receber ofertas" and first.version is None
    assert rows[1].version == "termos-v2" and rows[1].channel == "whatsapp"
    bases = consent_bases(ledger.engine, "whatsapp")
    assert set(bases) == {"5511987654301", "5521987654303"}
    assert bases["5521987654303"] == (f"imported 2026-05-02 03:00 UTC; termos-v2 "
                                      f"({path}, row 2)")


def test_a_bad_file_names_file_row_and_field_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("numero,canal,quando,texto\n"
                    "11 98765-4301,whatsapp,2026-03-01,ok\n"
                    "1234,whatsapp,2026-03-01,ok\n"
                    "11 98765-4302,fax,2026-03-01,ok\n"
                    "11 98765-4303,sms,ontem,ok\n"
                    "11 98765-4304,sms,2026-03-01,\n", encoding="utf-8")
    with pytest.raises(ConsentFileError) as raised:
        read_consent_file(path, zone=SP, now=NOW)
    lines = str(raised.value).splitlines()
    assert lines[0].startswith("bad.csv: row 2: number '1234'")
    assert lines[1].startswith("bad.csv: row 3: channel 'fax'")
    assert lines[2].startswith("bad.csv: row 4: time 'ontem'")
    assert lines[3].startswith("bad.csv: row 5: text/version")
    assert lines[-1] == "nothing was imported"
    done = cli("consent", "import", str(path), cwd=tmp_path,
               env={"CAMPAIGN_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/bin"})
    assert done.returncode == 1 and "bad.csv: row 3: channel 'fax'" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "state").exists()


def test_a_file_without_the_needed_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text("telefone,quando\n11 98765-4301,2026-03-01\n", encoding="utf-8")
    with pytest.raises(ConsentFileError, match=r"h\.csv: header: no column channel, "
                                                r"text or version"):
        read_consent_file(path, zone=SP, now=NOW)


async def test_a_campaign_requiring_imported_consent_sends_only_to_those_numbers(
        tmp_path: Path, ledger: Ledger, service_factory, clock: FakeClock) -> None:
    optin = tmp_path / "optin.csv"
    optin.write_text(GOOD, encoding="utf-8")
    store_consents(ledger.engine, read_consent_file(optin, zone=SP, now=NOW))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "r.csv").write_text(
        "nome,telefone\nAna,11 98765-4301\nBia,11 98765-4302\nCaio,21 98765-4303\n",
        encoding="utf-8")
    (tmp_path / "campaigns").mkdir()
    path = tmp_path / "campaigns" / "c.toml"
    path.write_text('name = "c"\nsenders = ["s1"]\n[recipients]\nfile = "data/r.csv"\n'
                    'consent = "required"\n[pace]\nrate = "10/s"\njitter = "0s-0s"\n'
                    '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n', encoding="utf-8")
    service = service_factory(clock=clock)
    await service.connect("s1")
    run_id = plan_run(ledger, path, start_at=T0, rehearsal=True)
    options = DispatchOptions(senders=("s1",), rate=10.0, timezone="America/Sao_Paulo")
    async with ServiceClient(service.base_url, service.api_key) as client:
        result = await dispatcher_for(ledger, client, run_id, options, clock=clock,
                                      rng=random.Random(1)).run()
    assert result.status == RunStatus.COMPLETED
    # 4302 consented to SMS only: this WhatsApp campaign skips it
    assert sorted(s["to"] for s in service.sends()) == ["5511987654301", "5521987654303"]
    assert _count(ledger) == 3


def test_plan_counts_the_numbers_without_an_imported_consent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scheduler.ledger.db import open_ledger

    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("CAMPAIGN_STATE_DIR", str(state))
    monkeypatch.delenv("CAMPAIGN_DATABASE_URL", raising=False)
    engine = open_ledger(f"sqlite:///{state / 'campaign.db'}")
    try:
        optin = tmp_path / "optin.csv"
        optin.write_text(GOOD, encoding="utf-8")
        store_consents(engine, read_consent_file(optin, zone=SP, now=NOW))
    finally:
        engine.dispose()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "r.csv").write_text(
        "nome,telefone\nAna,11 98765-4301\nBia,11 98765-4302\nCaio,21 98765-4303\n",
        encoding="utf-8")
    (tmp_path / "campaigns").mkdir()
    path = tmp_path / "campaigns" / "c.toml"
    path.write_text('name = "c"\nchannel = "sms"\n[recipients]\nfile = "data/r.csv"\n'
                    'consent = "required"\n[[steps]]\ntext = "Oi {{ nome }}"\n',
                    encoding="utf-8")
    import json

    report = json.loads(cli("plan", str(path), "--start", "2026-12-01T09:00:00-03:00",
                            "--json", cwd=tmp_path).stdout)
    assert report["recipients"]["no_consent"] == 2  # 4302 consented to SMS, the rest not
    assert report["recipients"]["valid"] == 1
