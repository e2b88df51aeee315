"""Second chances as a campaign file writes them: a step's ``retry`` rules and
``min_talk``, and the ``[fallback]`` table.

::

    [[steps]]
    type = "voice"
    flowId = "flow-cobranca"
    min_talk = "10s"                  # voice: an answered call shorter counts as no_answer
    retry = [
      { on = "no_answer", delay = "2h",  max_attempts = 3, window = "09:00-20:00" },
      { on = "busy",      delay = "10m", max_attempts = 5 },
    ]

    [fallback]
    after = "6h"                      # from the recipient's first send of step 1
    when = "not_answered"             # not_delivered | not_read | not_answered
    channel = "sms"                   # sms | voice
    step = { text = "Olá {{ nome }}, tentamos ligar para você." }
    rate = "5/s"                      # optional: the fallback run's pace

The rules are parsed here into :class:`scheduler.settings.retry_rules.StepRecycle` (every problem
named by its step, rule and field); the fallback's step is compiled as a step of its own
channel by :mod:`scheduler.campaign.step_compile` and rendered per row at plan time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, field_validator

from scheduler.core.channel_terms import is_known, terms_of
from scheduler.core.units import Rate, UnitError, parse_duration, parse_window
from scheduler.settings.retry_rules import (
    MAX_ATTEMPTS,
    RETRYABLE_SMS_CODES,
    TERMINAL_SMS_CODES,
    FallbackChannel,
    FallbackWhen,
    RetryRule,
    RuleWindow,
    StepRecycle,
)

#: What a retry rule may say.
RULE_KEYS = ("on", "delay", "max_attempts", "window", "codes")
#: Every SMS error code the service reports (docs/service-facts.md).
SMS_CODES = (*RETRYABLE_SMS_CODES, *TERMINAL_SMS_CODES)
#: ``CampaignSpec.fallback``'s description (the JSON Schema's and the docs').
FALLBACK_HELP = ("A second channel for recipients the first did not reach: after a time, "
                 "one step on SMS or voice, to numbers whose line type it reaches.")
_DURATION_SCHEMA = {"anyOf": [{"type": "string", "examples": ["6h", "30m", "1h30m"]},
                              {"type": "number", "exclusiveMinimum": 0}]}
_WHEN = {"not_delivered": "not delivered", "not_read": "not read",
         "not_answered": "not answered"}
Problem = tuple[str, str]


def seconds(value: Any, name: str) -> float:
    """Seconds of a duration written as text ("2h", "10m") or a number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f'{name} must be a duration such as "2h" or a number of seconds')
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except UnitError as exc:
            raise ValueError(str(exc)) from None
    if value < 0:
        raise ValueError(f"{name} must not be negative")
    return float(value)


class FallbackSpec(BaseModel):
    """``[fallback]``: after ``after``, recipients the first channel did not reach
    (``when``) get one step on ``channel``, if their number's line type suits it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after: Annotated[float, WithJsonSchema(_DURATION_SCHEMA)] = Field(description=(
        'How long after a recipient\'s first send of step 1 the fallback is decided ("6h", '
        '"30m"); a receipt that comes later does not undo it.'))
    when: FallbackWhen = Field(description=(
        "Who gets it: not_delivered (no delivery receipt, or no answer for calls), "
        "not_read (WhatsApp messages: no read receipt) or not_answered (voice and calls)."))
    channel: FallbackChannel = Field(description=(
        "The fallback's channel, another than the campaign's: sms or voice (sent from the "
        "account)."))
    step: dict[str, Any] = Field(min_length=1, description=(
        "The step sent: a step of that channel (sms: text or text_file, route, sender; "
        "voice: audioUrl or flowId, variables, ...), rendered for each recipient."))
    rate: Rate | None = Field(default=None, description=(
        'The fallback run\'s pace ("5/s"); unset: the default rate (20/min).'))

    @field_validator("after", mode="before")
    @classmethod
    def _after(cls, value: Any) -> Any:
        after = seconds(value, "after")
        if after <= 0:
            raise ValueError("after must be more than zero")
        return after


def fallback_problems(channel: str, fallback: FallbackSpec) -> list[Problem]:
    """(key, message) of what ``[fallback]`` cannot be on a ``channel`` campaign."""
    found: list[Problem] = []
    if fallback.channel == channel:
        other = terms_of(channel).fallback_hint
        found.append(("fallback.channel", f"{channel!r} is the campaign's own channel: a "
                      f"fallback goes on another one ({other})"))
    if fallback.when == "not_read" and not terms_of(channel).read_receipts:
        found.append(("fallback.when", f"not_read needs read receipts, which only WhatsApp "
                      f"messages have; a {channel} campaign: use not_delivered"))
    if fallback.when == "not_answered" and not terms_of(channel).calls:
        found.append(("fallback.when", f"not_answered is an outcome of calls (voice or "
                      f"calls campaigns); a {channel} campaign: use not_delivered"))
    for name in ("retry", "min_talk", "delay", "variants", "product"):
        if name in fallback.step:
            found.append((f"fallback.step.{name}", f"a fallback step has no {name}: it is "
                          "sent once, at the fallback's time"))
    return found


def fallback_step_fields(fallback: FallbackSpec) -> dict[str, Any]:
    """The fallback's step table without the keys :func:`fallback_problems` refuses."""
    return {k: v for k, v in fallback.step.items()
            if k not in ("retry", "min_talk", "delay", "variants", "product")}


def when_words(when: str) -> str:
    """``not_answered`` → ``not answered``."""
    return _WHEN.get(when, when)


