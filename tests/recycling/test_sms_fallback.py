"""A WhatsApp campaign with an SMS fallback, run for real (``campaign run`` in a subprocess)
against a sandbox in another process: only the recipients whose message was not delivered
by ``after`` get the SMS; a landline row and a number opted out before the run never do;
the report says who was reached by which channel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from openpyxl import load_workbook

from tests.app.support import cli
from tests.channels.support import run_env, sandbox_process
from tests.factories import open_test_ledger
from tests.incli import in_process
from tests.recycling.support import number, phone, sent_to

DELIVERED = range(0, 6)
UNDELIVERED = range(6, 9)
LANDLINE_CSV, LANDLINE = "(11) 3456-7890", "551134567890"
OPTED_OUT = 9


def write_fallback_project(root: Path, *, after: str) -> Path:
    """A WhatsApp text campaign to :data:`DELIVERED`, :data:`UNDELIVERED`, the landline and
    :data:`OPTED_OUT`, sent by ``s1``, with ``[fallback]`` SMS ``after``; its file."""
    for folder in ("campaigns", "data", "templates"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    people = [phone(i) for i in (*DELIVERED, *UNDELIVERED)] + [LANDLINE_CSV, phone(OPTED_OUT)]
    rows = ["nome;telefone"] + [f"Pessoa {i};{p}" for i, p in enumerate(people)]
    (root / "data" / "zap.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    path = root / "campaigns" / "zap.toml"
    path.write_text(
        'name = "zap-fallback"\nsenders = ["s1"]\n\n'
        '[recipients]\nfile = "data/zap.csv"\nphone_column = "telefone"\n'
        'default_country = "BR"\nline_types = ["mobile", "fixed_line"]\n\n'
        '[schedule]\ntimezone = "UTC"\n\n[pace]\nrate = "20/s"\n\n'
        '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}, sua fatura chegou."\n\n'
        f'[fallback]\nafter = "{after}"\nwhen = "not_delivered"\nchannel = "sms"\n'
        'step = { text = "Oi {{ nome }}, sua fatura chegou (tentamos pelo WhatsApp)." }\n',
        encoding="utf-8")
    return path


def sheet(path: Path, name: str) -> list[dict[str, Any]]:
    """The rows of sheet ``name`` of the workbook at ``path``, by header."""
    book = load_workbook(path, read_only=True)
    rows = list(book[name].iter_rows(values_only=True))
    book.close()
    headers = [str(h) if h is not None else "" for h in rows[0]]
    return [dict(zip(headers, row, strict=False)) for row in rows[1:]]


@pytest.mark.slow
def test_only_the_undelivered_mobiles_get_the_sms_and_the_report_says_by_which_channel(
        tmp_path: Path, ledger_url: str) -> None:
    with open_test_ledger(ledger_url) as ledger:  # asked not to be contacted, before the run
        assert ledger.suppress(number(OPTED_OUT), source="import", reason="opt-out list")
    never = [number(i) for i in UNDELIVERED] + [LANDLINE]
    with sandbox_process() as box:
        box.create_session("s1")
        box.set_faults(delivered_rate=1.0, read_rate=0.0, reply_rate=0.0,
                       recipient_delay_ms=[5, 50], whatsapp_undelivered_numbers=never,
                       sms_outcomes_by_number={n: ["delivered"] for n in never})
        shop = tmp_path / "shop"
        campaign = write_fallback_project(shop, after="3s")
        env = run_env(box.base_url, box.api_key, ledger_url)
        run = cli(env, "run", str(campaign), cwd=shop)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "run 1: completed" in run.stdout, run.stdout

        sends = box.sends()
        whatsapp = sent_to(sends, "/messages/send/")
        assert whatsapp == {number(i): 1 for i in (*DELIVERED, *UNDELIVERED)} | {LANDLINE: 1}
        # the SMS: the undelivered mobiles only, once each; never the landline, never the
        # opted-out number (never sent anything at all)
        assert sent_to(sends, "/sms/") == {number(i): 1 for i in UNDELIVERED}
        assert {o["to"] for o in box.outcomes("sms")} == {number(i) for i in UNDELIVERED}

        report = tmp_path / "report.xlsx"
        written = in_process(env, "report", "1", "-o", str(report), cwd=shop)
        assert written.returncode == 0, written.stdout + written.stderr
    recipients = sheet(report, "Recipients")
    by_number: dict[str, list[dict[str, Any]]] = {}
    for row in recipients:
        by_number.setdefault(str(row["Number"]), []).append(row)
    reached = {to: [str(r.get("Reached by") or "") for r in rows]
               for to, rows in by_number.items()}
    assert reached == {
        **{number(i): ["WhatsApp, attempt 1"] for i in DELIVERED},
        **{number(i): ["SMS fallback"] for i in UNDELIVERED},
        LANDLINE: ["not reached"],
        number(OPTED_OUT): [""],  # never sent: skipped (suppressed)
    }, recipients
    funnel = {(row["Attempt"], row["Channel"]): row for row in sheet(report, "Attempts")
              if row["Attempt"]}
    first, fallback = funnel[("1st", "WhatsApp")], funnel[("SMS fallback", "SMS")]
    assert (first["Sent"], first["Reached"], first["Not reached"]) == (10, 6, 4)
    assert (fallback["Sent"], fallback["Reached"]) == (3, 3)
