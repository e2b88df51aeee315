"""``[audience]`` as a campaign file writes it: how often one number may be sent to.

Frequency caps per recipient, counted across every campaign and run of the ledger (like
Mautic's frequency rules), and a hold on recipients who keep receiving without ever
reading or replying. The definition (:mod:`scheduler.campaign.definition`) reads the table
with this model; the engine asks :mod:`scheduler.ledger.queries.audience` which rows of a
claim batch they hold back.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from scheduler.settings.run import UNENGAGED_DAYS


class AudienceSpec(BaseModel):
    """``[audience]``: at most so many messages per number per day and per 7 days, from
    every campaign, and a hold on numbers that never read nor reply. Rows held back are
    skipped with their reason (and so are their recipient's later steps)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_per_day: int | None = Field(default=None, ge=1, description=(
        "The most messages one number receives per local day (the campaign's time zone), "
        "counting every campaign's and run's sends to it on any channel, each step one; a "
        "row over it is skipped with its reason. Unset: no cap."))
    max_per_week: int | None = Field(default=None, ge=1, description=(
        "The most messages one number receives in any 7 days (the last 7 × 24 hours), "
        "counting every campaign's and run's sends to it. Unset: no cap."))
    hold_unengaged_after: int | None = Field(default=None, ge=1, description=(
        f"Skip a number that received at least this many messages in the last "
        f"{UNENGAGED_DAYS} days (any campaign) and read or replied to none of them. A "
        "recipient who turned read receipts off looks unread until they reply. Unset: "
        "no hold."))
