"""The dispatcher's decisions on a run with more waiting rows than one look reads: a reply
to a recipient far down the run decides their step within a few looks, not once every row
before theirs is decided (pure: a store held in memory, fixed datetimes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from scheduler.dispatch.conversation import decisions as decisions_module
from scheduler.dispatch.conversation.decisions import Decisions
from scheduler.ledger.conversation_rows import DecisionWrite, GatedRow, Seen, SeenReply
from scheduler.settings.conversation import ConversationOptions, StepCondition

SENT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONFIRM = StepCondition(step=1, name="confirmar", looks_at=0, kind="reply_matches",
                        pattern="^1", wait_s=24 * 3600.0, text='reply_matches = "^1"')


class MemoryStore:
    """Waiting rows in id order; a decision takes its row out."""

    def __init__(self, rows: Sequence[GatedRow]) -> None:
        self.rows = {r.id: r for r in rows}
        self.reads = 0

    def gate(self, steps: Sequence[int]) -> int:
        return len(self.rows)

    def gated(self, looks: Mapping[int, int], *, limit: int = 2000, after_id: int = 0,
              clicks: bool = False) -> list[GatedRow]:
        self.reads += 1
        return [self.rows[i] for i in sorted(self.rows) if i > after_id][:limit]

    def decide(self, writes: Sequence[DecisionWrite], now: datetime) -> list[DecisionWrite]:
        for w in writes:
            del self.rows[w.row.id]
        return list(writes)


def row(i: int, *replies: SeenReply) -> GatedRow:
    return GatedRow(i, f"55119{i:08d}", 1, 1000 + i, "s1",
                    Seen(state="delivered", sent_at=SENT, replies=replies))


def test_a_reply_past_one_looks_pages_is_decided_within_a_few_looks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decisions_module, "PAGE_ROWS", 3)
    monkeypatch.setattr(decisions_module, "PAGES", 2)
    answered = SeenReply(7, SENT + timedelta(minutes=5), "1 sim")
    store = MemoryStore([row(i) for i in range(1, 30)] + [row(30, answered)])
    decisions = Decisions(store, ConversationOptions(conditions=(CONFIRM,)), [0.0, 0.0],
                          retry_horizon_s=360)
    now = SENT + timedelta(minutes=6)
    decisions.start(SENT)
    decided = sum(decisions.check(now + timedelta(seconds=2 * n)) for n in range(6))
    assert decided == 1 and 30 not in store.rows  # the 30th row, 5 pages in, went
    assert len(store.rows) == 29  # the others wait for their reply, 24 h
    # while rows are left unread the dispatcher is woken to read on, then the deadline
    assert decisions.wake is not None and decisions.wake <= SENT + timedelta(hours=24, seconds=2)


def test_decisions_held_back_from_the_timeline_wake_the_dispatcher_to_be_told() -> None:
    """Decisions taken within a minute of the last told are told a minute later, not at
    the next deadline (a rehearsal said 'goes to 4' an hour after they went)."""
    late = [SeenReply(100 + i, SENT + timedelta(minutes=i), "1") for i in range(3)]
    store = MemoryStore([row(1, late[0]), row(2), row(3)])
    decisions = Decisions(store, ConversationOptions(conditions=(CONFIRM,)), [0.0, 0.0],
                          retry_horizon_s=360)
    decisions.start(SENT)
    first = SENT + timedelta(minutes=1)
    assert decisions.check(first) == 1 and len(decisions.told(first)) == 1
    store.rows[2] = row(2, late[1])
    second = first + timedelta(seconds=10)
    assert decisions.check(second) == 1 and decisions.told(second) == []
    assert decisions.wake == first + timedelta(seconds=60)  # not row 3's deadline, 24 h on
    lines = decisions.told(decisions.wake)
    assert lines == ["step 1 'confirmar' (reply_matches = \"^1\"): goes to 1, not to 0"]
