"""A stored event whose payload no longer parses is said, and does not stop the others.

Stored events are parsed again when they are applied later: at the next start (left
unapplied), when the dispatcher records the message id they name, when a ``messages.sent``
proves a send in doubt. A payload that cannot be parsed any more (the event models changed,
or someone edited the row) must not hold back the events stored with it: it is left as it
is, and its result, as ``campaign events`` shows it, says why.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingBatch, TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.counts import event_json, stored_events
from scheduler.tracking.event_store import apply_unapplied, store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.matching import match_stored
from scheduler.tracking.replies import OptOutWords
from tests.factories import T0, make_run, number
from tests.tracking.support import accepted_run, mid, receipt, rows, sent

CTX = ApplyContext(OptOutWords(["SAIR"]))
NOW = T0 + timedelta(hours=1)
#: A ``messages.sent`` whose ``data`` is not a message: the event model refuses it.
WRONG_SHAPE = json.dumps({"event": "messages.sent", "sessionId": "s1", "data": "gone"})
NOT_JSON = '{"event": "message.delivered", "data": {'
PARSE_ERROR = "error: stored payload does not parse: "


def ingest(ledger: Ledger, *events: dict[str, Any]) -> list[int]:
    """Store and apply events as the receiver does; their event ids."""
    items = [incoming_from(e, json.dumps(e), NOW) for e in events]
    ids = store_and_apply(TrackingStore(ledger), items, CTX, NOW).ids
    assert None not in ids
    return [i for i in ids if i is not None]


def spoil(ledger: Ledger, event_id: int, payload: str) -> None:
    """Replace a stored event's payload, as a change of the event models would see it."""
    e = tables.events
    with ledger.engine.begin() as conn:
        conn.execute(update(e).where(e.c.id == event_id).values(payload=payload))


def unapply(ledger: Ledger, *event_ids: int) -> None:
    """Leave events stored but not applied, as a crash before the apply would."""
    e = tables.events
    with ledger.engine.begin() as conn:
        conn.execute(update(e).where(e.c.id.in_(event_ids))
                     .values(applied_at=None, result=None))


def results(ledger: Ledger) -> dict[int, str]:
    """Each stored event's result, as ``campaign events --json`` prints it."""
    return {row["id"]: event_json(row)["result"] for row in stored_events(ledger)}


def test_at_start_the_others_are_applied_and_the_broken_one_says_why(
        tledger: Ledger, caplog: pytest.LogCaptureFixture) -> None:
    first, second, third = ingest(tledger, *(sent(number(i), mid(i)) for i in range(3)))
    run_id = accepted_run(tledger, 3)
    unapply(tledger, first, second, third)
    spoil(tledger, first, WRONG_SHAPE)
    spoil(tledger, second, NOT_JSON)

    count, _ = apply_unapplied(TrackingStore(tledger), CTX, NOW)

    assert count == 3
    assert [r["state"] for r in rows(tledger, run_id)] == ["accepted", "accepted", "sent"]
    said = results(tledger)
    assert said[first] == PARSE_ERROR + "messages.sent: malformed event (data: Input " \
        "should be a valid dictionary or instance of MessageData)"
    assert said[second].startswith(PARSE_ERROR) and "unexpected end of data" in said[second]
    assert said[third] == "sent"
    assert f"stored event {first} could not be parsed again" in caplog.text


def test_an_early_event_that_no_longer_parses_does_not_hold_back_the_others(
        tledger: Ledger) -> None:
    run_id = make_run(tledger, 2)
    broken, good = ingest(tledger, receipt("message.delivered", number(0), mid(0), T0),
                          receipt("message.read", number(1), mid(1), T0))
    assert set(results(tledger).values()) == {"unmatched"}
    spoil(tledger, broken, NOT_JSON)
    d = tables.deliveries
    with tledger.engine.begin() as conn:  # the dispatcher records both accepted sends
        for i in range(2):
            conn.execute(update(d).where(d.c.run_id == run_id, d.c.to == number(i))
                         .values(state="accepted", sender="s1", accepted_at=T0,
                                 message_id=mid(i), message_id_norm=mid(i).lower()))
        applied = match_stored(TrackingBatch(conn), [mid(0), mid(1)], NOW)

    assert applied.results == {good: "read"}
    assert [r["state"] for r in rows(tledger, run_id)] == ["accepted", "read"]
    said = results(tledger)
    assert said[broken].startswith(PARSE_ERROR) and said[good] == "read"


def test_a_receipt_spoiled_before_its_send_is_proven_is_said_and_the_send_still_proven(
        tledger: Ledger) -> None:
    run_id = make_run(tledger, 1)
    d = tables.deliveries
    with tledger.engine.begin() as conn:  # left by a crash: claimed, no message id
        conn.execute(update(d).where(d.c.run_id == run_id).values(
            state="dispatching", sender="s1", dispatched_at=T0))
    [stored] = ingest(tledger, receipt("message.delivered", number(0), mid(0), T0))
    spoil(tledger, stored, WRONG_SHAPE.replace("messages.sent", "message.delivered"))

    [proof] = ingest(tledger, sent(number(0), mid(0), T0))

    [row] = rows(tledger, run_id)
    assert (row["state"], row["sent_at"], row["delivered_at"]) == ("sent", T0, None)
    said = results(tledger)
    assert said[proof] == f"proved delivery {row['id']} sent"
    assert said[stored] == PARSE_ERROR + "message.delivered: malformed event (data: " \
        "Input should be a valid dictionary or instance of Receipt)"
