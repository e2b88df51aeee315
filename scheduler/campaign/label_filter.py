"""A campaign's label filter: ``labels`` and ``exclude_labels``, resolved to phone numbers.

WhatsApp only. A label is a session's own (its id and name are per session), so names are
matched, in any case and without surrounding spaces, against the labels of the campaign's
sender sessions, and a recipient counts as labelled when a chat of any sender carries one
of the names. A chat is matched to a recipient by its JID: a phone-number JID
(``5511987654321@s.whatsapp.net``) is that number; a Brazilian mobile JID without the ninth
digit (accounts older than the ninth digit) also matches the number with it. An ``@lid``
chat (not resolved to a number) or a group cannot match a phone: such chats are counted
(:attr:`LabelAudience.unresolved`) and said by ``campaign plan``.

The label state (which labels exist, which chats they are on) comes from the ledger, kept
by the receiver from the service's label events; :func:`resolve_labels` takes it as plain
rows, so this module stays free of the database. A name no sender session knows, or one
whose labels are all deleted, is an error naming the campaign file and the field: a typo
must never become a silently empty (or unfiltered) audience.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.campaign.exceptions import DefinitionError, Issue


class LabelFact(Protocol):
    """A session's label (the ledger's ``LabelRow`` fits)."""

    @property
    def session_id(self) -> str: ...
    @property
    def label_id(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def deleted(self) -> bool: ...


class ChatFact(Protocol):
    """A chat a label is on (the ledger's ``LabelledChat`` fits)."""

    @property
    def session_id(self) -> str: ...
    @property
    def label_id(self) -> str: ...
    @property
    def chat(self) -> str: ...
    @property
    def number(self) -> str | None: ...


def fold(name: str | None) -> str:
    """A label name as names are compared: no surrounding spaces, any case."""
    return (name or "").strip().casefold()


def phone_forms(number: str) -> tuple[str, ...]:
    """The recipient numbers a chat's phone may be: itself and, for a Brazilian mobile
    without the ninth digit (55 + area + 8 digits starting 6-9), the number with it."""
    if len(number) == 12 and number.startswith("55") and number[4] in "6789":
        return number, f"{number[:4]}9{number[4:]}"
    return (number,)


@dataclass(frozen=True)
class LabelAudience:
    """What a campaign's label filter keeps and leaves out, and what it was built from."""

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    sessions: tuple[str, ...]
    #: numbers labelled with an ``include`` name (None: no ``labels`` filter)
    keep: frozenset[str] | None
    #: number → the ``exclude_labels`` name it carries
    drop: dict[str, str] = field(default_factory=dict)
    #: labelled chats per name (folded), and those that cannot match a phone (@lid, groups)
    chats: dict[str, int] = field(default_factory=dict)
    unresolved: dict[str, int] = field(default_factory=dict)

    def reason(self, number: str) -> str | None:
        """Why the filter leaves ``number`` out (a plan row's skip reason), or None."""
        name = self.drop.get(number)
        if name is not None:
            return f"label: labelled {name} (exclude_labels)"
        if self.keep is not None and number not in self.keep:
            return f"label: not labelled {' or '.join(self.include)}"
        return None

    def describe(self) -> dict[str, object]:
        """The filter as ``campaign plan --json`` shows it (counts of the state it read)."""
        return {
            "labels": list(self.include), "exclude_labels": list(self.exclude),
            "sessions": list(self.sessions),
            "chats": {n: self.chats.get(fold(n), 0) for n in (*self.include, *self.exclude)},
            "unresolved_chats": {n: self.unresolved.get(fold(n), 0)
                                 for n in (*self.include, *self.exclude)},
        }


def _problem(label: str, key: str, line: int | None, name: str, deleted: bool,
             sessions: Iterable[str], known: Iterable[str]) -> Issue:
    where = ", ".join(sessions)
    if deleted:
        text = f"label {name!r} was deleted in every sender session ({where})"
    else:
        names = sorted({n.strip() for n in known if n and n.strip()}, key=str.casefold)
        shown = ", ".join(repr(n) for n in names[:20]) or "none (no label events stored)"
        text = (f"no sender session ({where}) has a label named {name!r}; their labels: "
                f"{shown}")
    return Issue(label, text, key=key, line=line)


def resolve_labels(*, file_label: str, lines: dict[str, int | None], include: list[str],
                   exclude: list[str], sessions: list[str], labels: Iterable[LabelFact],
                   chats: Iterable[ChatFact]) -> LabelAudience:
    """The filter of ``include`` / ``exclude`` names over the sessions' label state.

    Raises :class:`DefinitionError` naming ``file_label`` and the field (``labels`` or
    ``exclude_labels``, at ``lines[field]``) for every name no session has alive."""
    wanted = {fold(n): n.strip() for n in (*include, *exclude)}
    alive: dict[tuple[str, str], str] = {}  # (session, label id) → folded name
    seen_deleted: set[str] = set()
    known: list[str] = []
    for fact in labels:
        if fact.session_id not in sessions:
            continue
        if not fact.deleted:
            known.append(fact.name or "")
        if fold(fact.name) in wanted:
            if fact.deleted:
                seen_deleted.add(fold(fact.name))
            else:
                alive[(fact.session_id, fact.label_id)] = fold(fact.name)
    found = set(alive.values())
    issues = [_problem(file_label, key, lines.get(key), name.strip(),
                       fold(name) in seen_deleted, sessions, known)
              for key, names in (("labels", include), ("exclude_labels", exclude))
              for name in names if fold(name) not in found]
    if issues:
        raise DefinitionError(issues)
    numbers: dict[str, set[str]] = {}
    counted: Counter[str] = Counter()
    unresolved: Counter[str] = Counter()
    for chat in chats:
        name = alive.get((chat.session_id, chat.label_id))
        if name is None:
            continue
        counted[name] += 1
        if chat.number is None:
            unresolved[name] += 1
            continue
        numbers.setdefault(name, set()).update(phone_forms(chat.number))
    keep = frozenset().union(*(numbers.get(fold(n), set()) for n in include)) \
        if include else None
    drop: dict[str, str] = {}
    for name in exclude:
        for number in numbers.get(fold(name), ()):
            drop.setdefault(number, name.strip())
    return LabelAudience(tuple(n.strip() for n in include), tuple(n.strip() for n in exclude),
                         tuple(sessions), keep, drop, dict(counted), dict(unresolved))
