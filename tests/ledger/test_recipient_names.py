"""The recipients' names (migration 0023): a plan stores its recipients' names, the search
finds a number by the start of any word of its name (case and accents aside), the
migration fills the table from the rows planned before it, and ``person forget`` leaves
nothing of the name behind; SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from alembic import command
from sqlalchemy import inspect, select, text

from scheduler.core.person_names import fold_name, name_in, name_keys, prefix_range
from scheduler.ledger import access
from scheduler.ledger import privacy as lp
from scheduler.ledger.db import alembic_config
from scheduler.ledger.name_models import NAMES_KEY, recipient_names
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
    n = recipient_names.c
    with access.read(ledger.engine, "test") as conn:
        return [tuple(r) for r in conn.execute(select(n.number, n.name_key, n.name)
                                               .order_by(n.number, n.name_key))]


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


def test_the_migration_fills_the_names_of_the_rows_planned_before_it(ledger: Ledger) -> None:
    seen = inspect(ledger.engine)
    columns = {c["name"]: c["nullable"] for c in seen.get_columns("recipient_names")}
    assert columns == {c.name: c.nullable for c in recipient_names.columns}
    assert seen.get_pk_constraint("recipient_names")["constrained_columns"] == [
        "number", "name_key"]
    found = {i["name"]: i["column_names"] for i in seen.get_indexes("recipient_names")}
    assert found[str(NAMES_KEY.name)] == ["name_key"]

    _plan(ledger, "antes", NAMES)
    before = _keys(ledger)
    config = alembic_config(ledger.engine)
    command.downgrade(config, "0022")
    assert "recipient_names" not in inspect(ledger.engine).get_table_names()
    command.upgrade(config, "head")
    assert _keys(ledger) == before
    assert _found(ledger, "silva") == [(number(0), "José da Silva"),
                                       (number(1), "Maria Silva")]


def test_forget_leaves_nothing_of_the_name(ledger: Ledger) -> None:
    _plan(ledger, "lote", ["Zuleica Fictícia", "Bento Outro"])
    with access.transaction(ledger.engine, "forget") as conn:
        counts = lp.forget(conn, number(0), needles=[number(0)], pseudonym="erased:x",
                           number_hash="erased:y", list_reason="erased", now=T0)
    assert counts["recipient_names"] == 2
    assert _found(ledger, "zuleica") == [] and _found(ledger, "ficticia") == []
    assert _found(ledger, "bento") == [(number(1), "Bento Outro")]
    with access.read(ledger.engine, "test") as conn:
        held = conn.execute(text("SELECT number, name_key, name FROM recipient_names")).all()
    assert all("zuleica" not in " ".join(r).casefold() and number(0) not in r for r in held)
