"""The sandbox's plan-limits document of one session, without the app or the world.

:meth:`scheduler.sandbox.world.Sandbox.limits` answers ``GET /limits/{session}`` with it,
and ``campaign senders`` reads it in process for the embedded sandbox (which that command
would otherwise start, with FastAPI and uvicorn, only to ask it over loopback; issue 32).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from scheduler.sandbox.common import iso_ms
from scheduler.sandbox.state import COUNTERS, next_midnight

if TYPE_CHECKING:
    from scheduler.sandbox.config import SandboxConfig


def limits_document(config: SandboxConfig, used: dict[str, int] | None,
                    now: datetime) -> dict[str, Any]:
    """The limits document of a session that has used ``used`` today (None: nothing yet,
    as in a sandbox just started)."""
    return {
        "plan": config.plan,
        "period": "day",
        "limits": {
            "messages": config.daily_message_limit,
            "sms": config.daily_sms_limit,
            "voice": config.daily_voice_limit,
        },
        "used": dict(used) if used is not None else dict.fromkeys(COUNTERS, 0),
        "resetsAt": iso_ms(next_midnight(now)),
    }
