"""SQLModel tables of the ledger.

Times are aware datetimes (stored by SQLModel's ``UTCDateTime``, read back in UTC).
JSON columns (``payload``, ``variables``, ``definition``, ``options``) are text
written by our own ``json.dumps`` so that bulk inserts skip per-row type processing.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import Index, Text, UniqueConstraint
from sqlmodel import Field

# the tracked links' tables (migration 0011), kept in their own module, named here too
from scheduler.ledger.link_models import Link as Link
from scheduler.ledger.link_models import LinkClick as LinkClick
from scheduler.ledger.link_models import LinkRow as LinkRow
from scheduler.ledger.table_parts import LedgerTable, PartialIndex, RunTable


class Campaign(LedgerTable, table=True):
    """A campaign definition seen by the ledger, by its unique name."""

    __tablename__ = "campaigns"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    channel: str
    definition_path: str
    created_at: datetime
    updated_at: datetime


class Run(RunTable, table=True):
    """One execution of a campaign; ``definition`` is a snapshot taken when it was planned."""

    __tablename__ = "runs"
    __table_args__ = (
        UniqueConstraint("campaign_id", "fire_time", name="uq_run_fire"),
        # one fallback run per parent (migration 0013)
        PartialIndex("ux_runs_parent", "parent_run_id", unique=True,
                     where="parent_run_id IS NOT NULL"),
    )

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaigns.id", index=True)
    campaign_name: str = Field(index=True)
    channel: str
    status: str = Field(index=True)
    delivery_mode: str = "at-most-once"
    timezone: str = "UTC"
    fire_time: datetime | None = None
    definition_path: str = ""
    definition: str = Field(default="{}", sa_type=Text)
    planned_count: int = 0
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # Cross-process control: another process writes "pause"/"cancel"; the owner obeys.
    control: str | None = None
    stop_reason: str | None = Field(default=None, sa_type=Text)
    owner_pid: int | None = None
    owner_host: str | None = None
    heartbeat_at: datetime | None = None
    # Where the sends went: "sandbox" or "service:<host>" (see scheduler.wiring).
    target: str | None = None
    # What the run was planned from (JSON; see scheduler.campaign.fingerprint).
    fingerprint: str | None = Field(default=None, sa_type=Text)
    # The run's options, parsed at plan time (JSON of scheduler.settings.run.RunOptions, with
    # its version); NULL only for runs stored before migration 0003.
    options: str | None = Field(default=None, sa_type=Text)
    # A fallback run's parent (issue 25): its rows are the parent's recipients not reached.
    parent_run_id: int | None = None


#: The rows awaiting a verdict on their outcome (``ix_deliveries_watch``'s predicate; the
#: query of ``queries/recycling.py`` spells it the same, literals included).
WATCHED = "watch IS NOT NULL AND state NOT IN ('planned', 'dispatching', 'held')"

#: The rows waiting for their condition's decision (``ix_deliveries_gate``'s predicate,
#: migration 0019; ``queries/conversation.py`` spells it the same, literals included).
GATED = "gate IS NOT NULL AND state = 'planned'"

#: The predicate of ``ix_deliveries_marks`` (migration 0025, PostgreSQL only): the states
#: whose rows :mod:`scheduler.ledger.queries.verdict_marks` marks.
MARKED = "state IN ('unknown', 'skipped')"

#: The predicates of the two partial indexes of migration 0016 (the same text there).
MSGID_HELD = "message_id_norm IS NOT NULL"
SENDER_SET = "sender IS NOT NULL"


class Delivery(LedgerTable, table=True):
    """One message step for one recipient in one run: the ledger's row."""

    __tablename__ = "deliveries"
    __table_args__ = (
        # The claim query: due planned rows of a run in plan order.
        Index("ix_deliveries_claim", "run_id", "state", "seq"),
        # A message id's rows (events, replies); partial (migration 0016): a plan's rows
        # have none, and every reader matches by = or IN, which implies the predicate.
        PartialIndex("ix_deliveries_msgid", "message_id_norm", where=MSGID_HELD),
        Index("ix_deliveries_to", "to", "run_id"),
        # A sender's sends since a time, over every run (warm-up caps, a taken-over day);
        # partial (0016): a plan's rows have no sender, every reader names its senders.
        PartialIndex("ix_deliveries_sender_dispatched", "sender", "dispatched_at",
                     where=SENDER_SET),
        # Second chances (migration 0013): never two rows for attempt n of one recipient
        # and step; the rows awaiting a verdict, in id order.
        PartialIndex("ux_deliveries_attempt", "first_id", "attempt", unique=True,
                     where="first_id IS NOT NULL"),
        PartialIndex("ix_deliveries_watch", "run_id", "id", where=WATCHED),
        # a run's attempt rows (2nd attempt on), for its funnel per attempt: the run's
        # own only (ux_deliveries_attempt holds every run's)
        PartialIndex("ix_deliveries_attempts", "run_id", where="first_id IS NOT NULL"),
        # steps that follow replies (migration 0019): the rows awaiting their decision
        PartialIndex("ix_deliveries_gate", "run_id", "id", where=GATED),
        # a run's unknown and skipped rows' ids, read by an index-only scan (migration
        # 0025); PostgreSQL only: SQLite's claim index holds each entry's rowid already
        PartialIndex("ix_deliveries_marks", "run_id", "state", "id", where=MARKED,
                     dialects=("postgresql",)).ddl_if(dialect="postgresql"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="runs.id")
    seq: int
    row: int
    step: int = 0
    kind: str
    path: str
    to: str
    region: str | None = None
    payload: str = Field(default="{}", sa_type=Text)
    variables: str = Field(default="{}", sa_type=Text)
    state: str
    reason: str | None = Field(default=None, sa_type=Text)
    sender: str | None = None
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_type=Text)
    message_id: str | None = None
    message_id_norm: str | None = None
    due_at: datetime | None = None
    dispatched_at: datetime | None = None
    accepted_at: datetime | None = None
    sent_at: datetime | None = None
    delivered_at: datetime | None = None
    read_at: datetime | None = None
    replied_at: datetime | None = None
    failed_at: datetime | None = None
    # voice: when the call ended (call.ended); a call is in progress until then
    ended_at: datetime | None = None
    reply_text: str | None = Field(default=None, sa_type=Text)
    details: str | None = Field(default=None, sa_type=Text)
    updated_at: datetime | None = None
    # the `campaign serve` worker that claimed the row (PostgreSQL workers; NULL otherwise)
    worker: str | None = None
    # A/B variants (migration 0012): the row's variant; a held row's payload per variant
    variant: str | None = None
    choices: str | None = Field(default=None, sa_type=Text)
    # Second chances (migration 0013): the attempt number (1: first), the first attempt's
    # id and the rule that made this one (NULL on a first attempt); ``watch`` 1 while a
    # verdict on the outcome is due, the ``verdict`` taken; ``fallback`` (JSON): what the
    # recipient gets on the fallback channel, or why nothing.
    attempt: int = Field(default=1, sa_column_kwargs={"server_default": "1"})
    first_id: int | None = None
    rule: str | None = None
    watch: int | None = None
    verdict: str | None = Field(default=None, sa_type=Text)
    fallback: str | None = Field(default=None, sa_type=Text)
    # Steps that follow replies (migration 0019): 1 while the row waits for its step's
    # condition to be decided (``step_decisions``); NULL otherwise.
    gate: int | None = None


