"""``run.stuck``: a running run that looks stuck (its view's verdict, the same as
``campaign status``, the dashboard and ``campaign_run_stuck``) gets one event per stuck
spell, noticed by the delivery loop of any live process every :data:`CHECK_EVERY`.

The verdict is read, not stored, so every process would notice it: the event's
``dedupe_key`` (the run and its last send time) keeps it to one row, and a send ends the
spell (the next spell has another last send).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from scheduler.outbox.events import RunStuckData

if TYPE_CHECKING:
    from scheduler.ledger.access import Connection
    from scheduler.ledger.models import Run
    from scheduler.ledger.outbox_store import OutboxStore
    from scheduler.settings.load import Settings

#: How often the running runs' verdicts are read (a view per running run).
CHECK_EVERY = timedelta(seconds=30)


class StuckWatch:
    """Reads the running runs' stuck verdicts now and then; writes ``run.stuck``."""

    def __init__(self, store: OutboxStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.checked_at: datetime | None = None

    def tick(self, now: datetime) -> int:
        """Check unless checked less than :data:`CHECK_EVERY` ago; events written."""
        if self.checked_at is not None and now - self.checked_at < CHECK_EVERY:
            return 0
        self.checked_at = now
        return self.check(now)

    def check(self, now: datetime) -> int:
        """Write ``run.stuck`` for each running run that looks stuck at ``now`` (once per
        spell); how many were written."""
        from scheduler.views.reading import read_run

        def judge(conn: Connection, run: Run) -> RunStuckData | None:
            view = read_run(conn, run, self.settings, now).view
            return RunStuckData(
                run_id=run.id or 0, campaign=run.campaign_name, channel=run.channel,
                last_send_at=view.last_send_at, idle_s=view.stuck.idle_s or 0.0,
                allowed_s=view.stuck.allowed_s or 0.0, at=now) if view.stuck.stuck else None

        return sum(self.store.note_stuck(data, now) for data in self.store.stuck_runs(judge))
