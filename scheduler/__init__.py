"""Campaign scheduler for the Messaging Session Service: plan, pace, send, track, report."""

from __future__ import annotations

__version__ = "0.1.0"
