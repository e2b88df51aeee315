"""The dispatcher of one run, split by role around one state (see :mod:`.loop`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Re-exported lazily (PEP 562): a module that needs one constant of a role (``campaign
# plan`` reads ``claims.REFILL``) does not import the whole dispatcher.
if TYPE_CHECKING:
    from scheduler.dispatch.dispatcher.loop import Dispatcher
    from scheduler.dispatch.dispatcher.setup import RunSetup, Timing

_EXPORTS = {"Dispatcher": "loop", "RunSetup": "setup", "Timing": "setup"}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module when first asked for."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__all__ = ["Dispatcher", "RunSetup", "Timing"]