class Event(LedgerTable, table=True):
    """A raw webhook event, stored before it is applied; ``dedupe_key`` makes repeats no-ops."""

    __tablename__ = "events"

    id: int | None = Field(default=None, primary_key=True)
    dedupe_key: str = Field(unique=True)
    event: str = Field(index=True)
    channel: str | None = None
    session_id: str | None = None
    number: str | None = Field(default=None, index=True)
    message_id_norm: str | None = Field(default=None, index=True)
    occurred_at: datetime | None = None
    received_at: datetime
    applied_at: datetime | None = None
    result: str | None = None
    payload: str = Field(sa_type=Text)


class Reply(LedgerTable, table=True):
    """A message a recipient sent back, tied to that recipient's latest delivery."""

    __tablename__ = "replies"

    id: int | None = Field(default=None, primary_key=True)
    event_id: int | None = Field(default=None, index=True)
    delivery_id: int | None = Field(default=None, index=True)
    run_id: int | None = Field(default=None, index=True)
    number: str = Field(index=True)
    session_id: str | None = None
    kind: str
    text: str | None = Field(default=None, sa_type=Text)
    opt_out: bool = False
    received_at: datetime
    # Migration 0019: a person should read it (no step's condition took it, not an
    # opt-out); the choices it carries (JSON list: a button's or list row's id and title,
    # poll options), which conditions match besides the text.
    to_answer: bool = Field(default=False, sa_column_kwargs={"server_default": "0"})
    choices: str | None = Field(default=None, sa_type=Text)


class Suppression(LedgerTable, table=True):
    """A number that must never be sent anything, on any channel or campaign."""

    __tablename__ = "suppressions"

    number: str = Field(primary_key=True)
    source: str
    reason: str | None = None
    created_at: datetime


