"""A campaign's second chances as the file writes them: a step's ``retry`` rules and
``min_talk``, and ``[fallback]``. Every mistake is refused at its step, rule and field,
with the file and line; a sound file gives run options that store and read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scheduler.campaign.exceptions import CampaignError, Issue
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.options import fallback_run_options, run_options
from scheduler.settings.retry_rules import RetryRule, RuleWindow, StepRecycle
from scheduler.settings.run import RunOptions
from tests.factories import Project

VOICE_CSV = "nome;telefone\nAna;(11) 98765-4321\nLoja;(11) 3456-7890\n"


def voice(project: Project, step_extra: str = "", tail: str = "",
          channel: str = "voice") -> str:
    """A voice (or other ``channel``) campaign with ``step_extra`` in its one step and
    ``tail`` after it (e.g. a [fallback] table); its path."""
    project.write("data/r.csv", VOICE_CSV)
    body = {"voice": 'flowId = "flow-1"\n', "sms": 'text = "Oi {{ nome }}"\n',
            "calls": "", "whatsapp": 'type = "text"\ntext = "Oi"\n'}[channel]
    senders = 'senders = ["s1"]\n' if channel in ("whatsapp", "calls") else ""
    text = (f'name = "t"\nchannel = "{channel}"\n{senders}'
            '[recipients]\nfile = "data/r.csv"\nphone_column = "telefone"\n')
    text += f"\n[[steps]]\n{body}{step_extra}\n{tail}"
    return str(project.campaign(text))


def issues_of(path: str) -> list[Issue]:
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    return caught.value.issues


def only(path: str) -> Issue:
    found = issues_of(path)
    assert len(found) == 1, [str(i) for i in found]
    return found[0]


@pytest.mark.parametrize(("step_extra", "key", "words"), [
    ('retry = [{ on = "undelivered", delay = "1h", max_attempts = 2 }]',
     "steps[0].retry[0].on", "rule 1 (undelivered): a voice step cannot retry on "
     "'undelivered': its outcomes are no_answer, busy, failed"),
    ('retry = [{ on = "busy", delay = "10m", max_attempts = 1 }]',
     "steps[0].retry[0].max_attempts", "rule 1 (busy): max_attempts counts the first "
     "attempt too: a whole number from 2 to 10 (got 1)"),
    ('retry = [{ on = "busy", delay = "10m", max_attempts = 11 }]',
     "steps[0].retry[0].max_attempts", "from 2 to 10 (got 11)"),
    ('retry = [{ on = "busy", delay = "10m", max_attempts = 3, window = "9h-20h" }]',
     "steps[0].retry[0].window", "rule 1 (busy): window '9h-20h': time '9h': expected HH:MM"),
    ('retry = [{ on = "busy", delay = "soon", max_attempts = 3 }]',
     "steps[0].retry[0].delay", "rule 1 (busy): duration 'soon'"),
    ('retry = [{ on = "busy", max_attempts = 3 }]',
     "steps[0].retry[0].delay", "rule 1 (busy): delay is missing"),
    ('retry = [{ on = "busy", delay = "1m", max_attempts = 3, every = "1h" }]',
     "steps[0].retry[0].every", "unknown key 'every'"),
    ('retry = [{ on = "busy", delay = "1m", max_attempts = 3, codes = ["NO_COVERAGE"] }]',
     "steps[0].retry[0].codes", "codes are SMS error codes: only an SMS step's rule"),
    ('retry = [{ on = "busy", delay = "10m", max_attempts = 3 },\n'
     '         { on = "no_answer", delay = "2h", max_attempts = 3 },\n'
     '         { on = "busy", delay = "1h", max_attempts = 2 }]',
     "steps[0].retry[2].on", "rule 3: a second rule for 'busy' (rule 1 has it): one rule "
     "per outcome"),
    ('retry = "busy"', "steps[0].retry", "retry is a list of rules such as"),
    ('min_talk = "soon"', "steps[0].min_talk", "duration 'soon'"),
])
def test_a_wrong_voice_rule_is_refused_at_its_rule_and_field(
        project: Project, step_extra: str, key: str, words: str) -> None:
    path = voice(project, step_extra)
    issue = only(path)
    assert issue.file == path and issue.key == key, str(issue)
    assert words in issue.message
    assert issue.line == 9 + step_extra.count("\n")  # the rule's line (1-based)


def test_a_whatsapp_message_step_has_no_outcome_to_retry(project: Project) -> None:
    issue = only(voice(project, 'retry = [{ on = "no_answer", delay = "2h", '
                       'max_attempts = 3 }]', channel="whatsapp"))
    assert issue.key == "steps[0].retry"
    assert issue.message.startswith("WhatsApp messages have no outcome to retry on; use "
                                    "[fallback]")


def test_min_talk_is_for_voice_steps_only(project: Project) -> None:
    issue = only(voice(project, 'min_talk = "10s"', channel="sms"))
    assert issue.key == "steps[0].min_talk"
    assert "min_talk is for voice steps" in issue.message and "sms step" in issue.message


@pytest.mark.parametrize(("codes", "words"), [
    ('["NETWORK_ERROR", "landline"]', "LANDLINE never reach(es) the number: not retried "
     "(retryable: NETWORK_ERROR, NO_COVERAGE, NOT_RECEIVED)"),
    ('["INVALID_NUMBER", "BLACKLIST"]', "INVALID_NUMBER, BLACKLIST never reach(es)"),
    ('["LOW_BATTERY"]', "unknown SMS error code LOW_BATTERY"),
    ("[]", "codes is a list of SMS error codes"),
])
def test_an_sms_rule_never_retries_a_terminal_code(project: Project, codes: str,
                                                   words: str) -> None:
    issue = only(voice(project, f'retry = [{{ on = "undelivered", codes = {codes}, '
                       'delay = "1h", max_attempts = 2 }]', channel="sms"))
    assert issue.key == "steps[0].retry[0].codes"
    assert issue.message.startswith("rule 1 (undelivered): ") and words in issue.message


def test_a_calls_step_retries_not_answered_only(project: Project) -> None:
    issue = only(voice(project, 'retry = [{ on = "no_answer", delay = "30m", '
                       'max_attempts = 2 }]', channel="calls"))
    assert issue.key == "steps[0].retry[0].on" and "its outcomes are not_answered" in \
        issue.message
    campaign = load_campaign(voice(project, 'retry = [{ on = "not_answered", delay = "30m",'
                                   ' max_attempts = 2 }]', channel="calls"))
    assert campaign.steps[0].recycle == StepRecycle(
        rules=(RetryRule(on="not_answered", delay_s=1800, max_attempts=2),))


def test_every_wrong_rule_is_reported_at_once(project: Project) -> None:
    found = issues_of(voice(project, 'retry = [{ on = "busy", delay = "x", '
                            'max_attempts = 0 }, { on = "nope", delay = "1h", '
                            'max_attempts = 2, window = "25:00-26:00" }]'))
    assert [i.key for i in found] == [
        "steps[0].retry[0].delay", "steps[0].retry[0].max_attempts",
        "steps[0].retry[1].on", "steps[0].retry[1].window"]


FALLBACK = '[fallback]\nafter = "6h"\nwhen = "{when}"\nchannel = "{channel}"\n' \
           'step = {{ {step} }}\n'


@pytest.mark.parametrize(("campaign_channel", "when", "channel", "step", "key", "words"), [
    ("voice", "not_answered", "voice", 'flowId = "f"', "fallback.channel",
     "'voice' is the campaign's own channel: a fallback goes on another one (sms)"),
    ("sms", "not_read", "voice", 'flowId = "f"', "fallback.when",
     "not_read needs read receipts, which only WhatsApp messages have; a sms campaign"),
    ("whatsapp", "not_answered", "sms", 'text = "Oi"', "fallback.when",
     "not_answered is an outcome of calls (voice or calls campaigns); a whatsapp campaign"),
    ("voice", "not_answered", "sms", 'text = ""', "fallback.step.text", "must not be empty"),
    ("voice", "not_answered", "sms", 'txt = "Oi"', "fallback.step.txt", "sms has no field"),
    ("voice", "not_answered", "sms", 'text = "Oi {{ nome }"', "fallback.step.text",
     "syntax"),
    ("voice", "not_answered", "sms", 'text = "Oi", delay = "1h"', "fallback.step.delay",
     "a fallback step has no delay"),
    ("voice", "soon", "sms", 'text = "Oi"', "fallback.when", "expected 'not_delivered'"),
])
def test_a_wrong_fallback_is_refused_at_its_field(
        project: Project, campaign_channel: str, when: str, channel: str, step: str,
        key: str, words: str) -> None:
    tail = FALLBACK.format(when=when, channel=channel, step=step)
    found = issues_of(voice(project, tail=tail, channel=campaign_channel))
    assert key in [i.key for i in found], [str(i) for i in found]
    issue = next(i for i in found if i.key == key)
    assert words in issue.message and issue.line is not None
    assert {i.key.split(".")[0] for i in found if i.key} == {"fallback"}


def test_a_fallback_without_after_is_refused(project: Project) -> None:
    issue = only(voice(project, tail='[fallback]\nwhen = "not_answered"\nchannel = "sms"\n'
                       'step = { text = "Oi" }\n'))
    assert (issue.key, issue.message) == ("fallback.after", "required key 'fallback.after' "
                                          "is missing")


def test_validate_reports_a_wrong_fallback_and_still_reads_the_rows(
        project: Project) -> None:
    campaign = load_campaign(voice(project, tail=FALLBACK.format(
        when="not_answered", channel="voice", step='flowId = "f"')), lenient=True)
    assert [i.key for i in campaign.issues] == ["fallback.channel"]
    assert campaign.steps[0].ok


RULES = ('min_talk = "10s"\nretry = [\n'
         '  { on = "no_answer", delay = "2h", max_attempts = 3, window = "21:00-08:00" },\n'
         '  { on = "busy", delay = 600, max_attempts = 5 },\n]')
SMS_FALLBACK = ('[fallback]\nafter = "6h"\nwhen = "not_answered"\nchannel = "sms"\n'
                'rate = "5/s"\nstep = { text = "Oi {{ nome }}, ligamos para você" }\n')


def test_the_rules_become_the_runs_options_and_read_back(project: Project) -> None:
    campaign = load_campaign(voice(project, RULES, SMS_FALLBACK))
    options = run_options(campaign)
    recycle = options.recycle
    assert recycle is not None and recycle.fallback is not None
    assert recycle.steps[0] == StepRecycle(min_talk_s=10.0, rules=(
        RetryRule(on="no_answer", delay_s=7200, max_attempts=3,
                  window=RuleWindow(opens_min=21 * 60, closes_min=8 * 60)),
        RetryRule(on="busy", delay_s=600, max_attempts=5)))
    assert (recycle.fallback.after_s, recycle.fallback.when, recycle.fallback.channel) == (
        21600, "not_answered", "sms")
    assert recycle.watches(0) and recycle.max_attempts(0) == 5
    assert RunOptions.from_json(options.to_json()) == options


def test_a_campaign_without_second_chances_has_none(project: Project) -> None:
    assert run_options(load_campaign(voice(project))).recycle is None


def test_options_stored_before_second_chances_read_as_none(project: Project) -> None:
    stored = json.loads(run_options(load_campaign(voice(project))).to_json())
    del stored["recycle"]  # as a program before issue 25 wrote them
    assert RunOptions.from_json(json.dumps(stored)).recycle is None


def test_the_fallback_runs_options(project: Project) -> None:
    extra = '[schedule]\ntimezone = "America/Manaus"\nwindow = "09:00-20:00"\n' \
            'latest = "19:00"\n'
    path = voice(project, RULES, SMS_FALLBACK)
    text = Path(path).read_text(encoding="utf-8").replace("\n[[steps]]", extra + "\n[[steps]]")
    project.campaign(text)
    campaign = load_campaign(path)
    parent = run_options(campaign)
    child = fallback_run_options(campaign, parent)
    assert child is not None
    assert (child.senders, child.rate_per_s, child.step_delays_s, child.recycle) == (
        ("account",), 5.0, (0.0,), None)
    assert (child.timezone, child.window, child.latest_clock_min, child.delivery_mode,
            child.recipient_timezone) == ("America/Manaus", parent.window, 19 * 60,
                                          parent.delivery_mode, parent.recipient_timezone)
    assert child.window is not None and child.window.opens_min == 9 * 60
    assert RunOptions.from_json(child.to_json()) == child
    no_rate = text.replace('rate = "5/s"\n', "")
    project.campaign(no_rate)
    default = fallback_run_options(load_campaign(path), parent)
    assert default is not None and default.rate_per_s == pytest.approx(20 / 60)


def test_validate_lists_every_second_chance_mistake_with_its_line(project: Project) -> None:
    from typer.testing import CliRunner

    from scheduler.cli import app

    path = voice(project, 'retry = [{ on = "busy", delay = "10m", max_attempts = 1 }]',
                 FALLBACK.format(when="not_read", channel="voice", step='flowId = "f"'))
    result = CliRunner().invoke(app, ["validate", path, "--json"])
    assert result.exit_code == 1
    errors = json.loads(result.stdout)["errors"]
    assert [(e["key"], e["line"]) for e in errors] == [
        ("steps[0].retry[0].max_attempts", 9), ("fallback.channel", 13),
        ("fallback.when", 12)]
    assert all(e["file"] == path for e in errors)
