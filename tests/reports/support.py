"""Report scenarios: real ledgers holding runs in every state, with replies and opt-outs.

``make_whatsapp_run`` stores the main scenario (the ``whatsapp_run`` fixture: 20
recipients, one step, two senders)::

    rows 0-5 read · 6-9 delivered · 10-11 sent · 12-13 accepted · 14 failed · 15 unknown
    16 planned · 17 skipped (invalid number) · 18 skipped (duplicate) · 19 skipped
    (suppressed before the run); replies from rows 0, 1 and 3 (row 3 opts out).

Row 2's CSV column ``nome`` is a formula; row 0 replies ``+5511 quero``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update

from scheduler.ledger.queries import dispatch as dq
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from tests.factories import T0, FakeClock, number

ZONE = "America/Sao_Paulo"
FORMULA = '=HYPERLINK("http://x","y")'
REPLY = "+5511 quero"


@dataclass
class Scenario:
    """A stored run and what the report must say about it."""

    ledger: Ledger
    run_id: int
    states: dict[str, int]
    funnel: dict[str, int]
    numbers: list[str] = field(default_factory=list)


def store(
    ledger: Ledger,
    rows: list[dict[str, Any]],
    *,
    name: str = "promo",
    channel: str = "whatsapp",
    kind: str = "text",
) -> int:
    """A run of ``rows`` (dicts with ``to``, ``state``, ``reason``, ``variables``)."""
    run_id = ledger.create_run(
        campaign_name=name,
        channel=channel,
        definition_path=f"campaigns/{name}.toml",
        definition={"name": name, "senders": ["s1", "s2"]},
        delivery_mode="at-most-once",
        timezone=ZONE,
    )
    path = {
        "text": "/api/v1/messages/send/text",
        "sms": "/api/v1/sms/send",
        "voice": "/api/v1/voice/bulk",
    }[kind]
    plan = [
        {
            "row": i + 1,
            "step": 0,
            "kind": kind,
            "path": path,
            "payload": {"text": "oi"},
            "region": "BR",
            **row,
        }
        for i, row in enumerate(rows)
    ]
    ledger.store_plan(run_id, [plan], start_at=ledger.clock())
    return run_id


def ids_by_row(ledger: Ledger, run_id: int) -> list[int]:
    """Delivery ids in plan order."""
    d = tables.deliveries
    with ledger.engine.connect() as conn:
        return list(
            conn.execute(
                d.select().with_only_columns(d.c.id).where(d.c.run_id == run_id).order_by(d.c.seq)
            ).scalars()
        )


def set_rows(ledger: Ledger, ids: list[int], **values: Any) -> None:
    """Plain Core update of some deliveries."""
    d = tables.deliveries
    with ledger.engine.begin() as conn:
        conn.execute(update(d).where(d.c.id.in_(ids)).values(**values))


def add_reply(
    ledger: Ledger,
    run_id: int,
    delivery_id: int,
    to: str,
    text: str,
    at: datetime,
    *,
    opt_out: bool = False,
) -> None:
    """A reply row plus the delivery's reply text and time, as tracking stores them."""
    with ledger.engine.begin() as conn:
        conn.execute(
            tables.replies.insert().values(
                delivery_id=delivery_id,
                run_id=run_id,
                number=to,
                session_id="s1",
                kind="text",
                text=text,
                opt_out=opt_out,
                received_at=at,
            )
        )
    set_rows(ledger, [delivery_id], reply_text=text, replied_at=at)


def make_whatsapp_run(ledger: Ledger, clock: FakeClock) -> Scenario:
    """Store the main scenario in ``ledger`` (whose clock is ``clock``)."""
    clock.now = T0 - timedelta(days=1)
    ledger.suppress(number(19), source="import", reason="opt-out list")
    clock.now = T0
    rows = []
    for i in range(20):
        variables = {"nome": f"Cliente {i}", "cidade": "São Paulo", "plano": str(i * 10)}
        if i == 2:
            variables["nome"] = FORMULA
        if i == 5:
            variables["nome"] = "José Conceição"
        state, reason, to = "planned", None, number(i)
        if i == 17:
            state, reason, to = "skipped", "invalid_number: too short", "1234"
        if i == 18:
            state, reason, to = "skipped", "duplicate", number(1)
        rows.append({"to": to, "state": state, "reason": reason, "variables": variables})
    run_id = store(ledger, rows)
    ids = ids_by_row(ledger, run_id)
    ledger.set_status(run_id, "running")
    with ledger.engine.begin() as conn:
        for i in range(16):
            dq.claim(conn, [(ids[i], "s1" if i % 2 == 0 else "s2")], T0 + timedelta(minutes=10 * i))
        for i in range(14):
            dq.record_accepted(
                conn, [(ids[i], f"MSG-{i:03d}")], T0 + timedelta(minutes=10 * i, seconds=1)
            )
        dq.record_final(
            conn,
            [(ids[14], "", "400: number is not on WhatsApp")],
            "failed",
            T0 + timedelta(minutes=140, seconds=1),
        )
        dq.record_final(
            conn,
            [(ids[15], "", "no messages.sent after a crash")],
            "unknown",
            T0 + timedelta(minutes=150, seconds=30),
        )
    for i in range(12):
        at = T0 + timedelta(minutes=10 * i, seconds=5)
        state = "read" if i < 6 else "delivered" if i < 10 else "sent"
        values: dict[str, Any] = {"state": state, "sent_at": at}
        if i < 10:
            values["delivered_at"] = at + timedelta(seconds=10)
        if i < 6:
            values["read_at"] = at + timedelta(minutes=3)
        set_rows(ledger, [ids[i]], **values)
    add_reply(ledger, run_id, ids[0], number(0), REPLY, T0 + timedelta(minutes=30))
    add_reply(ledger, run_id, ids[1], number(1), "Obrigado! 😀", T0 + timedelta(minutes=40))
    add_reply(ledger, run_id, ids[3], number(3), "SAIR", T0 + timedelta(minutes=50), opt_out=True)
    clock.now = T0 + timedelta(minutes=50, seconds=1)
    ledger.suppress(number(3), source="reply", reason="SAIR")
    clock.now = T0 + timedelta(hours=3)
    ledger.set_status(run_id, "completed")
    return Scenario(
        ledger,
        run_id,
        states={
            "read": 6,
            "delivered": 4,
            "sent": 2,
            "accepted": 2,
            "failed": 1,
            "unknown": 1,
            "planned": 1,
            "skipped": 3,
        },
        funnel={"Planned": 17, "Sent": 14, "Delivered": 10, "Read": 6, "Replied": 3},
        numbers=[r["to"] for r in rows],
    )