class Fire(LedgerTable, table=True):
    """A due run recorded by the trigger process, unique on (campaign, fire time)."""

    __tablename__ = "fires"
    __table_args__ = (UniqueConstraint("campaign_name", "fire_time", name="uq_fire"),)

    id: int | None = Field(default=None, primary_key=True)
    campaign_name: str = Field(index=True)
    definition_path: str
    fire_time: datetime
    recorded_at: datetime
    status: str = "due"
    run_id: int | None = None
    reason: str | None = None


class Schedule(LedgerTable, table=True):
    """A campaign registered with ``campaign schedule``."""

    __tablename__ = "schedules"

    name: str = Field(primary_key=True)
    definition_path: str
    trigger: str
    timezone: str
    created_at: datetime


class ReceiverUptime(LedgerTable, table=True):
    """An interval during which a webhook receiver of this ledger was listening."""

    __tablename__ = "receiver_uptime"

    id: int | None = Field(default=None, primary_key=True)
    pid: int
    # A hash of the URL the service posts to (port and token), never the token itself.
    url_key: str
    started_at: datetime
    last_seen_at: datetime
    # When it stopped of its own accord; NULL while listening, or when it was killed.
    stopped_at: datetime | None = None


class Label(LedgerTable, table=True):
    """A label of one session as its events last said it (see ``queries/labels.py``)."""

    __tablename__ = "labels"

    session_id: str = Field(primary_key=True)
    label_id: str = Field(primary_key=True)
    name: str | None = None
    # The rank of the fact that gave the name (a fact without a name keeps the older one).
    name_rank: str | None = None
    color: int | None = None
    color_rank: str | None = None
    deleted: bool = False
    # Order of facts: event time (ms), full sync over real time, a fixed tie-break.
    rank: str
    updated_at: datetime


class LabelChat(LedgerTable, table=True):
    """Whether a label is on a chat of a session (``number``: the chat's phone, if any)."""

    __tablename__ = "label_chats"

    session_id: str = Field(primary_key=True)
    label_id: str = Field(primary_key=True)
    chat: str = Field(primary_key=True)
    number: str | None = Field(default=None, index=True)
    labeled: bool
    rank: str
    updated_at: datetime


class LabelMessage(LedgerTable, table=True):
    """Whether a label is on one message of a chat (message id in lower case)."""

    __tablename__ = "label_messages"

    session_id: str = Field(primary_key=True)
    label_id: str = Field(primary_key=True)
    chat: str = Field(primary_key=True)
    message_id: str = Field(primary_key=True)
    labeled: bool
    rank: str
    updated_at: datetime


class Worker(LedgerTable, table=True):
    """A ``campaign serve`` worker of this ledger: alive while its heartbeat is fresh."""

    __tablename__ = "workers"

    id: str = Field(primary_key=True)
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None = None
    # how many senders its dispatchers are ready to send through (0 while it starts)
    wants: int = 0
    # where it sends, as ``runs.target`` records it; it leaves other targets' runs alone
    target: str | None = None


class SenderLease(LedgerTable, table=True):
    """Which worker may send through a sender (a session, or the SMS/voice account), until
    when; ``epoch`` counts the hand-overs, ``last_sent_at`` is the sender's latest claim."""

    __tablename__ = "sender_leases"

    sender: str = Field(primary_key=True)
    worker: str | None = Field(default=None, index=True)
    expires_at: datetime
    epoch: int = 0
    last_sent_at: datetime | None = None


class SenderProfile(LedgerTable, table=True):
    """A sender's health and warm-up, shared by every run, campaign and worker: its state
    (see ``states.SenderStatus``) with why and since when, its warm-up day, latest score
    and the factor applied to its rate."""

    __tablename__ = "sender_profiles"

    sender: str = Field(primary_key=True)
    first_seen_at: datetime
    state: str = Field(default="warming", sa_column_kwargs={"server_default": "warming"})
    reason: str | None = Field(default=None, sa_type=Text)
    since: datetime
    warm_profile: str | None = None
    warm_day: int = Field(default=1, sa_column_kwargs={"server_default": "1"})
    # the local date ``warm_day`` was last advanced for
    warm_day_date: date | None = None
    score: float | None = None
    throttle: float = Field(default=1.0, sa_column_kwargs={"server_default": "1.0"})


class SenderStateChange(LedgerTable, table=True):
    """One change of a sender's state or reason (append-only history): who made it
    (``engine``, ``operator``, ``event``), when, and the score then."""

    __tablename__ = "sender_state_changes"
    __table_args__ = (Index("ix_sender_state_changes_sender", "sender", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    sender: str
    at: datetime
    from_state: str | None = None
    to_state: str
    reason: str | None = Field(default=None, sa_type=Text)
    source: str
    score: float | None = None
