"""Where a person's data is in the ledger, and the index that finds it (``person export`` and
``person forget``, :mod:`scheduler.ledger.privacy`).

A person is found from their number's digits: their deliveries by ``ix_deliveries_to``, and
from those their delivery ids, message ids and runs. Each table that holds a person's data
(:data:`HOLDERS`) is then read by one of its indexes, never scanned:

============================  ===========================================================
table                         the person's rows, found by
============================  ===========================================================
``deliveries``                ``to`` (``ix_deliveries_to``)
``events``                    ``number`` (``ix_events_number``), their message ids
                              (``ix_events_message_id_norm``)
``replies``                   ``number``, their delivery ids (both indexed)
``link_clicks``               their delivery ids (``ix_link_clicks_delivery``)
``step_decisions``            their delivery ids (unique ``delivery_id``, ``looked_id``)
``suppressions``              ``number`` (the primary key)
``label_chats``               ``number`` (``ix_label_chats_number``)
``label_messages``            their chat (``<digits>@…``) under each label (primary key)
``consents``                  ``number`` (``ix_consents_number_channel``)
``recipient_names``           ``number`` (the primary key); deleted on erasure
``person_names``              the ids of their ``recipient_names`` rows (the primary key);
                              a name no other number has is deleted on erasure
``person_name_keys``          those names' ids (``ix_person_name_keys_name``); deleted
                              with the name
``outbox_events``             their runs' ``recipient.*`` events naming the number
                              (``ix_outbox_events_run_type``)
``outbox_deliveries``         those events' ids (``uq_outbox_deliveries_event_sub``)
============================  ===========================================================

Tables that hold nothing about a person (tallies, leases, ids: :data:`NOTHING_PERSONAL`)
are not read. Every other table is small (runs, campaigns, schedules, senders' states, the
audit: they grow with runs and operators' actions, not with recipients) and is searched in
each text column for the number's formats, as is any table added later; :data:`SWEPT`
lists those of today's schema, and a test fails when a table is added without a place here.
A number written inside *another* person's rows (a CSV value, a reply's text) is not
searched for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, MetaData, Table, and_, false, inspect, or_, select

#: The outgoing webhooks' events that name a recipient's number.
RECIPIENT_EVENTS = ("recipient.replied", "recipient.opted_out")
#: Tables with no personal data: never read for a person.
NOTHING_PERSONAL = frozenset({"alembic_version", "run_tallies", "run_sender_tallies",
                              "run_minutes", "link_rows", "reply_handled", "sender_leases"})
#: Today's small tables, searched for the number's formats in every text column.
SWEPT = frozenset({"api_idempotency_keys", "api_tokens", "campaigns", "experiments", "fires",
                   "labels", "links", "privacy_audit", "receiver_uptime", "runs",
                   "schedules", "sender_profiles", "sender_state_changes", "workers"})


@dataclass
class Person:
    """A person's keys: the number's digits, and what their deliveries say."""

    digits: str
    ids: list[int] = field(default_factory=list)
    msgids: list[str] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)
    #: (session, label) pairs of the ledger's labels (a chat's labels are keyed by them)
    label_pairs: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def of(cls, conn: Connection, digits: str, deliveries: Sequence[Mapping[str, Any]],
           labels: Table | None) -> Person:
        """The keys from the person's deliveries (and the ledger's ``labels``' pairs)."""
        pairs = [] if labels is None else [tuple(r) for r in conn.execute(
            select(labels.c.session_id, labels.c.label_id))]
        return cls(digits, [r["id"] for r in deliveries],
                   sorted({r["message_id_norm"] for r in deliveries if r["message_id_norm"]}),
                   sorted({r["run_id"] for r in deliveries}),
                   [(str(s), str(n)) for s, n in pairs])


#: found so far, by table: the rows (mappings)
Found = dict[str, list[Mapping[str, Any]]]
Where = Callable[[Table, Person, Found], Any]


@dataclass(frozen=True)
class Holder:
    """A table holding a person's rows: how to find them, and what erasing does to them.

    ``blank``: columns set to these values; ``alias``: columns that take the pseudonym;
    ``free``: free-text columns where the person's CSV values are replaced too (the number
    is replaced in every text column); ``delete``: the rows go; ``theirs``: of the rows
    found, those that are the person's alone (others are someone else's too: kept)."""

    table: str
    where: Where
    blank: Mapping[str, Any] = field(default_factory=dict)
    alias: tuple[str, ...] = ()
    free: tuple[str, ...] = ()
    delete: bool = False
    theirs: Callable[[Connection, Person, Sequence[Any]], Sequence[Any]] | None = None


def _ids(column: Any, ids: Sequence[Any]) -> Any:
    return column.in_(ids) if ids else false()


def _chats(t: Table, p: Person, _f: Found) -> Any:
    """The person's chat JIDs (``<digits>@…``) under each label: one primary-key range each."""
    if not p.label_pairs:
        return None
    low, high = p.digits + "@", p.digits + "A"  # "@" < "A": every "<digits>@…"
    c = t.c
    return or_(*(and_(c.session_id == s, c.label_id == lab, c.chat >= low, c.chat < high)
                 for s, lab in p.label_pairs))


