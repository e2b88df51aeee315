"""Who holds a run: the owner's lease, judged from its pid, host and heartbeat; and whether
a registered worker is live.

A run is dispatched by at most one live process at a time: the owner writes its pid, host
and a heartbeat; another process may take the run over only when the owner's heartbeat is
stale or its pid is gone. Pure functions over a stored :class:`Run` and the time.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # light for its readers (``campaign status`` asks whether workers live)
    from scheduler.ledger.models import Run
    from scheduler.ledger.rows import WorkerRow

#: A heartbeat older than this means the owner is gone.
LEASE_STALE_AFTER = timedelta(seconds=10)
#: A planner on another host is trusted to be storing its plan for this long.
PLANNER_TRUSTED_FOR = timedelta(hours=1)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_alive(run: Run, now: datetime) -> bool:
    """Whether the run's owner still holds it (this process always does)."""
    if run.owner_pid is None or run.heartbeat_at is None:
        return False
    here = run.owner_host == socket.gethostname()
    if here and not pid_alive(run.owner_pid):
        return False
    return now - run.heartbeat_at < LEASE_STALE_AFTER or (here and run.owner_pid == os.getpid())


def planner_alive(run: Run, now: datetime) -> bool:
    """Whether the process that created the run may still be storing its plan.

    A plan is stored in one long write transaction, during which the planner cannot write
    a heartbeat; on this host its pid tells, elsewhere the creation time does.
    """
    if run.owner_pid is None:
        return False
    if run.owner_host == socket.gethostname():
        return pid_alive(run.owner_pid)
    return now - run.created_at < PLANNER_TRUSTED_FOR


def worker_is_live(worker: WorkerRow, now: datetime, lease: timedelta) -> bool:
    """Whether a registered worker is live: not stopped, heartbeat fresh, and (on this
    host) its process still exists."""
    if worker.stopped_at is not None or now - worker.heartbeat_at >= lease:
        return False
    return worker.host != socket.gethostname() or pid_alive(worker.pid)
