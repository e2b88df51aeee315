"""The plan contract with the ledger: row keys, order, skipped rows, payloads equal wire bodies."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.plan import build_plan, load_campaign
from scheduler.service.requests import SEND_KINDS, wire_body
from tests.factories import REPO, Project

KEYS = {"row", "to", "step", "kind", "path", "payload", "variables", "state", "reason", "region"}
TWO_STEPS = (
    '[[steps]]\ntype = "text"\ntext = "Oi {{ nome|first_name }}"\n'
    '[[steps]]\ntype = "image"\ndelay = "5m"\nimage = "https://x/i.jpg"\n'
    'caption = "{{ cidade }}"\n'
)


def _rows(plan: Any) -> list[dict[str, Any]]:
    return [row for chunk in plan.chunks() for row in chunk]


def test_one_row_per_recipient_and_step_in_csv_then_step_order(project: Project) -> None:
    plan = build_plan(project.basic(TWO_STEPS), chunk_rows=1)
    rows = _rows(plan)
    assert all(set(r) == KEYS for r in rows)
    assert [(r["row"], r["step"]) for r in rows] == [
        (1, 0),
        (1, 1),
        (2, 0),
        (2, 1),
        (3, 0),
        (3, 1),
        (4, 0),
        (4, 1),
    ]
    first, second = rows[0], rows[1]
    assert first == {
        "row": 1,
        "to": "5511987654321",
        "step": 0,
        "kind": "text",
        "path": "/api/v1/messages/send/text",
        "payload": {"text": "Oi Maria"},
        "variables": {"nome": "Maria da Silva", "cidade": "São Paulo", "valor": "1234.5"},
        "state": "planned",
        "reason": None,
        "region": "BR",
    }
    assert second["kind"] == "image" and second["path"] == "/api/v1/messages/send/image"
    assert second["payload"] == {"image": "https://x/i.jpg", "caption": "São Paulo"}
    skipped = [r for r in rows if r["state"] == "skipped"]
    assert [(r["row"], r["step"], r["reason"]) for r in skipped] == [
        (3, 0, "invalid_number: too short"),
        (3, 1, "invalid_number: too short"),
        (4, 0, "duplicate"),
        (4, 1, "duplicate"),
    ]
    assert all(r["payload"] == {} for r in skipped)
    assert skipped[0]["to"] == "1234" and skipped[0]["region"] is None
    stats = plan.stats
    assert plan.complete and stats.planned_per_step == {0: 2, 1: 2}
    assert stats.skipped_per_step == {0: 2, 1: 2}
    assert stats.recipients_per_sender == {"s1": 1, "s2": 1}


def test_payload_is_the_wire_body_without_session_and_to(project: Project) -> None:
    steps = (
        '[[steps]]\ntype = "pix"\ncontent = "{{ nome }}"\npixKey = "k@x.com"\n'
        'pixAmount = "{{ valor|amount }}"\n'
        '[[steps]]\ntype = "location"\nlatitude = -23.55\nlongitude = -46\nname = "{{ cidade }}"\n'
    )
    plan = build_plan(project.basic(steps))
    for row in _rows(plan):
        if row["state"] != "planned":
            continue
        kind = SEND_KINDS[row["kind"]]
        model = kind.model.model_validate({**row["payload"], "sessionId": "s1", "to": row["to"]})
        expected = wire_body(model)
        del expected["sessionId"], expected["to"]
        assert row["payload"] == expected
        assert type(row["payload"].get("pixAmount", 0.0)) is float
    pix = _rows(plan)[0]["payload"]
    assert pix["pixAmount"] == 1234.5


def test_strict_plan_raises_and_loose_plan_collects(project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext = "{{ valor|brl }} {{ x }}"\n')
    with pytest.raises(CampaignError):
        build_plan(path).consume()
    plan = build_plan(path, strict=False)
    rows = _rows(plan)
    assert rows[0]["state"] == "skipped" and rows[0]["reason"].startswith("render_error:")
    assert plan.stats.error_total == 2


def test_repeated_errors_are_capped_and_summarised(project: Project) -> None:
    csv = "telefone;nome\n" + "".join(f"119{i:08d};\n" for i in range(50))
    path = project.basic('[[steps]]\ntype = "text"\ntext = "{{ nome }}"\n', csv=csv)
    stats = build_plan(path, strict=False).consume()  # an empty text, in every row
    assert stats.error_total == 50 and len(stats.errors) == 21
    assert stats.errors[-1].message.startswith("… and 30 more rows")


def test_chunks_can_be_read_again(project: Project) -> None:
    plan = build_plan(project.basic(TWO_STEPS))
    assert _rows(plan) == _rows(plan)
    assert plan.stats.valid == 2


def test_the_plan_of_the_demo_accounts_for_every_recipient() -> None:
    campaign = load_campaign(REPO / "campaigns" / "demo.toml")
    plan = build_plan(campaign)
    rows = _rows(plan)
    recipients = {r["row"] for r in rows}
    assert len(recipients) == plan.stats.read
    assert len(rows) == plan.stats.read * len(campaign.steps)
    planned = {r["to"] for r in rows if r["state"] == "planned"}
    assert len(planned) == plan.stats.valid


@pytest.mark.slow
def test_a_worker_pool_gives_the_same_rows_and_stats(project: Project) -> None:
    csv = "telefone;nome;cidade\n" + "".join(
        f"{'1234' if i % 17 == 0 else f'119{i % 40:08d}'};n{i};c{i % 3}\n" for i in range(120)
    )
    path = project.basic(TWO_STEPS, csv=csv)
    serial = build_plan(path, chunk_rows=25)
    pooled = build_plan(path, chunk_rows=25, workers=2)
    assert _rows(pooled) == _rows(serial)
    assert pooled.stats.recipients_json() == serial.stats.recipients_json()
    assert pooled.stats.planned_per_step == serial.stats.planned_per_step


def test_a_worker_pool_reports_render_errors_like_serial(project: Project) -> None:
    from scheduler.campaign.exceptions import UndefinedVariableError

    path = project.basic('[[steps]]\ntype = "text"\ntext = "{{ nada }}"\n')
    with pytest.raises(UndefinedVariableError) as caught:
        build_plan(path, workers=2).consume()
    assert caught.value.issues[0].row == 1
