"""Dispatch: pacing maths, send windows and (later) the dispatcher and triggers."""

from __future__ import annotations
