"""One plan chunk where a number comes back under other names (a CSV's duplicates): the
search finds it by every word of every name it came with, each name and its keys stored
once; SQLite and PostgreSQL (issue 32 folds each name once per chunk)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, text

from scheduler.ledger import access
from scheduler.ledger.name_models import person_name_keys, person_names, recipient_names
from scheduler.ledger.runs import Ledger
from scheduler.views.recipient_story import find_by_name
from tests.factories import T0, number


def test_a_number_under_three_names_in_one_chunk(ledger: Ledger) -> None:
    run_id = ledger.create_run(campaign_name="lote", channel="whatsapp",
                               definition_path="lote.toml",
                               definition={"name": "lote", "senders": ["s1"],
                                           "steps": [{"type": "text"}] * 2},
                               delivery_mode="at-most-once", timezone="UTC")
    who = [(0, "Ana Silva"), (1, "Bia Lima"), (0, "Ana Silva"), (0, "Maria Silva"),
           (0, "Ana Silva"), (1, "Bia Lima"), (0, "Maria Silva"), (0, "Zé")]
    rows: list[dict[str, Any]] = []
    for line, (i, name) in enumerate(who, start=1):
        values = {"telefone": number(i), "nome": name}
        rows += [{"row": line, "to": number(i), "step": step, "kind": "text",
                  "path": "/api/v1/messages/send/text", "payload": {"text": "oi"},
                  "variables": values, "region": "BR", "state": "planned"}
                 for step in range(2)]
    ledger.store_plan(run_id, [rows], start_at=T0)

    r, n, k = recipient_names.c, person_names.c, person_name_keys.c
    with access.read(ledger.engine, "test") as conn:
        keys = [tuple(row) for row in conn.execute(
            select(r.number, k.name_key, n.name).join_from(
                recipient_names, person_names, n.id == r.name_id).join(
                person_name_keys, k.name_id == n.id))]
        counts = [conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one()
                  for t in ("recipient_names", "person_names", "person_name_keys")]
    assert sorted(keys) == sorted([
        (number(0), "ana silva", "Ana Silva"), (number(0), "silva", "Ana Silva"),
        (number(0), "maria silva", "Maria Silva"), (number(0), "silva", "Maria Silva"),
        (number(0), "ze", "Zé"),
        (number(1), "bia lima", "Bia Lima"), (number(1), "lima", "Bia Lima")])
    assert counts == [4, 4, 7]

    def found(words: str) -> list[tuple[str, str | None]]:
        return [(f.number, f.name) for f in find_by_name(ledger, words)]

    assert found("maria") == [(number(0), "Maria Silva")]
    assert found("silva") == [(number(0), "Ana Silva")]
    assert found("ze") == [(number(0), "Zé")]
    assert found("lima") == [(number(1), "Bia Lima")]
