"""The consent records (migration 0022) are a person's data too: exported with the rest,
and erased (the number replaced by the pseudonym, the record kept, so consent counts stay),
found by the search of every reflected table without a line of their own."""

from __future__ import annotations

from sqlalchemy import MetaData, Table, func, select

from scheduler.ledger import access
from scheduler.ledger.runs import Ledger
from scheduler.privacy.person import export_person, forget_person
from tests.factories import T0, make_run, number
from tests.privacy.support import scan

KEY = b"c" * 32


def _consents(ledger: Ledger) -> Table:
    return Table("consents", MetaData(), autoload_with=ledger.engine)


def test_a_persons_consent_is_exported_and_erased(ledger: Ledger, ledger_url: str) -> None:
    make_run(ledger, 2)
    person = number(1)
    consents = _consents(ledger)
    with access.transaction(ledger.engine) as conn:
        for who in (person, number(0)):
            conn.execute(consents.insert().values(
                number=who, channel="whatsapp", given_at=T0, text="Aceito receber ofertas",
                version="v2", source_file=f"data/optin-{who}.csv", source_row=2,
                imported_at=T0))
    found = export_person(ledger.engine, person, key=None, who="t", via="test", now=T0)
    assert [r["number"] for r in found.tables["consents"]] == [person]
    forget_person(ledger.engine, person, key=KEY, who="t", via="test", reason="x", now=T0)
    assert scan(ledger_url, [person]) == []
    with access.read(ledger.engine) as conn:
        assert conn.execute(select(func.count()).select_from(consents)).scalar_one() == 2
        kept = conn.execute(select(consents.c.number, consents.c.source_file)).all()
    assert (number(0), f"data/optin-{number(0)}.csv") in kept
