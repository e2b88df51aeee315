"""The verdict on one watched row: another attempt, the fallback, wait, or nothing more (pure).

:func:`judge` decides, in this order:

1. a suppressed number (opted out) is final: never retried, never a fallback;
2. a skipped or expired row is final (it was never sent: opted out, an audience rule, its
   send window ran out);
3. the outcome is read per channel (:func:`scheduler.dispatch.recycle.outcome.classify`);
   an outcome still to come is waited for until ``outcome_wait`` after the send, then
   counts as "no outcome" (not retried);
4. a rule for the outcome, below its ``max_attempts`` and due before the run's latest send
   time, makes the next attempt: ``delay`` from now, moved to the opening of the rule's
   window in the recipient's own zone when it is closed then;
5. step 1 of a campaign with ``[fallback]``, not reached: waits until ``after`` from the
   recipient's first send, then falls back (unless the recipient's line cannot take the
   fallback channel, or the number is invalid or blocked);
6. anything else is final: reached, or not reached after what was tried.

No clock is read and nothing is stored: the dispatcher passes ``now`` and writes the
verdicts (:mod:`scheduler.dispatch.dispatcher.recycling`). Every verdict's ``why`` is plain
words for the ledger's ``deliveries.verdict``; times in it are the recipient's, with the
zone's label.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo

from scheduler.core.time_words import clock_time, local_time, written_duration
from scheduler.dispatch.recycle.outcome import PENDING, Outcome, classify
from scheduler.dispatch.recycle.timing import retry_due, window_text
from scheduler.dispatch.recycle.verdicts import Fallback, Final, Retry, Verdict, Wait
from scheduler.ledger.rows import WatchedRow
from scheduler.ledger.states import DeliveryState as S
from scheduler.settings.retry_rules import (
    SHORT_CALL,
    TERMINAL_SMS_CODES,
    RecycleOptions,
    RetryRule,
    StepRecycle,
)

#: ``[fallback] when`` and channel, in words.
WHEN_WORDS = {"not_delivered": "not delivered", "not_read": "not read",
              "not_answered": "not answered"}
_NO_STEP_RULES = StepRecycle()



def _moment(moment: datetime, now: datetime, zone: tzinfo) -> str:
    """``14:00 -03:00`` on ``now``'s local day in ``zone``, else with the date."""
    if moment.astimezone(zone).date() == now.astimezone(zone).date():
        return clock_time(moment, zone, seconds=False)
    return local_time(moment, zone)


def _retry_or_why_not(row: WatchedRow, rule: RetryRule, out: Outcome, *, now: datetime,
                      zone_for: Callable[[WatchedRow], tzinfo],
                      latest: datetime | None) -> Retry | str:
    if out.kind == "undelivered" and not rule.retries_code(out.code):
        if out.code in TERMINAL_SMS_CODES:
            return f"{out.said}: never retried"
        return (f"{out.said}: not retried (the rule retries "
                f"{', '.join(rule.codes) or 'the retryable codes'})")
    attempt = row.attempt + 1
    if row.attempt >= rule.max_attempts:
        return (f"{out.said} at attempt {row.attempt}: the most attempts of this rule "
                f"({rule.max_attempts})")
    zone = zone_for(row)
    # the delay counts from the outcome (a call's end) when the ledger has its time, so a
    # verdict taken later (a rehearsal's clock, a busy check) does not push the attempt
    ended = row.ended_at if row.ended_at is not None and row.ended_at <= now else now
    due, _moved = retry_due(rule, ended, zone)
    due = max(due, now)
    if latest is not None and due >= latest:
        return (f"{out.said}: attempt {attempt} would be due after the run's last send "
                "time")
    where = f", in the recipient's window {window_text(rule.window)}" if rule.window else ""
    # a short call's attempt says so (the funnel does not count it as reached)
    return Retry(SHORT_CALL if out.short else rule.on, attempt, due,
                 f"{out.said}: attempt {attempt} due {_moment(due, now, zone)}{where}")


def _no_rule(out: Outcome, step: StepRecycle) -> str:
    if out.kind == "undelivered" and out.code in TERMINAL_SMS_CODES:
        return f"{out.said}: never retried"
    if out.kind == "not_reached":
        return out.said
    if out.kind in ("refused", "unknown", "no_outcome"):
        return f"{out.said}: not retried"
    return f"{out.said}: no rule retries it" if step.rules else f"{out.said}: no more attempts"


def judge(row: WatchedRow, recycle: RecycleOptions, *, channel: str, now: datetime,
          zone_for: Callable[[WatchedRow], tzinfo], latest: datetime | None) -> Verdict:
    """The verdict on ``row`` (a row of a ``channel`` run) at ``now``: ``zone_for`` gives
    the recipient's zone (:func:`~scheduler.dispatch.recycle.timing.recipient_zone`),
    ``latest`` the run's last send time (``None``: none)."""
    if row.suppressed:
        return Final("opted out: no more attempts", reached=False)
    if row.state == S.SKIPPED:
        return Final("skipped, never sent (opted out or an audience rule): no more "
                     "attempts", reached=False)
    if row.state == S.EXPIRED:
        return Final("expired before it was sent (its send window ran out): no more "
                     "attempts", reached=False)
    step = recycle.steps.get(row.step, _NO_STEP_RULES)
    fallback = recycle.fallback if row.step == 0 else None
    from scheduler.dispatch.channels import channel_for  # the channels load when asked
    out = classify(row, channel_for(channel), min_talk_s=step.min_talk_s,
                   when=fallback.when if fallback else None)
    if out.kind == PENDING:
        sent = row.dispatched_at or row.first_dispatched_at
        waited = timedelta(seconds=recycle.outcome_wait_s)
        if sent is not None and now < sent + waited:
            return Wait(sent + waited, f"{out.said}: its outcome is awaited")
        out = Outcome("no_outcome", "no outcome within "
                      f"{written_duration(recycle.outcome_wait_s)} of the send")
    if out.reached:
        return Final(f"reached: {out.said}", reached=True)
    rule = step.rule_for(out.kind)
    if rule is not None:
        found = _retry_or_why_not(row, rule, out, now=now, zone_for=zone_for, latest=latest)
        if isinstance(found, Retry):
            return found
        why = found
    else:
        why = _no_rule(out, step)
    if fallback is None or not out.may_fall_back:
        return Final(why, reached=False)
    first = row.first_dispatched_at or row.dispatched_at or now
    decided = first + timedelta(seconds=fallback.after_s)
    from scheduler.dispatch.channels import channel_words  # the channels load when asked
    other = channel_words(fallback.channel)
    if now < decided:
        return Wait(decided, f"{why}: the {other} fallback is decided "
                             f"{written_duration(fallback.after_s)} after the first send")
    if row.fallback is None:
        return Final(f"{why}: no fallback planned for this recipient", reached=False)
    if "none" in row.fallback:
        return Final(f"no fallback: {row.fallback['none']}", reached=False)
    return Fallback(row.attempt + 1, fallback.channel,
                    f"{WHEN_WORDS.get(fallback.when, fallback.when)} within "
                    f"{written_duration(fallback.after_s)}: {other} fallback")
