"""The ledger as the scheduled fires' store: what ``campaign serve`` plans, what became
of each fire, and the fires that made no run.

:class:`FireStore` is the door ``campaign serve`` (:mod:`scheduler.usecases.serve`) and
``campaign runs`` (:mod:`scheduler.commands.run`, :mod:`scheduler.api.reads`) go through;
the triggers record fires through the ``Ledger`` (the engine's ``ScheduleStore``). Each
method is one transaction or one read of :mod:`scheduler.ledger.queries.schedules`."""

from __future__ import annotations

from collections.abc import Collection

from scheduler.ledger import access
from scheduler.ledger.access import Engine
from scheduler.ledger.queries import schedules as sch
from scheduler.ledger.rows import DueFire


class FireStore:
    """The scheduled fires of ``engine``'s ledger (see the module)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def due_fires(self, skip: Collection[int] = ()) -> list[tuple[DueFire, str]]:
        """Fires recorded ``due`` that made no run yet (but ``skip``), oldest first, each
        with its schedule's time zone (UTC when the schedule is gone)."""
        with access.read(self.engine, "read the due fires") as conn:
            due = [f for f in sch.due_fires(conn) if f.id not in skip]
            zones = {s.name: s.timezone for s in sch.all_schedules(conn)} if due else {}
        return [(fire, zones.get(fire.campaign_name, "UTC")) for fire in due]

    def settle_fire(self, fire_id: int, status: str, run_id: int | None,
                    reason: str | None) -> None:
        """A due fire became a run (``started``), or ``missed`` / ``failed`` with a reason."""
        with access.transaction(self.engine, f"record what became of fire {fire_id}") as conn:
            sch.settle_fire(conn, fire_id, status, run_id, reason)

    def unplanned_fires(self) -> list[tuple[DueFire, str, str]]:
        """Fires that made no run, newest first, with their status and reason."""
        with access.read(self.engine, "read the scheduled fires that made no run") as conn:
            return sch.unplanned_fires(conn)

    def unplanned_fires_zoned(self) -> list[tuple[DueFire, str, str, str]]:
        """:meth:`unplanned_fires`, each with its schedule's time zone (UTC when the
        schedule is gone), in one read."""
        with access.read(self.engine, "read the scheduled fires that made no run") as conn:
            unplanned = sch.unplanned_fires(conn)
            zones = {s.name: s.timezone for s in sch.all_schedules(conn)} if unplanned else {}
        return [(fire, status, reason, zones.get(fire.campaign_name, "UTC"))
                for fire, status, reason in unplanned]


__all__ = ["DueFire", "FireStore"]
