"""Poll votes and list choices: what a reply answers, kept on the delivery it answers.

The receiver ties a ``poll_update`` to the poll it votes in and a ``list_response`` to the
list it picks from (by their message ids, see :mod:`scheduler.tracking.apply`); this module
says what the answer is (:func:`answer_of`) and tallies a run's answers per step for
``campaign status`` (:func:`read_answer_tallies`, read through
:mod:`scheduler.ledger.answer_reads`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.ledger.answer_reads import AnswerReads

if TYPE_CHECKING:  # the events' models (pydantic), for the receiver: `status` reads tallies
    from scheduler.ledger.access import Connection  # the type of the caller's snapshot
    from scheduler.service.event_data import MessageData


def answer_of(data: MessageData) -> dict[str, Any] | None:
    """The detail keys of a vote (``pollVote``) or a list choice (``listRowId``,
    ``listRowTitle``); None for any other message."""
    from scheduler.service.event_data import ListResponseData, PollUpdateData

    typed = data.data
    if isinstance(typed, PollUpdateData):
        return {"pollVote": list(typed.selected_options)}
    if isinstance(typed, ListResponseData) and (typed.row_id or typed.title):
        return {"listRowId": typed.row_id, "listRowTitle": typed.title}
    return None


@dataclass
class StepTally:
    """A poll or list step's answers: per option (a vote may pick several), and who answered."""

    step: int
    kind: str
    deliveries: int = 0
    answered: int = 0
    options: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        """One line of ``campaign status``."""
        what = "poll" if self.kind == "poll" else "list"
        shown = " · ".join(f"{name} {n:,}" for name, n in self.options.most_common()) \
            or "no answer yet"
        return (f"{what} step {self.step}: {shown} ({self.answered:,} of "
                f"{self.deliveries:,} answered)")

    def as_dict(self) -> dict[str, Any]:
        """JSON form (``campaign status --json``)."""
        return {"step": self.step, "kind": self.kind, "deliveries": self.deliveries,
                "answered": self.answered, "options": dict(self.options.most_common())}


def _choice(details: dict[str, Any]) -> list[str]:
    vote = details.get("pollVote")
    if isinstance(vote, list):
        return [str(v) for v in vote]
    title, row = details.get("listRowTitle"), details.get("listRowId")
    if title or row:
        return [str(title or row)]
    return []


def read_answer_tallies(conn: Connection, run_id: int) -> list[StepTally]:
    """Each poll and list step of the run with its answers so far (none: an empty list),
    read on ``conn`` (the caller's snapshot)."""
    tallies: dict[int, StepTally] = {}
    for step, kind, raw in AnswerReads(conn).step_answers(run_id):
        tally = tallies.setdefault(step, StepTally(step, kind))
        tally.deliveries += 1
        try:
            details = json.loads(raw) if raw else {}
        except ValueError:
            details = {}
        chosen = _choice(details) if isinstance(details, dict) else []
        if chosen:
            tally.answered += 1
            tally.options.update(chosen)
    return [tallies[s] for s in sorted(tallies)]
