"""Messy numbers meet the channel: line types, ``00`` + country code, the ninth digit.

A landline or a toll-free number in a WhatsApp list is skipped with a reason a person
understands, in the plan and in the ledger; a voice campaign calls landlines; ``0055 …`` is
``+55 …``; an old 8-digit Brazilian mobile is named as such, and completed only when the
campaign opts in.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from scheduler.campaign.phones import Normalized, PhoneNormalizer
from scheduler.campaign.plan import build_plan
from scheduler.cli import app
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from tests.factories import Project

BR = PhoneNormalizer("BR")
NINTH = "Brazilian mobile missing the ninth digit: 11 8765-4321 → 11 98765-4321?"
LANDLINE = "landline: WhatsApp and SMS need a mobile number"
TOLL_FREE = "toll-free number: WhatsApp and SMS need a mobile number"
MESSY = (
    "nome;telefone\n"
    "Ana;(11) 98765-1111\n"  # 1 mobile
    "Fixo;(11) 3333-4444\n"  # 2 landline
    "Gratis;0800 123 4567\n"  # 3 toll-free
    "Exterior;0055 11 97777-8888\n"  # 4 00 + country code
    "Antigo;11 8765-4321\n"  # 5 old mobile without the ninth digit
    "EUA;+1 650 253 0000\n"  # 6 fixed line or mobile (the US share their numbers)
)
TEXT_STEP = '[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n'
VOICE = (
    'name = "ura"\nchannel = "voice"\n[recipients]\nfile = "data/r.csv"\n'
    'phone_column = "telefone"\n[[steps]]\naudioUrl = "https://example.com/aviso.mp3"\n'
)


def _by_row(path: Any) -> dict[int, dict[str, Any]]:
    plan = build_plan(path)
    return {r["row"]: r for chunk in plan.chunks() for r in chunk}


@pytest.mark.parametrize(
    ("raw", "digits", "line_type"),
    [
        ("(11) 3333-4444", "551133334444", "fixed_line"),
        ("0800 123 4567", "558001234567", "toll_free"),
        ("0055 11 97777-8888", "5511977778888", "mobile"),
        ("00 55 (11) 97777-8888", "5511977778888", "mobile"),
        ("+55 11 97777-8888", "5511977778888", "mobile"),
        ("+1 650 253 0000", "16502530000", "fixed_line_or_mobile"),
        ("0 15 11 98765-4325", "5511987654325", "mobile"),  # a carrier code stays a carrier code
    ],
)
def test_each_number_has_its_line_type(raw: str, digits: str, line_type: str) -> None:
    result = BR.normalize(raw)
    assert (result.digits, result.line_type) == (digits, line_type)


def test_the_missing_ninth_digit_is_named_and_added_only_on_request() -> None:
    for raw in ("11 8765-4321", "(11) 8765-4321", "+55 11 8765-4321", "0055 11 8765-4321"):
        assert BR.normalize(raw) == Normalized(None, None, NINTH)
    added = PhoneNormalizer("BR", add_ninth_digit=True).normalize("11 8765-4321")
    assert added == Normalized("5511987654321", "BR", None, "mobile", True)
    assert BR.normalize("11 2765-4321").line_type == "fixed_line"  # a landline is not touched


def test_a_whatsapp_campaign_skips_what_it_cannot_reach(project: Project) -> None:
    rows = _by_row(project.basic(TEXT_STEP, csv=MESSY))
    assert rows[1]["state"] == "planned" and rows[1]["to"] == "5511987651111"
    assert (rows[2]["state"], rows[2]["reason"], rows[2]["to"]) == (
        "skipped",
        LANDLINE,
        "551133334444",
    )
    assert (rows[3]["state"], rows[3]["reason"]) == ("skipped", TOLL_FREE)
    assert rows[4]["state"] == "planned" and rows[4]["to"] == "5511977778888"
    assert (rows[5]["state"], rows[5]["reason"]) == ("skipped", f"invalid_number: {NINTH}")
    assert rows[6]["state"] == "planned"


def test_add_ninth_digit_sends_to_the_completed_number(project: Project) -> None:
    path = project.basic(TEXT_STEP, csv=MESSY)
    path.write_text(
        path.read_text().replace(
            'phone_column = "telefone"', 'phone_column = "telefone"\nadd_ninth_digit = true'
        )
    )
    plan = build_plan(path)
    rows = {r["row"]: r for chunk in plan.chunks() for r in chunk}
    assert rows[5]["state"] == "planned" and rows[5]["to"] == "5511987654321"
    assert plan.stats.ninth_digit_added == 1


def test_configured_line_types(project: Project) -> None:
    path = project.basic(TEXT_STEP, csv=MESSY)
    path.write_text(
        path.read_text().replace(
            'phone_column = "telefone"',
            'phone_column = "telefone"\nline_types = ["mobile", "fixed_line"]',
        )
    )
    rows = _by_row(path)
    assert rows[2]["state"] == "planned"
    assert rows[3]["reason"] == "toll-free number: recipients.line_types accepts mobile, landline"


def test_a_voice_campaign_calls_landlines(project: Project) -> None:
    project.write("data/r.csv", MESSY)
    rows = _by_row(project.campaign(VOICE))
    assert rows[2]["state"] == "planned" and rows[2]["to"] == "551133334444"
    assert rows[3]["reason"] == "toll-free number: calls need a mobile or landline number"


def test_validate_lists_the_unreachable_numbers_as_warnings(project: Project) -> None:
    path = project.basic(TEXT_STEP, csv=MESSY)
    result = CliRunner().invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 0, result.output  # warnings, not errors, by default
    recipients = json.loads(result.stdout)["recipients"]
    assert recipients["invalid"] == [
        {"row": 2, "value": "(11) 3333-4444", "reason": LANDLINE},
        {"row": 3, "value": "0800 123 4567", "reason": TOLL_FREE},
        {"row": 5, "value": "11 8765-4321", "reason": NINTH},
    ]
    assert (recipients["valid"], recipients["unreachable"]) == (3, 2)
    human = CliRunner().invoke(app, ["validate", str(path)])
    assert "add_ninth_digit = true" in human.stdout and "landline: WhatsApp" in human.stdout


def test_the_ledger_keeps_the_reason_of_each_skip(project: Project, ledger_url: str) -> None:
    from scheduler.usecases.planning import plan_run

    path = project.basic(TEXT_STEP, csv=MESSY)
    engine = open_ledger(ledger_url)
    try:
        run_id = plan_run(Ledger(engine), path, start_at=datetime(2030, 1, 7, 12, tzinfo=UTC))
        with engine.connect() as conn:
            stored = dict(
                conn.execute(
                    text('SELECT "row", reason FROM deliveries WHERE run_id = :r'), {"r": run_id}
                ).all()
            )
    finally:
        engine.dispose()
    assert stored == {
        1: None,
        2: LANDLINE,
        3: TOLL_FREE,
        4: None,
        5: f"invalid_number: {NINTH}",
        6: None,
    }
