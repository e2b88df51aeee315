"""Steps that follow replies, as the ledger hands them over: plain data (no queries).

:class:`Seen` is what the ledger holds of the step a condition looks at, for one recipient
(:func:`scheduler.dispatch.conversation.rules.decide` reads it); :class:`GatedRow` a row
that waits for its condition's decision with its :class:`Seen`; :class:`DecisionWrite` one
decision to store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class SeenReply:
    """A reply tied to the looked-at step: its id, when it was sent, its text and choices
    (a button's or list row's id and title, poll options), whether it opted out."""

    id: int
    at: datetime
    text: str | None
    choices: tuple[str, ...] = ()
    opt_out: bool = False


@dataclass(frozen=True, slots=True)
class Seen:
    """What the ledger holds of the looked-at step for one recipient, now."""

    state: str
    sent_at: datetime | None
    read_at: datetime | None = None
    clicked_at: datetime | None = None
    replies: tuple[SeenReply, ...] = field(default_factory=tuple)
    suppressed: bool = False


@dataclass(frozen=True, slots=True)
class GatedRow:
    """A planned row waiting for its condition: the row, its step, and the looked-at step
    (its row id and sender, None when the recipient has no such row)."""

    id: int
    to: str
    step: int
    looked_id: int | None
    sender: str | None
    seen: Seen


@dataclass(frozen=True, slots=True)
class DecisionWrite:
    """One decision to store: ``outcome`` ``go`` (due at ``due_at``, sent by ``sender``)
    or ``skip``; ``reason`` in words; ``reply`` the reply that decided, if one did;
    ``branch`` the recipient's steps skipped with a skipped one (its branch)."""

    row: GatedRow
    outcome: str
    reason: str
    due_at: datetime | None = None
    reply: int | None = None
    branch: tuple[int, ...] = ()
