"""The dispatcher of one run, split by role around one state (see :mod:`.loop`)."""

from __future__ import annotations

from scheduler.dispatch.dispatcher.loop import Dispatcher
from scheduler.dispatch.dispatcher.setup import RunSetup, Timing

__all__ = ["Dispatcher", "RunSetup", "Timing"]
