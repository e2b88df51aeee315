"""The Messaging Session Service, emulated: a seedable FastAPI app plus a simulated network.

``create_app(SandboxConfig(seed=1))`` gives an app whose ``app.state.sandbox`` is the
in-memory :class:`~scheduler.sandbox.world.Sandbox`; ``campaign sandbox`` serves one.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Re-exported lazily (PEP 562): ``campaign senders`` asks an in-process Sandbox for its
# limits (``sandbox.world``) without importing the app and its FastAPI (issue 32).
if TYPE_CHECKING:
    from scheduler.sandbox.app import create_app
    from scheduler.sandbox.config import SandboxConfig
    from scheduler.sandbox.world import Sandbox

_EXPORTS = {"create_app": "app", "SandboxConfig": "config", "Sandbox": "world"}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module when first asked for."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__all__ = ["Sandbox", "SandboxConfig", "create_app"]
