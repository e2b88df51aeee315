"""The SMS and voice examples (``campaigns/sms_blast.toml``, ``campaigns/voice_survey.toml``)
rehearse as documented: equal SMS texts share bulk requests, calls go out in batches."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from scheduler.usecases.rehearsal import rehearse_campaign
from tests.factories import REPO

#: A Monday, before both windows open.
START = datetime(2027, 3, 8, 8, 0, tzinfo=ZoneInfo("America/Sao_Paulo"))


def test_the_sms_blast_groups_equal_texts_into_bulk_requests() -> None:
    rehearsal = rehearse_campaign(REPO / "campaigns" / "sms_blast.toml", start=START)
    assert rehearsal.result.counts == {"accepted": 48, "skipped": 2}  # no number, a landline
    assert rehearsal.per_sender == {"account": 48}
    # 16 "Premium" texts are personal (one request each); the 32 "Básico" recipients read
    # the same text: two /sms/bulk requests of at most 25 ([pace] batch).
    assert rehearsal.sends == 16 + 2
    assert rehearsal.finish.astimezone(START.tzinfo).hour == 9  # sent when the window opens


def test_the_voice_survey_calls_in_batches_inside_its_window() -> None:
    rehearsal = rehearse_campaign(REPO / "campaigns" / "voice_survey.toml", start=START)
    assert rehearsal.result.counts == {"accepted": 31}  # the office landline is called too
    assert rehearsal.per_sender == {"account": 31}
    assert rehearsal.sends == 4  # /voice/bulk requests of at most 10 recipients
    local = [entry.at.astimezone(START.tzinfo) for entry in rehearsal.timeline]
    assert all(at.hour < 18 for at in local)
