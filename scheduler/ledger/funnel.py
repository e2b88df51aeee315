"""The one definition of a run's funnel: what *planned*, *sent* and each rate mean.

Shared by the report (Summary sheet, funnel chart, PNG), ``campaign status`` and
``campaign plan``, so the same run gives the same numbers everywhere:

- **planned**: the rows to send, every delivery but the skipped ones (a row skipped when
  the run was planned, an invalid number, a duplicate or an opted-out number, is not
  planned; nor is one skipped later, when its number opted out before its turn);
- **sent**: rows the service took (``accepted`` or any later state, or a time that says so,
  see :data:`~scheduler.ledger.states.SENT_STATES`); voice calls say *dialed*;
- **delivered**, **read**, **replied**, **answered**, **pressed a key**: rows that reached it;
- **rates**: *sent* as a share of *planned*; every later stage as a share of *sent*, so
  the rates of one run never depend on which stages a channel reports.
- **skipped, by reason**: people (distinct numbers), then their messages (one per step).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler.core.channel_terms import ALL, terms_of
from scheduler.ledger.states import DeliveryState


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a channel's funnel: its label and the count it reads."""

    label: str
    key: str


#: Each channel's stages, in order; the first is always planned, the second sent (the
#: labels are the channel's own: :attr:`scheduler.core.channel_terms.ChannelTerms.funnel`).
STAGES: dict[str, tuple[Stage, ...]] = {
    t.name: tuple(Stage(label, key) for label, key in t.funnel) for t in ALL}

#: The definitions in a few lines, as the Summary sheet states them ("How to read").
HOW_TO_READ = (
    "Planned: the rows to send (skipped rows are not planned: invalid numbers, "
    "duplicates, opted-out numbers).",
    "Sent: rows the service took. Sent (% of planned) is sent / planned; every later "
    "rate is a share of sent.",
    "Skipped, by reason: people (distinct numbers), then messages (one per step).",
)


def stages(channel: str) -> tuple[Stage, ...]:
    """The funnel of ``channel`` (WhatsApp's for any other)."""
    return STAGES[terms_of(channel).name]


def planned(counts: Mapping[str, int]) -> int:
    """Rows to send, from counts by state: every delivery but the skipped ones."""
    return sum(n for state, n in counts.items() if state != DeliveryState.SKIPPED)


def share(part: float, whole: float) -> float | None:
    """``part / whole``, None when ``whole`` is zero."""
    return part / whole if whole else None


def base(channel: str, index: int) -> Stage | None:
    """The stage the rate of stage ``index`` is a share of (None for planned itself)."""
    funnel = stages(channel)
    return None if index == 0 else funnel[0] if index == 1 else funnel[1]


def rate_label(channel: str, index: int) -> str:
    """``Sent (% of planned)``, ``Read (% of sent)``, ``Answered (% of dialed)`` …"""
    stage, whole = stages(channel)[index], base(channel, index)
    return f"{stage.label} (% of {whole.label.lower()})" if whole else stage.label


@dataclass(frozen=True, slots=True)
class Rate:
    """One rate of a funnel: its label, the counts it divides, and its value."""

    label: str
    part: str
    whole: str
    value: float | None


def rates(channel: str, counts: Mapping[str, float]) -> list[Rate]:
    """Every rate of ``channel``'s funnel from ``counts`` (stage key → count)."""
    out = []
    for index, stage in enumerate(stages(channel)):
        whole = base(channel, index)
        if whole is not None:
            out.append(Rate(rate_label(channel, index), stage.key, whole.key,
                            share(counts.get(stage.key, 0), counts.get(whole.key, 0))))
    return out


def funnel_line(channel: str, counts: Mapping[str, float]) -> str:
    """The funnel in one line: ``planned 232 · sent 229 (98.7%) · delivered 200 (87.3%)``
    (each percentage as defined above)."""
    parts = []
    values = {r.part: r.value for r in rates(channel, counts)}
    for stage in stages(channel):
        value = values.get(stage.key)
        pct = f" ({value:.1%})" if value is not None else ""
        parts.append(f"{stage.label.lower()} {int(counts.get(stage.key, 0)):,}{pct}")
    return " · ".join(parts)


def labelled_shares(channel: str, values: Sequence[int]) -> list[str]:
    """Each stage's share as the funnel chart writes it beside its bar: ``""`` for planned,
    ``"98.7% of planned"``, then ``"87.3% of sent"`` …"""
    funnel = stages(channel)
    out = []
    for index, _value in enumerate(values):
        whole = base(channel, index)
        if whole is None:
            out.append("")
            continue
        pct = share(values[index], values[funnel.index(whole)])
        out.append(f"{pct:.1%} of {whole.label.lower()}" if pct is not None else "")
    return out
