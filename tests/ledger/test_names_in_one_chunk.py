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


def test_two_plans_adding_the_same_new_names_in_crossing_orders_both_store(
        ledger: Ledger) -> None:
    """Two plans stored at once, each adding the other's new name in its next chunk: on
    PostgreSQL each would wait on the other's unique entry (a deadlock, one plan failed);
    the second plan's names wait for the first's commit instead. Both plans' names stay."""
    import threading

    from scheduler.ledger.queries.names import note_names

    def chunk(i: int, name: str) -> list[dict[str, Any]]:
        return [{"to": number(i), "variables": {"nome": name}}]

    first_wrote, failures = threading.Event(), []

    def plan_a() -> None:
        try:
            with ledger.engine.begin() as conn:
                note_names(conn, chunk(0, "Ana Souza"))
                first_wrote.set()
                threading.Event().wait(0.5)  # the other plan starts meanwhile
                note_names(conn, chunk(1, "Bia Rocha"))
        except Exception as exc:
            failures.append(exc)
            first_wrote.set()

    def plan_b() -> None:
        first_wrote.wait(10)
        try:
            with ledger.engine.begin() as conn:
                note_names(conn, chunk(2, "Bia Rocha"))
                note_names(conn, chunk(3, "Ana Souza"))
        except Exception as exc:
            failures.append(exc)

    threads = [threading.Thread(target=plan_a), threading.Thread(target=plan_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    r, n = recipient_names.c, person_names.c
    with access.read(ledger.engine, "test") as conn:
        stored = sorted((str(number_), str(name)) for number_, name in conn.execute(
            select(r.number, n.name).join_from(recipient_names, person_names,
                                               n.id == r.name_id)))
    assert stored == sorted([(number(0), "Ana Souza"), (number(1), "Bia Rocha"),
                             (number(2), "Bia Rocha"), (number(3), "Ana Souza")])
