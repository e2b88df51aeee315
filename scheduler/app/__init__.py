"""The program's wiring: which run a command continues or starts, and on what terms."""

from __future__ import annotations
