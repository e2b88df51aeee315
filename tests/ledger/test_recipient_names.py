"""The recipients' names (migration 0026): a plan stores its recipients' names (each
distinct name once, with its keys), the search finds a number by the start of any word of
its name (case and accents aside), the migration fills the tables from the rows planned
before it, and ``person forget`` leaves nothing of the name behind unless another number
has it; SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from alembic import command
from sqlalchemy import inspect, select, text

from scheduler.core.person_names import fold_name, name_in, name_keys, prefix_range
from scheduler.ledger import access
from scheduler.ledger import privacy as lp
from scheduler.ledger.db import alembic_config
from scheduler.ledger.name_models import (
    NAME_KEYS_OF,
    person_name_keys,
    person_names,
    recipient_names,
)
from scheduler.ledger.runs import Ledger
from scheduler.views.recipient_story import find_by_name
from tests.factories import T0, number

NAMES = ["José da Silva", "Maria Silva", "MARIA-Luíza O'Neil", "Zé", "  ", "100% Ana_B"]


def _plan(ledger: Ledger, name: str, names: list[str], *, steps: int = 2,
          column: str = "Nome") -> int:
    run_id = ledger.create_run(campaign_name=name, channel="whatsapp",
                               definition_path=f"{name}.toml",
                               definition={"name": name, "senders": ["s1"],
                                           "steps": [{"type": "text"}] * steps},
                               delivery_mode="at-most-once", timezone="UTC")
    rows: list[dict[str, Any]] = []
    for i, who in enumerate(names):
        values = {"telefone": number(i), column: who}
        rows += [{"row": i + 1, "to": number(i), "step": step, "kind": "text",
                  "path": "/api/v1/messages/send/text", "payload": {"text": "oi"},
                  "variables": values, "region": "BR", "state": "planned"}
                 for step in range(steps)]
    ledger.store_plan(run_id, [rows], start_at=T0)
    return run_id


def _found(ledger: Ledger, words: str) -> list[tuple[str, str | None]]:
    return [(f.number, f.name) for f in find_by_name(ledger, words)]


def _keys(ledger: Ledger) -> list[tuple[str, str, str]]:
    """``(number, key, name)`` of every number's names' keys."""
    r, n, k = recipient_names.c, person_names.c, person_name_keys.c
    with access.read(ledger.engine, "test") as conn:
        return [tuple(row) for row in conn.execute(
            select(r.number, k.name_key, n.name).join_from(
                recipient_names, person_names, n.id == r.name_id).join(
                person_name_keys, k.name_id == n.id).order_by(r.number, k.name_key, n.name))]


def _count(ledger: Ledger, table: str) -> int:
    with access.read(ledger.engine, "test") as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def test_a_names_keys_are_its_folded_words_starts() -> None:
    assert fold_name("  José-Maria  O'Neil_Jr. ") == "jose maria o neil jr"
    assert name_keys("Maria da Silva") == ["maria da silva", "da silva", "silva"]
    assert name_keys("Ana Ana") == ["ana ana", "ana"]
    assert name_keys("?!") == [] and name_keys("") == []
    assert len(name_keys(" ".join(f"w{i}" for i in range(20)))) == 6
    assert name_in({"telefone": "1", "NOME": " Zé "}) == "Zé"
    assert name_in({"nome": "  "}) is None and name_in({"cidade": "Recife"}) is None
    assert name_in(None) is None
    low, high = prefix_range("ana")
    assert low <= "ana b" < high and not low <= "anb" < high and low > "an"


def test_a_plan_stores_its_names_and_the_search_finds_words_starts(ledger: Ledger) -> None:
    _plan(ledger, "lote", NAMES)
    keys = _keys(ledger)
    assert (number(0), "jose da silva", "José da Silva") in keys
    assert (number(0), "silva", "José da Silva") in keys
    assert not any(n in (number(4),) for n, _k, _m in keys)  # a blank name: no key
    assert _count(ledger, "recipient_names") == 5  # one row per number, not per key
    assert len(keys) == len(set((n, k) for n, k, _m in keys))  # two steps, one key each

    assert _found(ledger, "jose") == [(number(0), "José da Silva")]
    assert _found(ledger, "JOSÉ DA") == [(number(0), "José da Silva")]
    assert _found(ledger, "da s") == [(number(0), "José da Silva")]
    assert _found(ledger, "silva") == [(number(0), "José da Silva"),
                                       (number(1), "Maria Silva")]
    assert _found(ledger, "maria") == [(number(2), "MARIA-Luíza O'Neil"),
                                       (number(1), "Maria Silva")]
    assert _found(ledger, "maria luiza o'n") == [(number(2), "MARIA-Luíza O'Neil")]
    assert _found(ledger, "neil") == [(number(2), "MARIA-Luíza O'Neil")]
    assert _found(ledger, "ze") == [(number(3), "Zé")]
    assert _found(ledger, "100%") == [(number(5), "100% Ana_B")]
    assert _found(ledger, "ana b") == [(number(5), "100% Ana_B")]
    assert _found(ledger, "oneil") == [] and _found(ledger, "ilva") == []
    assert _found(ledger, "%") == [] and _found(ledger, "  ") == []


def test_a_number_named_in_two_runs_is_found_once_by_either_name(ledger: Ledger) -> None:
    _plan(ledger, "um", ["Ana Souza"])
    _plan(ledger, "dois", ["Ana Souza"], column="name")
    _plan(ledger, "tres", ["Aninha"], column="cliente")
    assert _found(ledger, "ana") == [(number(0), "Ana Souza")]
    assert _found(ledger, "anin") == [(number(0), "Aninha")]
    assert len(_keys(ledger)) == 3  # "ana souza", "souza", "aninha": no copy per run
    assert _count(ledger, "person_names") == 2 and _count(ledger, "recipient_names") == 2


def test_a_name_is_kept_once_and_an_invalid_number_gets_none(ledger: Ledger) -> None:
    _plan(ledger, "um", ["Ana Souza", "Bia Lima", "Ana Souza"])
    run_id = ledger.create_run(campaign_name="dois", channel="whatsapp",
                               definition_path="dois.toml",
                               definition={"name": "dois", "senders": ["s1"],
                                           "steps": [{"type": "text"}]},
                               delivery_mode="at-most-once", timezone="UTC")
    ledger.store_plan(run_id, [[
        {"row": 1, "to": "sem telefone", "step": 0, "kind": "text", "path": "/x",
         "payload": {}, "variables": {"nome": "Sem Número"}, "region": "BR",
         "state": "skipped", "reason": "invalid_number: not a number"},
        {"row": 2, "to": number(7), "step": 0, "kind": "text", "path": "/x", "payload": {},
         "variables": {"nome": "Ana Souza"}, "region": "BR", "state": "planned"}]],
        start_at=T0)
    assert _count(ledger, "person_names") == 2  # "Ana Souza", "Bia Lima"
    assert _count(ledger, "person_name_keys") == 4
    assert _count(ledger, "recipient_names") == 4
    assert _found(ledger, "sem") == []
    assert _found(ledger, "souza") == [(number(0), "Ana Souza"), (number(2), "Ana Souza"),
                                       (number(7), "Ana Souza")]


def test_the_migration_fills_the_names_of_the_rows_planned_before_it(ledger: Ledger) -> None:
    seen = inspect(ledger.engine)
    for table, pk in ((recipient_names, ["number", "name_id"]), (person_names, ["id"]),
                      (person_name_keys, ["name_key", "name_id"])):
        columns = {c["name"]: c["nullable"] for c in seen.get_columns(table.name)}
        assert columns == {c.name: c.nullable for c in table.columns}
        assert seen.get_pk_constraint(table.name)["constrained_columns"] == pk
    assert not seen.get_indexes("recipient_names")  # one tree written per row
    found = {i["name"]: i["column_names"] for i in seen.get_indexes("person_name_keys")}
    assert found[str(NAME_KEYS_OF.name)] == ["name_id"]

    _plan(ledger, "antes", NAMES)
    before = _keys(ledger)
    config = alembic_config(ledger.engine)
    command.downgrade(config, "0025")  # the one-row-per-key table, as 0023 made it
    tables = inspect(ledger.engine).get_table_names()
    assert "recipient_names" in tables and "person_names" not in tables
    command.upgrade(config, "head")
    assert _keys(ledger) == before
    command.downgrade(config, "0022")
    assert "recipient_names" not in inspect(ledger.engine).get_table_names()
    command.upgrade(config, "head")
    assert _keys(ledger) == before
    assert _found(ledger, "silva") == [(number(0), "José da Silva"),
                                       (number(1), "Maria Silva")]


def _forget(ledger: Ledger, digits: str) -> dict[str, int]:
    with access.transaction(ledger.engine, "forget") as conn:
        return lp.forget(conn, digits, needles=[digits], pseudonym="erased:x",
                         number_hash="erased:y", list_reason="erased", now=T0)


def test_forget_leaves_nothing_of_the_name(ledger: Ledger) -> None:
    _plan(ledger, "lote", ["Zuleica Fictícia", "Bento Outro", "Bento Outro"])
    counts = _forget(ledger, number(0))
    assert (counts["recipient_names"], counts["person_names"],
            counts["person_name_keys"]) == (1, 1, 2)
    assert _found(ledger, "zuleica") == [] and _found(ledger, "ficticia") == []
    assert _found(ledger, "bento") == [(number(1), "Bento Outro"), (number(2), "Bento Outro")]
    with access.read(ledger.engine, "test") as conn:
        held = [str(v) for table in ("recipient_names", "person_names", "person_name_keys")
                for row in conn.execute(text(f"SELECT * FROM {table}")) for v in row]
    assert all("zuleica" not in v.casefold() and "ficticia" not in v and number(0) not in v
               for v in held)


def test_forget_keeps_a_name_another_number_has(ledger: Ledger) -> None:
    _plan(ledger, "lote", ["Zuleica Fictícia", "Bento Outro", "Bento Outro"])
    counts = _forget(ledger, number(1))
    assert counts["recipient_names"] == 1 and "person_names" not in counts
    assert _found(ledger, "bento") == [(number(2), "Bento Outro")]
    counts = _forget(ledger, number(2))
    assert (counts["person_names"], counts["person_name_keys"]) == (1, 2)
    assert _found(ledger, "bento") == [] and _count(ledger, "person_names") == 1
