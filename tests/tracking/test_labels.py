"""Label events kept as each session's current label state: any order, repeats, full syncs."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler.ledger import access
from scheduler.ledger.queries import labels as lq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.label_facts import rank
from scheduler.tracking.replies import OptOutWords
from tests.factories import T0
from tests.tracking.support import iso, ms, table

CTX = ApplyContext(OptOutWords(["SAIR"]))
NOW = T0 + timedelta(hours=1)
A, B, C, D, F = (f"55119000000{i:02d}@s.whatsapp.net" for i in range(1, 6))
LID = "987654321@lid"


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def label_event(kind: str, data: dict[str, Any], when: datetime, *, full: bool = False,
                session: str = "s1", stamp: datetime | None = None) -> dict[str, Any]:
    """A label event as the service sends it (``appstate.label.*`` when ``full``)."""
    name = f"appstate.label.{kind}" if full else f"labels.{kind}"
    body = {**data, "ts": ms(when)}
    if full:
        body["from_full_sync"] = True
    return {"event": name, "sessionId": session, "timestamp": iso(stamp or when),
            "data": body}


def edit(label: int | str, when: datetime, full: bool = False, **fields: Any) -> dict[str, Any]:
    return label_event("edit", {"label_id": label, **fields}, when, full=full)


def chat(label: int | str, jid: str, on: bool, when: datetime, full: bool = False,
         ) -> dict[str, Any]:
    return label_event("association.chat", {"label_id": label, "chat": jid, "labeled": on},
                       when, full=full)


def story() -> list[dict[str, Any]]:
    """Real-time and full-sync events of one session, in the order they happened."""
    return [
        edit(1, at(0), name="VIP", color=1),
        edit("1", at(0), full=True, name="VIP", color=1),  # the snapshot of the same fact
        edit(2, at(0), name="Churned", color=4),
        edit(3, at(0), name="Old", color=2),
        edit(3, at(20), deleted=True),                     # deleted: no name in the event
        chat(1, A, True, at(10)),
        chat(1, A, True, at(10), full=True),
        chat(1, B, True, at(10)),
        chat(1, B, False, at(30)),                          # association removed later
        chat(1, C, True, at(10)),
        chat(1, C, False, at(10), full=True),               # same time: the snapshot wins
        chat(1, D, False, at(15), full=True),
        chat(1, D, True, at(40)),                           # later real time wins
        chat(1, LID, True, at(10)),
        chat(2, F, True, at(10)),
        chat(3, A, True, at(10)),
        label_event("association.message", {"label_id": 1, "chat": A, "message_id": "3EB0AB",
                                            "labeled": True}, at(11)),
        edit(1, at(50), name="VIP ", color=5),              # renamed and recoloured
    ]


def state(ledger: Ledger) -> dict[str, Any]:
    with access.read(ledger.engine) as conn:
        return {"labels": lq.session_labels(conn, ["s1"]),
                "chats": lq.labelled_chats(conn, ["s1"]),
                "messages": lq.labelled_messages(conn, ["s1"])}


def ingest(ledger: Ledger, events: list[dict[str, Any]], rng: random.Random) -> None:
    items = [incoming_from(e, json.dumps(e), NOW) for e in events]
    while items:
        size = rng.randint(1, 4)
        store_and_apply(TrackingStore(ledger), items[:size], CTX, NOW)
        items = items[size:]


EXPECTED = {
    "labels": [lq.LabelRow("s1", "1", "VIP ", 5, False),
               lq.LabelRow("s1", "2", "Churned", 4, False),
               lq.LabelRow("s1", "3", "Old", 2, True)],
    "chats": [lq.LabelledChat("s1", "1", A, A.split("@")[0]),
              lq.LabelledChat("s1", "1", D, D.split("@")[0]),
              lq.LabelledChat("s1", "1", LID, None),
              lq.LabelledChat("s1", "2", F, F.split("@")[0]),
              lq.LabelledChat("s1", "3", A, A.split("@")[0])],
    "messages": [("s1", "1", A, "3eb0ab")],
}


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, "reversed", "in order"])
def test_events_in_any_order_with_repeats_give_the_same_state(
        make_ledger_url: Any, seed: int | str) -> None:
    from tests.factories import open_test_ledger

    events = story()
    rng = random.Random(seed if isinstance(seed, int) else 99)
    if seed == "reversed":
        events.reverse()
    elif isinstance(seed, int):
        # repeats: the same body again, and a new envelope of a fact already sent
        events += [events[rng.randrange(len(events))] for _ in range(4)]
        again = dict(events[8], timestamp=iso(at(99)))
        events.append(again)
        rng.shuffle(events)
    with open_test_ledger(make_ledger_url(f"labels{seed}".replace(" ", ""))) as ledger:
        ingest(ledger, events, rng)
        assert state(ledger) == EXPECTED
        stored = len(table(ledger, "events"))
        ingest(ledger, story(), rng)  # everything once more: nothing changes
        assert state(ledger) == EXPECTED and len(table(ledger, "events")) == stored


def test_a_fact_without_ts_takes_the_envelope_time(tledger: Ledger) -> None:
    late = {"event": "labels.association.chat", "sessionId": "s1", "timestamp": iso(at(5)),
            "data": {"label_id": 7, "chat": A, "labeled": False}}
    early = {"event": "labels.association.chat", "sessionId": "s1", "timestamp": iso(at(1)),
             "data": {"label_id": 7, "chat": A, "labeled": True}}
    ingest(tledger, [late, early], random.Random(1))
    assert state(tledger)["chats"] == []  # the removal at 5 s beats the application at 1 s
    [result] = {e["result"] for e in table(tledger, "events")
                if e["event"] == "labels.association.chat" and "off" in e["result"]}
    assert result == f"label 7 off chat {A} (real time)"


def test_ranks_order_time_then_full_sync_then_tie_break() -> None:
    assert rank(at(1), False, "0") < rank(at(1), True, "0") < rank(at(2), False, "0")
    assert rank(at(1), True, "0") < rank(at(1), True, "1")
    assert rank(T0 - timedelta(days=365 * 80), False, "0").startswith("000000000000000.")