def step_recycle(raw: dict[str, Any], channel: str, key: str
                 ) -> tuple[StepRecycle | None, list[Problem]]:
    """A step's ``retry`` rules and ``min_talk`` (None: it has neither), and the problems
    found, each as (key path, message) naming the rule and the field."""
    problems: list[Problem] = []
    min_talk = None
    if "min_talk" in raw:
        if not terms_of(channel).call_length:
            problems.append((f"{key}.min_talk", f"min_talk is for voice steps (an answered "
                             f"call shorter counts as no_answer); a {channel} step has no "
                             "call length"))
        else:
            try:
                min_talk = seconds(raw["min_talk"], "min_talk")
            except ValueError as exc:
                problems.append((f"{key}.min_talk", str(exc)))
    rules: list[RetryRule] = []
    if "retry" in raw:
        rules = _rules(raw["retry"], channel, f"{key}.retry", problems)
    if not rules and min_talk is None:
        return None, problems
    return StepRecycle(rules=tuple(rules), min_talk_s=min_talk), problems


def _rules(raw: Any, channel: str, key: str, problems: list[Problem]) -> list[RetryRule]:
    outcomes = terms_of(channel).retry_on if is_known(channel) else ()
    if not outcomes:
        problems.append((key, "WhatsApp messages have no outcome to retry on; use "
                         "[fallback] (e.g. an SMS to those not delivered)"))
        return []
    if not isinstance(raw, list) or not raw:
        problems.append((key, 'retry is a list of rules such as [{ on = "'
                         f'{outcomes[0]}", delay = "2h", max_attempts = 3 }}]'))
        return []
    rules: list[RetryRule] = []
    first_of: dict[str, int] = {}
    for i, table in enumerate(raw):
        rule = _rule(table, channel, outcomes, f"{key}[{i}]", i + 1, problems)
        if rule is None:
            continue
        if rule.on in first_of:
            problems.append((f"{key}[{i}].on", f"rule {i + 1}: a second rule for "
                             f"{rule.on!r} (rule {first_of[rule.on] + 1} has it): one rule "
                             "per outcome"))
            continue
        first_of[rule.on] = i
        rules.append(rule)
    return rules


def _rule(table: Any, channel: str, outcomes: tuple[str, ...], key: str, number: int,
          problems: list[Problem]) -> RetryRule | None:
    """One rule, or None with its problems recorded (every field checked)."""
    if not isinstance(table, dict):
        problems.append((key, f'rule {number} must be a table such as {{ on = "{outcomes[0]}", '
                         'delay = "2h", max_attempts = 3 }'))
        return None
    on = table.get("on")
    name = f"rule {number} ({on})" if isinstance(on, str) else f"rule {number}"
    before = len(problems)

    def bad(field: str, message: str) -> None:
        problems.append((f"{key}.{field}" if field else key, f"{name}: {message}"))

    for extra in [k for k in table if k not in RULE_KEYS]:
        bad(extra, f"unknown key {extra!r} (a rule takes {', '.join(RULE_KEYS)})")
    for needed in ("on", "delay", "max_attempts"):
        if needed not in table:
            bad(needed, f"{needed} is missing")
    if on is not None and on not in outcomes:
        bad("on", f"a {channel} step cannot retry on {on!r}: its outcomes are "
            f"{', '.join(outcomes)}")
    delay = 0.0
    if "delay" in table:
        try:
            delay = seconds(table["delay"], "delay")
        except ValueError as exc:
            bad("delay", str(exc))
    attempts = table.get("max_attempts")
    if "max_attempts" in table and (isinstance(attempts, bool) or not isinstance(attempts, int)
                                    or not 2 <= attempts <= MAX_ATTEMPTS):
        bad("max_attempts", f"max_attempts counts the first attempt too: a whole number "
            f"from 2 to {MAX_ATTEMPTS} (got {attempts!r})")
    window = None
    if "window" in table:
        try:
            if not isinstance(table["window"], str):
                raise UnitError('window must be text such as "09:00-20:00"')
            opens, closes = parse_window(table["window"])
            window = RuleWindow(opens_min=opens, closes_min=closes)
        except UnitError as exc:
            said = str(exc) if str(exc).startswith("window") else \
                f"window {table['window']!r}: {exc}"
            bad("window", f"{said} (in the recipient's own zone)")
    codes = _codes(table.get("codes"), channel, bad) if "codes" in table else ()
    if len(problems) > before:
        return None
    try:
        return RetryRule(on=on, delay_s=delay, max_attempts=attempts, window=window,
                         codes=codes)
    except ValidationError as exc:  # checked above; kept as a message, never raised
        bad("", str(exc.errors(include_url=False)[0]["msg"]))
        return None


def _codes(raw: Any, channel: str, bad: Callable[[str, str], None]) -> tuple[str, ...]:
    """An SMS rule's error codes, upper-case; terminal and unknown ones are errors."""
    if not terms_of(channel).segments:
        bad("codes", "codes are SMS error codes: only an SMS step's rule has them")
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        bad("codes", f'codes is a list of SMS error codes such as ["NETWORK_ERROR"] '
            f"(retryable: {', '.join(RETRYABLE_SMS_CODES)})")
        return ()
    codes = tuple(c.strip().upper() for c in raw)
    terminal = [c for c in codes if c in TERMINAL_SMS_CODES]
    unknown = [c for c in codes if c not in SMS_CODES]
    if terminal:
        bad("codes", f"{', '.join(terminal)} never reach(es) the number: not retried "
            f"(retryable: {', '.join(RETRYABLE_SMS_CODES)})")
    if unknown:
        bad("codes", f"unknown SMS error code {', '.join(unknown)} (the service reports "
            f"{', '.join(SMS_CODES)})")
    return codes
