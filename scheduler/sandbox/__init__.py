"""The Messaging Session Service, emulated: a seedable FastAPI app plus a simulated network.

``create_app(SandboxConfig(seed=1))`` gives an app whose ``app.state.sandbox`` is the
in-memory :class:`~scheduler.sandbox.world.Sandbox`; ``campaign sandbox`` serves one.
"""

from __future__ import annotations

from scheduler.sandbox.app import create_app
from scheduler.sandbox.config import SandboxConfig
from scheduler.sandbox.world import Sandbox

__all__ = ["Sandbox", "SandboxConfig", "create_app"]
