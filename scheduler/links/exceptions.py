"""Errors of tracked links."""

from __future__ import annotations

from scheduler.core.errors import SchedulerError


class LinkError(SchedulerError):
    """Tracked links cannot be made as configured (no public address, no state folder)."""


class BadToken(ValueError):
    """A ``/r/`` token that is not one of ours (malformed, changed or unknown)."""
