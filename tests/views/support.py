"""A run with second chances built straight in the ledger, as the recycling would leave it:
a voice run of 10 recipients with retry rules (no answer, busy) and an SMS fallback run.

Its first attempts (row: state):

- rows 1–4 answered (reached at the 1st attempt);
- rows 5–8 not answered, each tried again (attempt 2; 5, 6, 8 on no answer, 7 on busy):
  row 5 answered at the 2nd; row 6 not answered again, its 3rd attempt (no answer) due at
  ``DUE``; row 7 not answered, awaiting a verdict; row 8 not answered, final, and fell back
  to an SMS (delivered) in the fallback run;
- row 9 not answered and awaiting a verdict; row 10 not sent yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select, update

from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import DeliveryState as S
from scheduler.settings.retry_rules import FallbackOptions, RecycleOptions, RetryRule, StepRecycle
from scheduler.settings.run import from_snapshot
from tests.factories import T0, number

ZONE = "America/Sao_Paulo"
#: When the 3rd attempt of row 6 is due (10:00 in São Paulo).
DUE = T0 + timedelta(hours=1)
RECYCLE = RecycleOptions(
    steps={0: StepRecycle(rules=(
        RetryRule(on="no_answer", delay_s=3600, max_attempts=3),
        RetryRule(on="busy", delay_s=600, max_attempts=5)))},
    fallback=FallbackOptions(after_s=6 * 3600, when="not_answered", channel="sms"))
VOICE_PATH = "/api/v1/voice/calls"
SMS_PATH = "/api/v1/sms/send"


@dataclass(frozen=True)
class Family:
    """The voice run and its SMS fallback run."""

    parent: int
    fallback: int


def voice_row(i: int) -> dict[str, Any]:
    """Row ``i`` of a voice plan: watched, with its SMS fallback."""
    return {"row": i + 1, "to": number(i), "step": 0, "kind": "voice", "path": VOICE_PATH,
            "payload": {"audioUrl": "https://example.com/a.mp3"},
            "variables": {"nome": f"Ana <b>{i}</b>"}, "region": "BR", "state": "planned",
            "reason": None, "watch": 1,
            "fallback": {"kind": "sms", "path": SMS_PATH, "payload": {"text": f"Olá {i}"}}}


def voice_run(ledger: Ledger, name: str, channel: str, recycle: RecycleOptions) -> int:
    """A run of ``channel`` with these second chances (no rows yet)."""
    definition = {"name": name, "pace": {"rate": "10/s"}, "schedule": {"timezone": ZONE},
                  "steps": [{"type": channel}]}
    options = from_snapshot(definition).model_copy(update={"recycle": recycle})
    return ledger.create_run(campaign_name=name, channel=channel, definition_path="t.toml",
                             definition=definition, delivery_mode="at-most-once",
                             timezone=ZONE, options=options)


def _attempt(conn: Any, parent: dict[str, Any], run_id: int, attempt: int, rule: str,
             state: str, *, watch: int | None = None, due_at: Any = None,
             kind: str = "voice", path: str = VOICE_PATH) -> int:
    """Insert an attempt row copied from the first attempt ``parent`` (as a retry or a
    fallback would)."""
    sent = state != S.PLANNED
    values = {k: parent[k] for k in ("seq", "row", "step", "to", "region", "payload",
                                     "variables")}
    values.update(run_id=run_id, kind=kind, path=path, state=state, attempt=attempt,
                  first_id=parent["id"], rule=rule, watch=watch, attempts=0,
                  due_at=due_at if due_at is not None else T0,
                  dispatched_at=T0 if sent else None,
                  delivered_at=T0 if state == S.DELIVERED else None,
                  ended_at=T0 if state in (S.ANSWERED, S.NOT_ANSWERED) else None)
    new_id = conn.execute(insert(deliveries).values(**values).returning(deliveries.c.id))
    return int(new_id.scalar_one())


def build_family(ledger: Ledger) -> Family:
    """The run described in the module's docstring; its ids."""
    parent = voice_run(ledger, "ura", "voice", RECYCLE)
    ledger.store_plan(parent, [[voice_row(i) for i in range(10)]], start_at=T0)
    child = ledger.create_fallback_run(parent, "sms", from_snapshot({}).to_json())
    d = deliveries.c
    with access.transaction(ledger.engine, "build the attempts") as conn:
        first = {r["row"]: dict(r) for r in conn.execute(
            select(deliveries).where(d.run_id == parent)).mappings()}

        def settle(row: int, state: str, watch: int | None = None) -> None:
            conn.execute(update(deliveries).where(d.id == first[row]["id"]).values(
                state=state, dispatched_at=T0, ended_at=T0, watch=watch))

        for row in (1, 2, 3, 4):
            settle(row, S.ANSWERED)
        for row in (5, 6, 7, 8):
            settle(row, S.NOT_ANSWERED)
        settle(9, S.NOT_ANSWERED, watch=1)
        _attempt(conn, first[5], parent, 2, "no_answer", S.ANSWERED)
        _attempt(conn, first[6], parent, 2, "no_answer", S.NOT_ANSWERED)
        _attempt(conn, first[6], parent, 3, "no_answer", S.PLANNED, watch=1, due_at=DUE)
        _attempt(conn, first[7], parent, 2, "busy", S.NOT_ANSWERED, watch=1)
        _attempt(conn, first[8], parent, 2, "no_answer", S.NOT_ANSWERED)
        _attempt(conn, first[8], child, 3, "fallback", S.DELIVERED, kind="sms",
                 path=SMS_PATH)
    return Family(parent, child)
