"""The ``[dashboard]`` settings, as the dashboard's modules import them.

They live in the leaf module :mod:`scheduler.dashboard_settings` so that ``config`` can
hold them without importing this package (which imports ``config``: a cycle).
"""

from __future__ import annotations

from scheduler.dashboard_settings import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    LOOPBACK,
    DashboardSettings,
    DashboardUser,
)

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "LOOPBACK", "DashboardSettings", "DashboardUser"]
