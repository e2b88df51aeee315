"""What counts as a click on a tracked link.

Every hit on a valid link is stored; it is *counted* as a click only when a person most
likely opened it. Not counted, with the reason stored beside it:

- a known link-preview fetcher or crawler, by its user agent (:data:`FETCHERS`: those that
  document their user agent: WhatsApp, facebookexternalhit/Facebot (also Apple's
  iMessage previews), Twitterbot, Slackbot (and Slack's image proxy), TelegramBot,
  Discordbot, LinkedInBot, SkypeUriPreview, Googlebot, bingbot, Applebot). Generic HTTP
  clients (curl, python-requests) are not on the list: nothing documents them as
  fetchers, and a person may use one;
- a ``HEAD`` request: it asks whether the link works, it does not open it;
- a hit less than :data:`EARLY_S` seconds after the message was sent (or handed to the
  service, when no sent receipt came yet): no person reads and taps that fast; an app or
  gateway fetching a preview does.

A hit on a message whose send time is unknown is counted. Nothing about the IP address is
kept (see :mod:`scheduler.links.routes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

#: Seconds after the send within which a hit is a fetcher's, not a person's.
EARLY_S = 10.0
#: The longest user agent stored (longer ones are cut).
USER_AGENT_CHARS = 300

#: (pattern in the user agent, name shown), checked in order, case-insensitively.
FETCHERS: tuple[tuple[str, str], ...] = (
    ("whatsapp", "WhatsApp"),
    ("facebookexternalhit", "facebookexternalhit"),
    ("facebot", "Facebot"),
    ("twitterbot", "Twitterbot"),
    ("slackbot", "Slackbot"),
    ("slack-imgproxy", "Slack-ImgProxy"),
    ("telegrambot", "TelegramBot"),
    ("discordbot", "Discordbot"),
    ("linkedinbot", "LinkedInBot"),
    ("skypeuripreview", "SkypeUriPreview"),
    ("googlebot", "Googlebot"),
    ("bingbot", "bingbot"),
    ("applebot", "Applebot"),
)
_FETCHER = re.compile("|".join(re.escape(p) for p, _ in FETCHERS), re.IGNORECASE)
_NAMES = dict(FETCHERS)


@dataclass(frozen=True)
class ClickVerdict:
    """Whether a hit counts as a click, and why not when it does not."""

    counted: bool
    why_not: str | None = None


def fetcher_of(user_agent: str | None) -> str | None:
    """The known fetcher a user agent names, or ``None``."""
    if not user_agent:
        return None
    found = _FETCHER.search(user_agent)
    return _NAMES[found.group(0).lower()] if found else None


def judge(*, method: str, user_agent: str | None, sent_at: datetime | None,
          now: datetime, early_s: float = EARLY_S) -> ClickVerdict:
    """Whether a hit at ``now`` on a message sent at ``sent_at`` counts as a click."""
    fetcher = fetcher_of(user_agent)
    if fetcher is not None:
        return ClickVerdict(False, f"link preview: {fetcher}")
    if method.upper() == "HEAD":
        return ClickVerdict(False, "HEAD request (checks the link, does not open it)")
    if sent_at is not None:
        after = (now - sent_at).total_seconds()
        if after < early_s:
            return ClickVerdict(False, f"{max(after, 0):.1f} s after the send (under "
                                  f"{early_s:g} s: a fetcher, not a person)")
    return ClickVerdict(True)


def stored_user_agent(user_agent: str | None) -> str | None:
    """The user agent as stored: cut to :data:`USER_AGENT_CHARS`, ``None`` when absent."""
    if not user_agent:
        return None
    return user_agent[:USER_AGENT_CHARS]
