"""The ledger's tables as SQLAlchemy Core objects (the SQLModel classes in ``models`` define
them), for the statements of :mod:`scheduler.ledger.queries`."""

from __future__ import annotations

from sqlalchemy import Table

from scheduler.ledger.conversation_models import StepDecision
from scheduler.ledger.experiment_models import Experiment
from scheduler.ledger.models import (
    Campaign,
    Delivery,
    Event,
    Fire,
    Label,
    LabelChat,
    LabelMessage,
    Link,
    LinkClick,
    LinkRow,
    ReceiverUptime,
    Reply,
    Run,
    Schedule,
    SenderLease,
    SenderProfile,
    SenderStateChange,
    Suppression,
    Worker,
)


def _table(model: type) -> Table:
    table = model.__table__  # type: ignore[attr-defined]  # set by SQLModel for table=True
    assert isinstance(table, Table)
    return table


campaigns = _table(Campaign)
runs = _table(Run)
deliveries = _table(Delivery)
events = _table(Event)
replies = _table(Reply)
suppressions = _table(Suppression)
fires = _table(Fire)
schedules = _table(Schedule)
uptime = _table(ReceiverUptime)
labels = _table(Label)
label_chats = _table(LabelChat)
label_messages = _table(LabelMessage)
workers = _table(Worker)
sender_leases = _table(SenderLease)
sender_profiles = _table(SenderProfile)
sender_state_changes = _table(SenderStateChange)
links = _table(Link)
link_rows = _table(LinkRow)
link_clicks = _table(LinkClick)
experiments = _table(Experiment)
step_decisions = _table(StepDecision)
