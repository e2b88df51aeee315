"""``campaign purge`` and ``campaign serve``'s daily purge: rendered bodies and raw event
payloads older than ``[privacy] keep_bodies`` / ``keep_events`` removed (see
:mod:`scheduler.ledger.retention` for what is kept)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from scheduler.ledger import access
from scheduler.ledger import privacy as lr_privacy
from scheduler.ledger import retention as lr
from scheduler.ledger.access import Engine
from scheduler.settings.privacy import PrivacySettings

if TYPE_CHECKING:
    from scheduler.settings.load import Settings

#: How often ``campaign serve`` purges.
EVERY = timedelta(days=1)


@dataclass(frozen=True)
class Purged:
    """What a purge removed (or would remove, ``dry_run``), per table, and the cut-offs."""

    counts: dict[str, int]
    bodies_before: datetime | None
    events_before: datetime | None
    dry_run: bool

    def lines(self) -> list[str]:
        """What it says, one line per table."""
        verb = "would remove" if self.dry_run else "removed"
        out = []
        for table, what, before in (("deliveries", "rendered bodies", self.bodies_before),
                                    ("events", "raw event payloads", self.events_before)):
            if before is None:
                out.append(f"{table}: {what} kept forever")
            else:
                out.append(f"{table}: {verb} {self.counts[table]} {what} older than "
                           f"{before.isoformat(timespec='seconds')}")
        return out


def purge(engine: Engine, privacy: PrivacySettings, now: datetime, *,
          dry_run: bool = False) -> Purged:
    """Remove (or, ``dry_run``, count) the bodies and payloads older than the settings."""
    keep_bodies, keep_events = privacy.bodies_for(), privacy.events_for()
    bodies = now - keep_bodies if keep_bodies is not None else None
    payloads = now - keep_events if keep_events is not None else None
    if dry_run:
        with access.read(engine, "count what a purge would remove") as conn:
            counts = lr.count_old(conn, bodies, payloads)
    else:
        with access.transaction(engine, "purge old bodies and event payloads") as conn:
            counts = lr.purge_old(conn, bodies, payloads)
    return Purged(counts, bodies, payloads, dry_run)


def forget_late_events(engine: Engine, key_of: Callable[[], bytes | None],
                       now: datetime) -> int:
    """Erase again the people whose late events (a message that was on its way when they
    were erased) brought their number back into ``events``; how many."""
    from scheduler.privacy.person import forget_person

    with access.read(engine, "look for erased people's late events") as conn:
        late = lr_privacy.erased_in_events(conn, key_of)
    key = key_of() if late else None
    for digits in late:
        assert key is not None
        forget_person(engine, "+" + digits, key=key, who="campaign serve", via="purge",
                      reason="late events of an erased person", now=now)
    return len(late)


class DailyPurge:
    """``campaign serve``'s purge: at start, then once a day (by the injected clock)."""

    def __init__(self, engine: Engine, privacy: PrivacySettings,
                 clock: Callable[[], datetime],
                 report: Callable[[str], None] | None = None,
                 key_of: Callable[[], bytes | None] | None = None) -> None:
        self.engine, self.privacy, self.clock, self.report = engine, privacy, clock, report
        self.key_of = key_of
        self.last: datetime | None = None

    def run_if_due(self) -> Purged | None:
        """Purge when a day has passed since the last one (or none ran yet)."""
        now = self.clock()
        if self.last is not None and now - self.last < EVERY:
            return None
        self.last = now
        done = purge(self.engine, self.privacy, now)
        if self.key_of is not None:
            late = forget_late_events(self.engine, self.key_of, now)
            if late and self.report is not None:
                self.report(f"purge: {late} erased people's late events erased")
        if self.report is not None and any(done.counts.values()):
            for line in done.lines():
                self.report(f"purge: {line}")
        return done


def daily_purge(settings: Settings, engine: Engine, clock: Callable[[], datetime],
                report: Callable[[str], None] | None = None) -> DailyPurge:
    """``campaign serve``'s purge over the settings' ``[privacy]`` and erasure key."""
    from scheduler.ledger.privacy_key import erasure_key

    return DailyPurge(engine, settings.privacy, clock, report,
                      key_of=lambda: erasure_key(settings))
