"""A ``messages.sent`` that arrives before its send is recorded is matched when it is.

The service often posts ``messages.sent`` before the dispatcher has written down the
``messageId`` of its answer. On PostgreSQL 188 such events once stayed ``unmatched`` for
ever and their deliveries ``accepted``; these tests store the event first, then record the
accept, on whichever database this pass runs.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

from sqlalchemy import text, update

from scheduler.dispatch.options import DispatchOptions
from scheduler.ledger.changes import Changes
from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.service.client import ServiceClient
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from scheduler.wiring import run_store
from tests.engine import dispatcher_for
from tests.factories import T0, make_run, number
from tests.tracking.support import mid, receipt, rows, sent, table, wait_until

CTX = ApplyContext(OptOutWords(["SAIR"]))
EVENT_AT = T0 + timedelta(milliseconds=300)
ANSWERED_AT = T0 + timedelta(seconds=1)


def ingest(ledger: Ledger, *events: dict[str, Any]) -> None:
    """Store and apply events as the receiver does."""
    items = [incoming_from(e, json.dumps(e), EVENT_AT) for e in events]
    store_and_apply(TrackingStore(ledger), items, CTX, EVENT_AT)


def in_flight(ledger: Ledger, recipients: int = 1, *, steps: int = 1) -> int:
    """A run whose first step to each recipient is claimed: ``dispatching`` on s1."""
    run_id = make_run(ledger, recipients, steps=steps)
    with ledger.engine.begin() as conn:
        ids = [r["id"] for r in rows(ledger, run_id) if r["step"] == 0]
        assert dq.claim(conn, [(i, "s1") for i in ids], T0) == set(ids)
    return run_id


def record_accept(ledger: Ledger, run_id: int, accepted: list[tuple[int, str]]) -> None:
    """The dispatcher's commit of the service's answers, then tracking's matching of the
    events stored before it (as ``Settling`` does after each write)."""
    stores = run_store(ledger, run_id)
    stores.queue.write([(Changes(accepted=accepted), ANSWERED_AT)])
    stores.match_events([m for _i, m in accepted], ANSWERED_AT)


def lid_sent(i: int) -> dict[str, Any]:
    """``messages.sent`` naming the recipient by a LID, not a phone number: the event alone
    cannot tell which delivery it is about, only its message id can."""
    event = sent(number(i), mid(i), EVENT_AT)
    event["data"]["to"]["jid"] = f"20000000000{i}@lid"
    return event


def test_an_event_stored_first_is_matched_when_the_accept_is_recorded(tledger: Ledger) -> None:
    run_id = in_flight(tledger, 2)
    ingest(tledger, lid_sent(0), lid_sent(1),
           receipt("message.delivered", number(1), mid(1), EVENT_AT))
    assert {e["result"] for e in table(tledger, "events")} == {"unmatched"}

    first, second = rows(tledger, run_id)
    record_accept(tledger, run_id, [(first["id"], mid(0)), (second["id"], mid(1))])

    first, second = rows(tledger, run_id)
    assert (first["state"], first["sent_at"], first["accepted_at"]) == ("sent", EVENT_AT,
                                                                       ANSWERED_AT)
    assert (second["state"], second["delivered_at"], second["accepted_at"]) == (
        "delivered", EVENT_AT, ANSWERED_AT)
    assert sorted(e["result"] for e in table(tledger, "events")) == ["delivered", "sent",
                                                                      "sent"]


def test_an_event_that_proved_the_send_first_still_gets_its_accept_time(
        tledger: Ledger) -> None:
    run_id = in_flight(tledger)
    ingest(tledger, sent(number(0), mid(0), EVENT_AT))  # proves the in-flight row sent
    [row] = rows(tledger, run_id)
    assert (row["state"], row["accepted_at"]) == ("sent", None)

    record_accept(tledger, run_id, [(row["id"], mid(0))])

    [row] = rows(tledger, run_id)
    assert (row["state"], row["message_id_norm"]) == ("sent", mid(0).lower())
    assert (row["sent_at"], row["accepted_at"]) == (EVENT_AT, ANSWERED_AT)


def _blocked(ledger: Ledger, db_backend: str) -> bool:
    """Whether some session of this database waits for a lock (PostgreSQL can tell)."""
    if db_backend != "postgresql":
        time.sleep(0.3)  # SQLite cannot tell; give the writer time to reach its wait
        return True
    with ledger.engine.connect() as conn:
        waiting = conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'")).scalar()
    return bool(waiting)


def test_an_event_stored_while_the_accept_is_being_committed_is_matched(
        tledger: Ledger, db_backend: str) -> None:
    """The race PostgreSQL lost: the receiver stores the event while the dispatcher's
    transaction holds the answer, not yet committed."""
    run_id = in_flight(tledger)
    [row] = rows(tledger, run_id)
    errors: list[BaseException] = []

    def receiver() -> None:
        try:
            ingest(tledger, sent(number(0), mid(0), EVENT_AT))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=receiver)
    with tledger.engine.begin() as conn:
        run_store(tledger, run_id).queue.apply(conn, Changes(accepted=[(row["id"], mid(0))]),
                                         ANSWERED_AT)
        thread.start()
        wait_until(lambda: _blocked(tledger, db_backend))
    thread.join(timeout=30)
    assert not thread.is_alive() and not errors, errors

    [row] = rows(tledger, run_id)
    assert (row["state"], row["sent_at"], row["accepted_at"]) == ("sent", EVENT_AT,
                                                                  ANSWERED_AT)
    [event] = table(tledger, "events")
    assert event["result"] == "sent"


def test_a_receiver_started_later_matches_sends_left_unmatched_by_an_older_version(
        tledger: Ledger, make_receiver) -> None:
    run_id = in_flight(tledger)
    ingest(tledger, lid_sent(0))
    d = tables.deliveries
    with tledger.engine.begin() as conn:  # what an older version left: accepted, unmatched
        conn.execute(update(d).where(d.c.run_id == run_id).values(
            state="accepted", message_id=mid(0), message_id_norm=mid(0).lower(),
            accepted_at=ANSWERED_AT))

    make_receiver(tledger)

    wait_until(lambda: rows(tledger, run_id)[0]["state"] == "sent")
    assert rows(tledger, run_id)[0]["sent_at"] == EVENT_AT
    assert table(tledger, "events")[0]["result"] == "sent"


class _EventFirst:
    """The service's client, but every send's ``messages.sent`` reaches the receiver (is
    stored and applied) before the dispatcher gets the send's answer: the race, each time."""

    def __init__(self, client: ServiceClient, ledger: Ledger) -> None:
        self.client, self.ledger = client, ledger

    async def send_prepared(self, path: str, body: dict[str, Any]) -> Any:
        answer = await self.client.send_prepared(path, body)
        assert answer.messageId is not None
        ingest(self.ledger, sent(body["to"], answer.messageId, EVENT_AT,
                                 session=body["sessionId"]))
        return answer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


async def test_the_dispatcher_matches_the_events_that_came_before_its_answers(
        tledger: Ledger, service_factory) -> None:
    """No receiver runs here: the dispatcher itself has tracking match the events stored
    before it recorded each answer, once that record is committed."""
    service = service_factory()
    await service.connect("s1")
    run_id = make_run(tledger, 3)
    async with ServiceClient(service.base_url, service.api_key) as client:
        options = DispatchOptions(senders=("s1",), rate=50.0, timezone="America/Sao_Paulo")
        result = await dispatcher_for(tledger, _EventFirst(client, tledger), run_id,
                                      options).run()
    assert result.counts == {"sent": 3}
    assert {r["sent_at"] for r in rows(tledger, run_id)} == {EVENT_AT}
    assert [e["result"] for e in table(tledger, "events")] == ["sent"] * 3
