"""The verdict on a watched row's outcome, as pure functions of fixed datetimes: what a
recipient gets next (another attempt when, the fallback, nothing) and the words saying why."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from scheduler.dispatch.recycle.judge import judge
from scheduler.dispatch.recycle.timing import recipient_zone
from scheduler.dispatch.recycle.verdicts import Fallback, Final, Retry, Verdict, Wait
from scheduler.ledger.rows import WatchedRow
from scheduler.settings.retry_rules import (
    FallbackOptions,
    RecycleOptions,
    RetryRule,
    RuleWindow,
    StepRecycle,
)

SP = ZoneInfo("America/Sao_Paulo")  # -03:00, no DST since 2019
NY = ZoneInfo("America/New_York")
#: 2026-11-27 is a Friday; 13:00 UTC is 10:00 in São Paulo, 08:00 in New York.
SENT = datetime(2026, 11, 27, 13, 0, tzinfo=UTC)
NOW = SENT + timedelta(minutes=5)
SP_NUMBER = "5511987654321"
NY_NUMBER = "12125550123"

VOICE = RecycleOptions(steps={0: StepRecycle(rules=(
    RetryRule(on="no_answer", delay_s=7200, max_attempts=3,
              window=RuleWindow(opens_min=9 * 60, closes_min=20 * 60)),
    RetryRule(on="busy", delay_s=600, max_attempts=5),
    RetryRule(on="failed", delay_s=1800, max_attempts=2),
), min_talk_s=10)})
SMS = RecycleOptions(steps={0: StepRecycle(rules=(
    RetryRule(on="undelivered", delay_s=3600, max_attempts=2),))})
SMS_OWN_CODES = RecycleOptions(steps={0: StepRecycle(rules=(
    RetryRule(on="undelivered", delay_s=3600, max_attempts=2, codes=("NETWORK_ERROR",)),))})
CALLS = RecycleOptions(steps={0: StepRecycle(rules=(
    RetryRule(on="not_answered", delay_s=1800, max_attempts=2),))})
WA_SMS = RecycleOptions(fallback=FallbackOptions(after_s=6 * 3600, when="not_delivered",
                                                 channel="sms"))
WA_SMS_READ = RecycleOptions(fallback=FallbackOptions(after_s=6 * 3600, when="not_read",
                                                      channel="sms"))
SMS_PAYLOAD = {"kind": "sms", "path": "/api/v1/sms/send", "payload": {"text": "Olá"}}


def row(state: str, *, to: str = SP_NUMBER, attempt: int = 1, step: int = 0,
        details: dict[str, Any] | None = None, ended: bool = True,
        fallback: dict[str, Any] | None = None, suppressed: bool = False,
        region: str | None = "BR", **times: datetime | None) -> WatchedRow:
    """A watched row sent at SENT (its first attempt too unless ``first_dispatched_at``),
    its call ended at NOW unless ``ended_at`` (a retry's delay counts from the end)."""
    dispatched = times.get("dispatched_at", SENT)
    return WatchedRow(
        id=10 + attempt, first_id=11, run_id=1, row=1, step=step, attempt=attempt, to=to,
        region=region, kind="voice", state=state, dispatched_at=dispatched,
        first_dispatched_at=times.get("first_dispatched_at", SENT),
        delivered_at=times.get("delivered_at"), read_at=times.get("read_at"),
        ended_at=times.get("ended_at", NOW) if ended else None,
        details=details or {}, fallback=fallback, suppressed=suppressed)


def zone(r: WatchedRow) -> tzinfo:
    return recipient_zone(r, "UTC")


def verdict(r: WatchedRow, recycle: RecycleOptions = VOICE, *, channel: str = "voice",
            now: datetime = NOW, latest: datetime | None = None) -> Verdict:
    return judge(r, recycle, channel=channel, now=now, zone_for=zone, latest=latest)


# ------------------------------------------------------------------------------ voice


def test_no_answer_is_called_again_after_its_delay_inside_the_window() -> None:
    v = verdict(row("not_answered", details={"cause": 19}))
    assert isinstance(v, Retry)
    assert (v.rule, v.attempt, v.due_at) == ("no_answer", 2, NOW + timedelta(hours=2))
    assert v.why == ("not answered (no answer, cause 19): attempt 2 due 12:05 -03:00, "
                     "in the recipient's window 09:00-20:00")


@pytest.mark.parametrize(("cause", "words"), [(150, "ring time-out"), (151, "voicemail")])
def test_ring_time_out_and_voicemail_count_as_no_answer(cause: int, words: str) -> None:
    v = verdict(row("not_answered", details={"cause": cause}))
    assert isinstance(v, Retry) and v.rule == "no_answer" and v.attempt == 2
    assert v.why.startswith(f"not answered ({words}, cause {cause}): attempt 2")


def test_busy_is_called_again_on_its_own_delay() -> None:
    v = verdict(row("not_answered", attempt=2, details={"cause": 17}))
    assert isinstance(v, Retry)
    assert (v.rule, v.attempt, v.due_at) == ("busy", 3, NOW + timedelta(minutes=10))
    assert v.why == "busy (cause 17): attempt 3 due 10:15 -03:00"


def test_another_cause_is_a_failed_call_with_its_own_rule() -> None:
    v = verdict(row("not_answered", details={"cause": 21}))
    assert isinstance(v, Retry) and v.rule == "failed" and v.due_at == NOW + timedelta(
        minutes=30)
    assert v.why.startswith("call failed (rejected, cause 21): attempt 2")
    without_rule = RecycleOptions(steps={0: StepRecycle(rules=VOICE.steps[0].rules[:2])})
    final = verdict(row("not_answered", details={"cause": 21}), without_rule)
    assert final == Final("call failed (rejected, cause 21): no rule retries it", False)


def test_an_answered_call_shorter_than_min_talk_counts_as_not_answered() -> None:
    v = verdict(row("answered", details={"answered": True, "talkSeconds": 4}))
    # the no_answer rule fires; the attempt says it follows a short call (the funnel does
    # not count that call as reached)
    assert isinstance(v, Retry) and v.rule == "short_call"
    assert v.why.startswith("answered for 4 s, less than min_talk 10 s: counted as not "
                            "reached: attempt 2 due")


def test_an_answered_call_as_long_as_min_talk_reached_the_recipient() -> None:
    assert verdict(row("answered", details={"talkSeconds": 10})) == Final(
        "reached: answered for 10 s", True)
    assert verdict(row("answered", details={"talkSeconds": 42}), RecycleOptions()) == Final(
        "reached: answered", True)


def test_a_call_in_progress_is_waited_for_then_counts_as_no_outcome() -> None:
    talking = row("answered", ended=False, details={"talkSeconds": None})
    assert verdict(talking) == Wait(SENT + timedelta(hours=1),
                                    "answered, still talking: its outcome is awaited")
    ringing = row("sent", ended=False)
    assert verdict(ringing, now=SENT + timedelta(minutes=59, seconds=59)) == Wait(
        SENT + timedelta(hours=1), "the call has not ended: its outcome is awaited")
    late = verdict(ringing, now=SENT + timedelta(hours=1))
    assert late == Final("no outcome within 1 h of the send: not retried", False)  # never retried


def test_the_last_attempt_of_a_rule_is_final() -> None:
    v = verdict(row("not_answered", attempt=3, details={"cause": 19}))
    assert v == Final("not answered (no answer, cause 19) at attempt 3: the most attempts "
                      "of this rule (3)", False)
    # a busy rule allows 5: attempt 3's busy outcome still gets attempt 4
    busy = verdict(row("not_answered", attempt=3, details={"cause": 17}))
    assert isinstance(busy, Retry) and busy.attempt == 4


def test_no_attempt_is_due_after_the_runs_last_send_time() -> None:
    r = row("not_answered", details={"cause": 17})
    due = NOW + timedelta(minutes=10)
    assert isinstance(verdict(r, latest=due + timedelta(seconds=1)), Retry)
    assert verdict(r, latest=due) == Final(
        "busy (cause 17): attempt 2 would be due after the run's last send time", False)


# --------------------------------------------------------------- windows and zones


def test_a_closed_window_moves_the_attempt_to_its_next_opening_in_the_recipients_zone(
) -> None:
    # 19:30 in São Paulo (22:30 UTC) + 2 h = 21:30: closed; opens 09:00 -03:00 tomorrow
    evening = datetime(2026, 11, 27, 22, 30, tzinfo=UTC)
    v = verdict(row("not_answered", details={"cause": 19}, ended_at=evening), now=evening)
    assert isinstance(v, Retry)
    assert v.due_at == datetime(2026, 11, 28, 9, 0, tzinfo=SP)
    assert v.why == ("not answered (no answer, cause 19): attempt 2 due 2026-11-28 09:00 "
                     "-03:00, in the recipient's window 09:00-20:00")


def test_the_window_is_the_recipients_not_the_campaigns() -> None:
    # 12:00 UTC + 2 h = 14:00 UTC: 11:00 in São Paulo (open), 09:00 in New York (open),
    # but at 11:30 UTC + 2 h = 13:30 UTC New York is at 08:30: closed until 09:00 there
    morning = datetime(2026, 11, 27, 11, 30, tzinfo=UTC)
    sp = verdict(row("not_answered", details={"cause": 19}), now=morning)
    ny = verdict(row("not_answered", to=NY_NUMBER, region="US", details={"cause": 19}),
                 now=morning)
    assert isinstance(sp, Retry) and sp.due_at == morning + timedelta(hours=2)
    assert isinstance(ny, Retry) and ny.due_at == datetime(2026, 11, 27, 9, 0, tzinfo=NY)
    assert ny.why.endswith("attempt 2 due 09:00 EST, in the recipient's window 09:00-20:00")


def test_an_overnight_window_runs_across_midnight() -> None:
    night = RecycleOptions(steps={0: StepRecycle(rules=(
        RetryRule(on="busy", delay_s=3600, max_attempts=3,
                  window=RuleWindow(opens_min=22 * 60, closes_min=6 * 60)),))})
    # 23:30 São Paulo + 1 h = 00:30 the next day: inside the window opened at 22:00
    late = datetime(2026, 11, 28, 2, 30, tzinfo=UTC)
    v = verdict(row("not_answered", details={"cause": 17}, ended_at=late), night, now=late)
    assert isinstance(v, Retry) and v.due_at == late + timedelta(hours=1)
    # 05:30 + 1 h = 06:30: closed since 06:00, opens again at 22:00 the same day
    dawn = datetime(2026, 11, 28, 8, 30, tzinfo=UTC)
    v = verdict(row("not_answered", details={"cause": 17}, ended_at=dawn), night, now=dawn)
    assert isinstance(v, Retry) and v.due_at == datetime(2026, 11, 28, 22, 0, tzinfo=SP)


def test_recipient_zone_by_number_then_region_then_the_campaigns() -> None:
    assert recipient_zone(row("sent", to=NY_NUMBER), "UTC") == NY
    assert recipient_zone(row("sent", to="5568999887766"), "UTC") == ZoneInfo(
        "America/Rio_Branco")
    unknown = row("sent", to="999", region="BR")
    assert recipient_zone(unknown, "UTC") == SP
    assert recipient_zone(replace(unknown, region=None), "Europe/Lisbon") == ZoneInfo(
        "Europe/Lisbon")


# -------------------------------------------------------------------------------- sms


@pytest.mark.parametrize("code", ["NETWORK_ERROR", "NO_COVERAGE", "NOT_RECEIVED"])
def test_retryable_sms_codes_are_sent_again(code: str) -> None:
    v = verdict(row("undelivered", details={"errorCode": code}), SMS, channel="sms")
    assert isinstance(v, Retry) and (v.rule, v.attempt) == ("undelivered", 2)
    assert v.due_at == NOW + timedelta(hours=1)
    assert v.why == f"SMS undelivered ({code}): attempt 2 due 11:05 -03:00"


@pytest.mark.parametrize("code", ["INVALID_NUMBER", "LANDLINE", "BLACKLIST"])
def test_terminal_sms_codes_are_never_retried(code: str) -> None:
    v = verdict(row("undelivered", details={"errorCode": code}), SMS, channel="sms")
    assert v == Final(f"SMS undelivered ({code}): never retried", False)


def test_a_rules_own_codes_are_the_only_ones_it_retries() -> None:
    coverage = row("undelivered", details={"errorCode": "NO_COVERAGE"})
    assert verdict(coverage, SMS_OWN_CODES, channel="sms") == Final(
        "SMS undelivered (NO_COVERAGE): not retried (the rule retries NETWORK_ERROR)", False)
    network = row("undelivered", details={"errorCode": "network_error"})
    assert isinstance(verdict(network, SMS_OWN_CODES, channel="sms"), Retry)


def test_sms_delivered_and_awaited() -> None:
    assert verdict(row("delivered"), SMS, channel="sms") == Final(
        "reached: SMS delivered", True)
    assert verdict(row("sent"), SMS, channel="sms") == Wait(
        SENT + timedelta(hours=1), "no delivery report yet: its outcome is awaited")


# ------------------------------------------------------------------- WhatsApp calls


def test_a_whatsapp_call_not_answered_is_called_again() -> None:
    v = verdict(row("not_answered"), CALLS, channel="calls")
    assert isinstance(v, Retry) and (v.rule, v.attempt) == ("not_answered", 2)
    assert v.why.startswith("WhatsApp call not answered: attempt 2 due 10:35")
    assert verdict(row("answered"), CALLS, channel="calls") == Final(
        "reached: WhatsApp call answered", True)
    assert verdict(row("not_answered", attempt=2), CALLS, channel="calls") == Final(
        "WhatsApp call not answered at attempt 2: the most attempts of this rule (2)",
        False)


# ---------------------------------------------------------- WhatsApp and the fallback


def test_whatsapp_not_delivered_waits_until_after_then_falls_back() -> None:
    r = row("sent", fallback=SMS_PAYLOAD)
    after = SENT + timedelta(hours=6)
    assert verdict(r, WA_SMS, channel="whatsapp", now=after - timedelta(seconds=1)) == Wait(
        after, "not delivered: the SMS fallback is decided 6 h after the first send")
    assert verdict(r, WA_SMS, channel="whatsapp", now=after) == Fallback(
        2, "sms", "not delivered within 6 h: SMS fallback")


def test_whatsapp_delivered_is_reached_at_once_for_not_delivered() -> None:
    r = row("delivered", delivered_at=SENT + timedelta(minutes=1), fallback=SMS_PAYLOAD)
    assert verdict(r, WA_SMS, channel="whatsapp") == Final("reached: delivered", True)


def test_whatsapp_not_read_falls_back_a_delivered_message_after_after() -> None:
    delivered = row("delivered", delivered_at=SENT, fallback=SMS_PAYLOAD)
    after = SENT + timedelta(hours=6)
    assert verdict(delivered, WA_SMS_READ, channel="whatsapp") == Wait(
        after, "delivered, not read: the SMS fallback is decided 6 h after the first send")
    assert verdict(delivered, WA_SMS_READ, channel="whatsapp", now=after) == Fallback(
        2, "sms", "not read within 6 h: SMS fallback")
    read = row("read", delivered_at=SENT, read_at=SENT, fallback=SMS_PAYLOAD)
    assert verdict(read, WA_SMS_READ, channel="whatsapp") == Final("reached: read", True)


def test_no_fallback_for_a_line_that_cannot_take_it() -> None:
    landline = row("sent", fallback={"none": "landline: SMS needs a mobile number"})
    assert verdict(landline, WA_SMS, channel="whatsapp", now=SENT + timedelta(hours=7)) == (
        Final("no fallback: landline: SMS needs a mobile number", False))


def test_fallback_counts_after_from_the_first_attempt_once_retries_are_spent() -> None:
    with_fallback = VOICE.model_copy(update={"fallback": FallbackOptions(
        after_s=6 * 3600, when="not_answered", channel="sms")})
    third = row("not_answered", attempt=3, details={"cause": 19}, fallback=SMS_PAYLOAD,
                dispatched_at=SENT + timedelta(hours=4))
    at = SENT + timedelta(hours=4, minutes=2)
    assert verdict(third, with_fallback, now=at) == Wait(
        SENT + timedelta(hours=6), "not answered (no answer, cause 19) at attempt 3: the "
        "most attempts of this rule (3): the SMS fallback is decided 6 h after the first "
        "send")
    assert verdict(third, with_fallback, now=SENT + timedelta(hours=6)) == Fallback(
        4, "sms", "not answered within 6 h: SMS fallback")
    # a later step never falls back
    assert verdict(replace(third, step=1), with_fallback, now=at) == Final(
        "not answered (no answer, cause 19): no more attempts", False)


@pytest.mark.parametrize("state", ["failed", "unknown"])
def test_failed_and_unknown_sends_fall_back_but_are_never_retried(state: str) -> None:
    retries_failed = VOICE.model_copy(update={"fallback": FallbackOptions(
        after_s=3600, when="not_answered", channel="sms")})
    r = row(state, fallback=SMS_PAYLOAD)
    v = verdict(r, retries_failed)
    assert isinstance(v, Wait) and v.until == SENT + timedelta(hours=1)
    fallback = verdict(r, retries_failed, now=SENT + timedelta(hours=1))
    assert isinstance(fallback, Fallback) and fallback.attempt == 2
    without = verdict(r, VOICE)
    assert isinstance(without, Final) and not without.reached


# ----------------------------------------------------------------- terminal outcomes


def test_an_opted_out_number_gets_nothing_more() -> None:
    r = row("not_answered", details={"cause": 19}, suppressed=True, fallback=SMS_PAYLOAD)
    assert verdict(r) == Final("opted out: no more attempts", False)
    wa = row("sent", suppressed=True, fallback=SMS_PAYLOAD)
    assert verdict(wa, WA_SMS, channel="whatsapp", now=SENT + timedelta(hours=7)) == Final(
        "opted out: no more attempts", False)


@pytest.mark.parametrize(("state", "words"), [
    ("skipped", "skipped, never sent (opted out or an audience rule): no more attempts"),
    ("expired", "expired before it was sent (its send window ran out): no more attempts")])
def test_skipped_and_expired_rows_are_final(state: str, words: str) -> None:
    r = row(state, fallback=SMS_PAYLOAD, dispatched_at=None, first_dispatched_at=None)
    assert verdict(r, WA_SMS, channel="whatsapp", now=SENT + timedelta(hours=7)) == Final(
        words, False)


def test_an_invalid_sms_number_gets_no_fallback_but_a_landline_may() -> None:
    to_voice = SMS.model_copy(update={"fallback": FallbackOptions(
        after_s=3600, when="not_delivered", channel="voice")})
    payload = {"kind": "voice", "path": "/api/v1/voice/call", "payload": {}}
    later = SENT + timedelta(hours=1)
    invalid = row("undelivered", details={"errorCode": "INVALID_NUMBER"}, fallback=payload)
    assert verdict(invalid, to_voice, channel="sms", now=later) == Final(
        "SMS undelivered (INVALID_NUMBER): never retried", False)
    landline = row("undelivered", details={"errorCode": "LANDLINE"}, fallback=payload)
    assert verdict(landline, to_voice, channel="sms", now=later) == Fallback(
        2, "voice", "not delivered within 1 h: voice call fallback")


def test_a_refused_send_is_not_retried_even_by_a_failed_rule() -> None:
    # VOICE retries "failed" calls (ended unanswered, e.g. rejected); a send the service
    # refused was already retried by the dispatcher as far as a retry could help
    assert verdict(row("failed", ended=False)) == Final(
        "the service refused the send: not retried", False)
    assert verdict(row("unknown", ended=False)) == Final(
        "not known whether the service took the send: not retried", False)


def test_a_row_planned_without_a_fallback_gets_none() -> None:
    r = row("sent", fallback=None)
    assert verdict(r, WA_SMS, channel="whatsapp", now=SENT + timedelta(hours=6)) == Final(
        "not delivered: no fallback planned for this recipient", False)


def test_the_next_opening_is_at_local_time_across_a_dst_change() -> None:
    # New York springs forward on 2026-03-08: the window opens at 09:00 EDT (13:00 UTC),
    # not 09:00 EST (14:00 UTC) as the previous evening's offset would say
    evening = datetime(2026, 3, 7, 23, 0, tzinfo=UTC)  # 18:00 EST + 2 h = 20:00: closed
    r = row("not_answered", to=NY_NUMBER, region="US", details={"cause": 19},
            dispatched_at=evening - timedelta(minutes=5), ended_at=evening)
    v = verdict(r, now=evening)
    assert isinstance(v, Retry) and v.due_at == datetime(2026, 3, 8, 13, 0, tzinfo=UTC)
    assert "attempt 2 due 2026-03-08 09:00 EDT" in v.why


def test_the_delay_counts_from_the_calls_end_when_the_verdict_comes_later() -> None:
    """A verdict taken a while after the call ended (a busy check, a rehearsal's clock)
    does not push the attempt later: due at the end + delay, and never in the past."""
    ended = SENT + timedelta(minutes=1)
    v = verdict(row("not_answered", details={"cause": 17}, ended_at=ended))
    assert isinstance(v, Retry) and v.due_at == ended + timedelta(minutes=10)
    much_later = ended + timedelta(hours=1)
    v = verdict(row("not_answered", details={"cause": 17}, ended_at=ended), now=much_later)
    assert isinstance(v, Retry) and v.due_at == much_later