def _outbox(t: Table, p: Person, _f: Found) -> Any:
    if not p.run_ids:
        return None
    c = t.c
    return and_(c.run_id.in_(p.run_ids), c.type.in_(RECIPIENT_EVENTS),
                c.payload.contains(f'"number":"{p.digits}"'))


def _outbox_deliveries(t: Table, _p: Person, found: Found) -> Any:
    ids = [r["id"] for r in found.get("outbox_events", [])]
    return t.c.event_id.in_(ids) if ids else None


def _name_ids(t: Table, _p: Person, found: Found) -> Any:
    return _ids(t.c.id, sorted({r["name_id"] for r in found.get("recipient_names", [])}))


def _names_keys(t: Table, _p: Person, found: Found) -> Any:
    return _ids(t.c.name_id, [r["id"] for r in found.get("person_names", [])])


def _names_alone(conn: Connection, p: Person, rows: Sequence[Any]) -> Sequence[Any]:
    """The names no other number has: a bounded read of ``recipient_names`` per name (no
    index by name id, its cost at plan time: it stops at the first other number, and
    reads the whole narrow table only for a name the person alone had)."""
    from scheduler.ledger.name_models import recipient_names

    r = recipient_names.c
    return [row for row in rows if conn.execute(select(r.number).where(
        r.name_id == row._mapping["id"], r.number != p.digits).limit(1)).first() is None]


HOLDERS: tuple[Holder, ...] = (
    Holder("deliveries", lambda t, p, _f: t.c.to == p.digits,
           blank={"payload": "{}", "variables": "{}", "reply_text": None, "details": None,
                  "choices": None, "fallback": None},
           alias=("to",), free=("last_error", "verdict", "reason")),
    Holder("events", lambda t, p, _f: or_(t.c.number == p.digits,
                                          _ids(t.c.message_id_norm, p.msgids)),
           blank={"payload": "{}"}, alias=("number",)),
    Holder("replies", lambda t, p, _f: or_(t.c.number == p.digits,
                                           _ids(t.c.delivery_id, p.ids)),
           blank={"text": None, "choices": None}, alias=("number",)),
    Holder("link_clicks", lambda t, p, _f: t.c.delivery_id.in_(p.ids) if p.ids else None,
           blank={"user_agent": None}, free=("why_not",)),
    Holder("step_decisions", lambda t, p, _f: or_(t.c.delivery_id.in_(p.ids),
                                                  t.c.looked_id.in_(p.ids))
           if p.ids else None, alias=("to",), free=("reason", "late_note")),
    Holder("suppressions", lambda t, p, _f: t.c.number == p.digits, alias=("number",),
           free=("reason",)),
    Holder("label_chats", lambda t, p, _f: t.c.number == p.digits, alias=("number",)),
    Holder("label_messages", _chats),
    Holder("consents", lambda t, p, _f: t.c.number == p.digits, alias=("number",)),
    Holder("recipient_names", lambda t, p, _f: t.c.number == p.digits, delete=True),
    Holder("person_names", _name_ids, delete=True, theirs=_names_alone),
    Holder("person_name_keys", _names_keys, delete=True),
    Holder("outbox_events", _outbox),
    Holder("outbox_deliveries", _outbox_deliveries, free=("last_error",)),
)


def _known_tables() -> dict[str, Table]:
    """The ledger's tables as this version's models define them (no reflection)."""
    from sqlmodel import SQLModel

    import scheduler.ledger.consent
    import scheduler.ledger.conversation_models
    import scheduler.ledger.experiment_models
    import scheduler.ledger.inbox_models
    import scheduler.ledger.link_models
    import scheduler.ledger.models
    import scheduler.ledger.name_models
    import scheduler.ledger.privacy_models  # noqa: F401  (each defines its tables)
    from scheduler.ledger.api_tokens import api_tokens
    from scheduler.ledger.idempotency import api_idempotency_keys
    from scheduler.ledger.queries.outbox import metadata as outbox

    return {**SQLModel.metadata.tables, **outbox.tables, "api_tokens": api_tokens,
            "api_idempotency_keys": api_idempotency_keys}


def tables(conn: Connection) -> dict[str, Table]:
    """Every table the database has, by name: the models' when this version knows it,
    reflected otherwise (a table added by a newer migration or by hand)."""
    names = set(inspect(conn).get_table_names())
    known = _known_tables()
    out = {name: known[name] for name in names if name in known}
    unknown = sorted(names - set(out) - NOTHING_PERSONAL)
    if unknown:
        meta = MetaData()
        meta.reflect(bind=conn, only=unknown)
        out.update(meta.tables)
    return out


def swept(all_tables: Mapping[str, Table]) -> list[Table]:
    """The tables searched in every text column: neither a holder nor impersonal."""
    held = {h.table for h in HOLDERS}
    return [t for name, t in sorted(all_tables.items())
            if name not in held and name not in NOTHING_PERSONAL]
