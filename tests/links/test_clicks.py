"""What counts as a click: people, not link-preview fetchers (pure, fixed datetimes)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler.links.clicks import USER_AGENT_CHARS, judge, stored_user_agent
from tests.factories import T0

PHONE = ("Mozilla/5.0 (Linux; Android 14; SM-A546E) AppleWebKit/537.36 (KHTML, like Gecko) "
         "Chrome/124.0.0.0 Mobile Safari/537.36")
LATER = T0 + timedelta(minutes=3)


@pytest.mark.parametrize(("agent", "name"), [
    ("WhatsApp/2.23.20.0 A", "WhatsApp"),
    ("facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
     "facebookexternalhit"),
    ("Mozilla/5.0 (Macintosh) facebookexternalhit/1.1 Facebot Twitterbot/1.0",
     "facebookexternalhit"),  # iMessage's preview
    ("Twitterbot/1.0", "Twitterbot"),
    ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "Slackbot"),
    ("TelegramBot (like TwitterBot)", "TelegramBot"),
    ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
    ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "bingbot"),
])
def test_a_preview_fetcher_is_kept_but_not_counted(agent: str, name: str) -> None:
    verdict = judge(method="GET", user_agent=agent, sent_at=T0, now=LATER)
    assert not verdict.counted
    assert verdict.why_not == f"link preview: {name}"


@pytest.mark.parametrize("agent", [PHONE, "curl/8.5.0", None, ""])
def test_a_browser_and_undocumented_clients_count(agent: str | None) -> None:
    assert judge(method="GET", user_agent=agent, sent_at=T0, now=LATER).counted


def test_a_hit_within_seconds_of_the_send_is_not_a_person() -> None:
    soon = judge(method="GET", user_agent=PHONE, sent_at=T0, now=T0 + timedelta(seconds=4))
    assert not soon.counted
    assert soon.why_not is not None and soon.why_not.startswith("4.0 s after the send")
    assert judge(method="GET", user_agent=PHONE, sent_at=T0,
                 now=T0 + timedelta(seconds=10)).counted


def test_an_unknown_send_time_counts_and_head_does_not() -> None:
    assert judge(method="GET", user_agent=PHONE, sent_at=None, now=T0).counted
    head = judge(method="HEAD", user_agent=PHONE, sent_at=T0, now=LATER)
    assert not head.counted and head.why_not is not None and "HEAD" in head.why_not


def test_the_stored_user_agent_is_cut() -> None:
    assert stored_user_agent("x" * 1000) == "x" * USER_AGENT_CHARS
    assert stored_user_agent("") is None
