"""Two runs and their replies built straight in the ledger, as tracking would leave them,
for the inbox and a recipient's story:

- run ``lote`` (2 steps, 3 recipients: Ana 0, Ana 1, Ana 2): step 1 sent through ``s1`` to
  all and read by Ana 0, who clicked its link; step 2 planned;
- run ``aviso`` (1 step, Ana 0 and Ana 1 again): Ana 0's first attempt failed, a retry rule
  made attempt 2 (``no_answer``), delivered through ``s2`` with variant ``B``;
- replies (oldest first): Ana 1 ``PARAR`` (an opt-out, then suppressed) to ``lote``;
  Ana 0 :data:`HOSTILE` to ``lote`` step 1 (to answer); Ana 0 ``sim`` to ``aviso``
  (handled by ``ana``); a stranger's ``oi?`` answering no delivery (to answer);
- one ``messages.delivered`` event for Ana 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select, update

from scheduler.ledger import access
from scheduler.ledger.inbox_models import reply_handled
from scheduler.ledger.queries.tables import (
    deliveries,
    events,
    link_clicks,
    links,
    replies,
    suppressions,
)
from scheduler.ledger.runs import Ledger
from scheduler.ledger.story_reads import DECISIONS
from tests.dashboard.web_support import HOSTILE
from tests.factories import T0, number, plan_rows

#: A number no run sent to.
STRANGER = "5511900000099"


@dataclass(frozen=True)
class World:
    """The runs and replies of the module's docstring, by name."""

    lote: int
    aviso: int
    replies: dict[str, int]


def _run(ledger: Ledger, name: str, recipients: int, steps: int) -> int:
    definition = {"name": name, "senders": ["s1", "s2"], "pace": {"rate": "10/s"},
                  "schedule": {"timezone": "America/Sao_Paulo"},
                  "steps": [{"type": "text"} for _ in range(steps)]}
    run_id = ledger.create_run(campaign_name=name, channel="whatsapp",
                               definition_path=f"{name}.toml", definition=definition,
                               delivery_mode="at-most-once", timezone="America/Sao_Paulo")
    ledger.store_plan(run_id, [plan_rows(recipients, steps=steps)], start_at=T0)
    return run_id


def _reply(conn: Any, *, number: str, text: str, at_min: int, delivery: dict[str, Any] | None,
           opt_out: bool = False) -> int:
    values: dict[str, Any] = {
        "number": number, "kind": "text", "text": text, "opt_out": opt_out,
        "received_at": T0 + timedelta(minutes=at_min), "session_id": "s1",
        "delivery_id": delivery["id"] if delivery else None,
        "run_id": delivery["run_id"] if delivery else None}
    if "to_answer" in replies.c:  # the conditional steps' flag, as tracking sets it
        values["to_answer"] = not opt_out
    return int(conn.execute(insert(replies).values(**values).returning(replies.c.id))
               .scalar_one())


def build_world(ledger: Ledger) -> World:
    """The ledger of the module's docstring; its ids."""
    lote = _run(ledger, "lote", 3, 2)
    aviso = _run(ledger, "aviso", 2, 1)
    d = deliveries.c
    with access.transaction(ledger.engine, "build the inbox's world") as conn:
        rows = {(r["run_id"], r["to"], r["step"]): dict(r) for r in conn.execute(
            select(deliveries).where(d.run_id.in_([lote, aviso]))).mappings()}
        for i in range(3):
            row = rows[(lote, number(i), 0)]
            read = T0 + timedelta(minutes=3) if i == 0 else None
            conn.execute(update(deliveries).where(d.id == row["id"]).values(
                state="read" if read else "delivered", sender="s1",
                message_id=f"M{i}", message_id_norm=f"m{i}",
                dispatched_at=T0, accepted_at=T0, sent_at=T0 + timedelta(seconds=5),
                delivered_at=T0 + timedelta(minutes=1), read_at=read, updated_at=T0))
        first = rows[(aviso, number(0), 0)]
        conn.execute(update(deliveries).where(d.id == first["id"]).values(
            state="failed", sender="s2", dispatched_at=T0 + timedelta(minutes=10),
            failed_at=T0 + timedelta(minutes=11), last_error="HTTP 500: server error",
            verdict="tried again: no answer (attempt 2 of 3)",
            updated_at=T0 + timedelta(minutes=12)))
        values = {k: first[k] for k in ("seq", "row", "step", "to", "region", "payload",
                                        "variables", "kind", "path")}
        retry = int(conn.execute(insert(deliveries).values(
            **values, run_id=aviso, state="delivered", attempt=2, first_id=first["id"],
            rule="no_answer", sender="s2", variant="B", attempts=1,
            dispatched_at=T0 + timedelta(minutes=20),
            delivered_at=T0 + timedelta(minutes=21), updated_at=T0 + timedelta(minutes=21),
        ).returning(d.id)).scalar_one())
        ana0 = rows[(lote, number(0), 0)]
        conn.execute(insert(links).values(run_id=lote, link=1, step=0,
                                          url="https://example.com/oferta"))
        conn.execute(insert(link_clicks).values(
            run_id=lote, link=1, delivery_id=ana0["id"], at=T0 + timedelta(minutes=4),
            counted=True, user_agent="Mozilla/5.0"))
        conn.execute(insert(events).values(
            dedupe_key="w-1", event="messages.delivered", channel="whatsapp",
            session_id="s1", number=number(0), message_id_norm="m0",
            occurred_at=T0 + timedelta(minutes=1), received_at=T0 + timedelta(minutes=1),
            applied_at=T0 + timedelta(minutes=1), result="applied",
            payload='{"event": "messages.delivered", "data": {"status": "delivered"}}'))
        found = {
            "opt_out": _reply(conn, number=number(1), text="PARAR", at_min=5, opt_out=True,
                              delivery=rows[(lote, number(1), 0)]),
            "hostile": _reply(conn, number=number(0), text=HOSTILE, at_min=6, delivery=ana0),
            "sim": _reply(conn, number=number(0), text="sim", at_min=25,
                          delivery={"id": retry, "run_id": aviso}),
            "stranger": _reply(conn, number=STRANGER, text="oi?", at_min=30, delivery=None),
        }
        conn.execute(insert(suppressions).values(
            number=number(1), source="reply", reason="replied with an opt-out word",
            created_at=T0 + timedelta(minutes=5)))
        if DECISIONS is not None:  # the conditional steps' decision on Ana 0's step 2
            step2 = rows[(lote, number(0), 1)]
            conn.execute(update(deliveries).where(d.id == step2["id"]).values(
                state="skipped", reason="condition: no reply matched ^(1|sim)",
                updated_at=T0 + timedelta(hours=6)))
            conn.execute(insert(DECISIONS).values(
                run_id=lote, delivery_id=step2["id"], step=1, to=number(0),
                looked_id=ana0["id"], outcome="skip", reason="no reply matched ^(1|sim)",
                decided_at=T0 + timedelta(hours=6), reply_id=None,
                late_at=T0 + timedelta(hours=7),
                late_note="a reply came after the decision (sim); it stands"))
        conn.execute(insert(reply_handled).values(
            reply_id=found["sim"], handled_by="ana", handled_at=T0 + timedelta(minutes=26)))
    return World(lote=lote, aviso=aviso, replies=found)