def details_run(
    ledger: Ledger, channel: str, details: list[dict[str, Any] | None], states: list[str]
) -> int:
    """An SMS or voice run whose rows carry ``details`` JSON, in the given states."""
    kind = "sms" if channel == "sms" else "voice"
    rows = [
        {"to": number(i), "state": "planned", "reason": None, "variables": {"nome": f"C{i}"}}
        for i in range(len(details))
    ]
    run_id = store(ledger, rows, name=f"{channel}-run", channel=channel, kind=kind)
    ids = ids_by_row(ledger, run_id)
    for i, (extra, state) in enumerate(zip(details, states, strict=True)):
        at = T0 + timedelta(minutes=i)
        set_rows(
            ledger,
            [ids[i]],
            state=state,
            sender="account",
            dispatched_at=at,
            accepted_at=at,
            message_id=f"M{i}",
            details=json.dumps(extra) if extra is not None else None,
        )
    return run_id


#: Recipients of :func:`make_demo_like_run` (each gets two steps, like the demo campaign).
DEMO_PEOPLE = 120
#: Hours (São Paulo) in which :func:`make_demo_like_run` sends: 09:00 to 18:59.
DEMO_HOURS = 10


def make_demo_like_run(ledger: Ledger, clock: FakeClock) -> Scenario:
    """A run shaped like the demo's, spread over ten hours: 120 people × 2 steps (text, then
    image), two senders; 4 people skipped at planning (both steps: invalid number or
    duplicate), then every other row sent between 09:00 and 18:59 São Paulo time, 7 in 8
    delivered and half of those read; 2 failed; 9 replies (1 opt-out)."""
    clock.now = T0
    rows = []
    for person in range(DEMO_PEOPLE):
        skip = {0: "invalid_number: too short", 1: "invalid_number: too short",
                2: "duplicate", 3: "duplicate"}.get(person)  # fmt: skip
        for step in (0, 1):
            rows.append({"row": person + 1, "step": step, "kind": "text" if step == 0 else "image",
                         "to": number(person), "state": "skipped" if skip else "planned",
                         "reason": skip, "variables": {"nome": f"Cliente {person}",
                                                       "cidade": "Campinas"}})  # fmt: skip
    run_id = store(ledger, rows, name="demo")
    ids = ids_by_row(ledger, run_id)
    sent = [(i, delivery) for i, delivery in enumerate(ids) if rows[i]["state"] == "planned"]
    ledger.set_status(run_id, "running")
    span = timedelta(hours=DEMO_HOURS) / len(sent)
    with ledger.engine.begin() as conn:
        for k, (_i, delivery) in enumerate(sent):
            at = T0 + span * k
            dq.claim(conn, [(delivery, "demo-01" if k % 2 == 0 else "demo-02")], at)
            if k % 97 == 5:
                dq.record_final(conn, [(delivery, "", "400: number is not on WhatsApp")],
                                "failed", at + timedelta(seconds=1))  # fmt: skip
            else:
                dq.record_accepted(conn, [(delivery, f"DEMO-{k:04d}")], at + timedelta(seconds=1))
    for k, (_i, delivery) in enumerate(sent):
        if k % 97 == 5:
            continue
        at = T0 + span * k + timedelta(seconds=2)
        values: dict[str, Any] = {"state": "sent", "sent_at": at}
        if k % 8:
            values |= {"state": "delivered", "delivered_at": at + timedelta(seconds=5)}
        if k % 8 and k % 2:
            values |= {"state": "read", "read_at": at + timedelta(minutes=2)}
        set_rows(ledger, [delivery], **values)
    for k in range(9):
        i, delivery = sent[k * 24 + 1]
        add_reply(ledger, run_id, delivery, rows[i]["to"], "SAIR" if k == 4 else "Obrigado!",
                  T0 + span * (k * 24 + 1) + timedelta(minutes=5), opt_out=k == 4)  # fmt: skip
    clock.now = T0 + timedelta(hours=DEMO_HOURS, minutes=5)
    ledger.set_status(run_id, "completed")
    return Scenario(ledger, run_id, states=ledger.counts(run_id), funnel={},
                    numbers=[r["to"] for r in rows])  # fmt: skip
