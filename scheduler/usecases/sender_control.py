"""``campaign senders pause | resume | retire ID --reason TEXT``: a person moves a sender.

Every change is made with the source ``operator`` and the person's reason, and kept in the
sender's history. ``pause`` and ``retire`` hold the sender (no more sends through it by any
run or worker); ``resume`` gives it back the sending state it had before it was held
(``warming``, ``healthy`` or ``throttled``; ``warming`` when it never had one), so a sender
paused mid-warm-up goes on warming up. A retired sender stays retired until a person
resumes it (the health rules never move it).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from scheduler.core.errors import SchedulerError
from scheduler.ledger.rows import SenderChangeRow
from scheduler.ledger.runs import Ledger
from scheduler.ledger.sender_store import change_by_operator
from scheduler.ledger.states import HELD_STATES, SENDING_STATES, SenderStatus
from scheduler.views.senders import NEW, read_senders

#: What each command moves a sender to (``resume``: decided from its history).
ACTIONS = {"pause": SenderStatus.PAUSED, "retire": SenderStatus.RETIRED, "resume": None}


class UnknownSender(SchedulerError):
    """No profile and no stored run names this sender."""


class SenderChange(BaseModel):
    """What a person's command did to a sender."""

    sender: str
    changed: bool
    from_state: str | None
    to_state: str
    reason: str

    def sentence(self) -> str:
        """One line for the terminal."""
        if not self.changed:
            return f"{self.sender} is {self.to_state} already: nothing changed"
        was = f" (was {self.from_state})" if self.from_state else ""
        return f"{self.sender} is now {self.to_state}{was}: {self.reason}"


def resume_state(changes: list[SenderChangeRow]) -> str:
    """The sending state a sender had before it was held: the state left by its latest
    change out of a sending state (``changes`` newest first); ``warming`` if none."""
    for change in changes:
        if change.from_state in SENDING_STATES:
            return change.from_state
    return SenderStatus.WARMING


def change_sender(ledger: Ledger, sender: str, action: str, reason: str,
                  now: datetime) -> SenderChange:
    """Apply ``action`` (``pause``, ``resume``, ``retire``) to ``sender`` for ``reason``.

    An unknown sender (no profile, named by no stored run) or an empty reason is a
    :class:`SchedulerError` and changes nothing."""
    if action not in ACTIONS:
        raise SchedulerError(f"unknown action {action!r}: pause, resume or retire")
    why = " ".join(reason.split())
    if not why:
        raise SchedulerError(f"give a reason: `campaign senders {action} {sender} "
                             "--reason TEXT` (it is kept in the sender's history)")
    known = read_senders(ledger, now).names()
    if sender not in known:
        listed = ", ".join(known) if known else "none yet (a sender is known from its first run)"
        raise UnknownSender(f"no sender {sender!r} in this ledger; known senders: {listed}")

    def target(was: str | None, changes: list[SenderChangeRow]) -> str | None:
        if ACTIONS[action] is not None:
            return ACTIONS[action]
        # resume: a sending (or new) sender has nothing to resume
        return resume_state(changes) if was in HELD_STATES else None

    was, to, changed = change_by_operator(ledger.engine, sender, target, why, now)
    return SenderChange(sender=sender, changed=changed, from_state=was,
                        to_state=to or was or NEW, reason=why)
