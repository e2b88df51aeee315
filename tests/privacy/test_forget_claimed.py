"""``person forget`` and the claim rules: a row the dispatcher already claimed (its request
may be on its way) stays ``dispatching`` with its personal columns blanked, and what the
dispatcher then records (accepted, the next step released by the number it holds) changes
no erased row back and sends nothing more; the person's later steps stay skipped; a second
forget repeats nothing and breaks nothing."""

from __future__ import annotations

from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries.tables import deliveries, events, suppressions
from scheduler.ledger.runs import Ledger
from scheduler.privacy.person import forget_person
from scheduler.privacy.retention import DailyPurge, forget_late_events
from scheduler.settings.privacy import PrivacySettings
from tests.factories import T0, make_run, number
from tests.privacy.support import scan

KEY = b"k" * 32


def _rows(ledger: Ledger, run_id: int) -> list[tuple]:
    d = deliveries.c
    with access.read(ledger.engine) as conn:
        return [tuple(r) for r in conn.execute(
            select(d.id, d.to, d.step, d.state, d.reason, d.payload)
            .where(d.run_id == run_id).order_by(d.id))]


def test_a_claimed_row_goes_its_way_and_nothing_more_is_sent(ledger: Ledger,
                                                              ledger_url: str) -> None:
    run_id = make_run(ledger, 2, steps=2)
    person = number(1)
    rows = _rows(ledger, run_id)
    first = next(r[0] for r in rows if r[1] == person and r[2] == 0)
    with access.transaction(ledger.engine) as conn:  # the dispatcher claims step 0
        assert dq.claim(conn, [(first, "s1")], T0) == {first}
    done = forget_person(ledger.engine, f"+{person}", key=KEY, who="t", via="test",
                         reason="pedido", now=T0)
    assert done.counts["deliveries skipped"] == 1  # step 1; step 0 is on its way
    with access.transaction(ledger.engine) as conn:  # then its answer comes back
        dq.record_accepted(conn, [(first, "MSG-1")], T0)
        dq.release_next_steps(conn, run_id, [(person, 0, "s1")], [0.0, 5.0], T0)
    after = {r[0]: r for r in _rows(ledger, run_id)}
    alias = done.pseudonym
    assert after[first][1:] == (alias, 0, "accepted", None, "{}")
    step1 = next(r for r in after.values() if r[1] == alias and r[2] == 1)
    assert step1[3:5] == ("skipped", "erased")
    with access.read(ledger.engine) as conn:  # nothing of it due: nothing more to send
        due = dq.due_deliveries(conn, run_id, T0, limit=100)
    assert {d.to for d in due} == {number(0)}
    assert scan(ledger_url, [person]) == []
    # the other recipient is as it was
    assert [r for r in after.values() if r[1] == number(0)] == [
        r for r in rows if r[1] == number(0)]
    again = forget_person(ledger.engine, person, key=KEY, who="t", via="test",
                          reason="de novo", now=T0)
    assert again.pseudonym == alias and again.counts["deliveries skipped"] == 0
    with access.read(ledger.engine) as conn:
        listed = conn.execute(select(suppressions.c.number)).scalars().all()
    assert len(listed) == 1 and listed[0].startswith("erased:") and person not in listed[0]


def test_late_events_of_an_erased_person_are_erased_by_the_daily_purge(
        ledger: Ledger, ledger_url: str) -> None:
    make_run(ledger, 2)
    person = number(1)
    forget_person(ledger.engine, person, key=KEY, who="t", via="test", reason="x", now=T0)
    with access.transaction(ledger.engine) as conn:  # the claimed message's late report
        conn.execute(events.insert().values(
            dedupe_key=f"late-{person}", event="message.delivered", number=person,
            received_at=T0, applied_at=T0, payload=f'{{"from": "{person}@c.us"}}'))
        conn.execute(events.insert().values(
            dedupe_key="other", event="message.delivered", number=number(0),
            received_at=T0, applied_at=T0, payload="{}"))
    assert scan(ledger_url, [person])
    assert forget_late_events(ledger.engine, lambda: None, T0) == 0  # no key: nothing known
    daily = DailyPurge(ledger.engine, PrivacySettings(), lambda: T0, key_of=lambda: KEY)
    assert daily.run_if_due() is not None
    assert scan(ledger_url, [person]) == []
    assert scan(ledger_url, [number(0)])  # the other's event is untouched
    assert forget_late_events(ledger.engine, lambda: KEY, T0) == 0
