"""The ledger: campaigns, runs, deliveries, events and the suppression list, in one database."""

from __future__ import annotations
