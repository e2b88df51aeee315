"""The definition file: examples validate, every error is reported at once with file and key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scheduler.campaign.exceptions import (
    CampaignError,
    DefinitionError,
    TemplateNotFoundError,
    TemplateSyntaxError,
)
from scheduler.campaign.label_filter import LabelAudience
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.options import run_options
from scheduler.campaign.plan import build_plan
from scheduler.campaign.products import product_context
from scheduler.core.errors import SchedulerError
from scheduler.sandbox.catalog import product_record
from tests.factories import REPO, Project

EXAMPLES = sorted((REPO / "campaigns").glob("*.toml"))


def test_the_required_examples_exist() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"demo", "welcome", "pix_reminder", "promo_interactive", "poll_survey"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_campaign_validates(path: Path) -> None:
    campaign = load_campaign(path)
    # a label filter needs a ledger's label state (planned from the sandbox's events in
    # tests/tracking/test_label_campaign.py); here every recipient passes it
    labels = LabelAudience((), (), (), None) if campaign.spec.labels else None
    for step in campaign.steps:  # a catalog product, as the embedded sandbox makes it
        if step.product is not None:
            made = product_record(None, step.product.business, step.product.id)
            step.context = product_context(made)
    plan = build_plan(campaign, strict=True, labels=labels)
    stats = plan.consume()
    assert stats.valid > 0
    assert stats.errors == []


def test_demo_campaign_shape() -> None:
    campaign = load_campaign(REPO / "campaigns" / "demo.toml")
    assert len(campaign.spec.senders) == 2
    assert [s.kind.name for s in campaign.steps] == ["text", "image"]
    assert campaign.spec.pace.rate.per_s >= 5 and campaign.spec.pace.jitter.bounds_s == (0, 0)
    stats = build_plan(campaign).consume()
    assert 150 <= stats.read <= 250
    assert stats.invalid_total >= 3 and stats.duplicates >= 2 and stats.suppressed >= 2


def test_campaign_error_is_a_scheduler_error() -> None:
    assert issubclass(CampaignError, SchedulerError)
    assert issubclass(DefinitionError, CampaignError)


def test_all_errors_at_once_with_file_and_key_path(project: Project) -> None:
    project.write("templates/bad.j2", "Olá\n{{ nome }\n")
    path = project.campaign(
        """
        name = "x"
        senders = ["s1"]
        colour = "blue"
        [recipients]
        file = "data/missing.csv"
        default_country = "ZZ"
        [pace]
        rate = "fast"
        jitter = "8s-2s"
        [schedule]
        window = "9-20"
        days = "mon-xyz"
        timezone = "Mars/Base"
        [[steps]]
        type = "txt"
        [[steps]]
        type = "poll"
        question = "Gostou?"
        options = ["Sim"]
        [[steps]]
        type = "carousel"
        [[steps.cards]]
        body = "Card"
        buttons = [
          { type = "quick_reply", title = "a" },
          { type = "quick_reply", title = "b" },
          { type = "quick_reply", title = "c" },
        ]
        [[steps]]
        type = "text"
        text_file = "bad.j2"
        [[steps]]
        type = "image"
        caption = "{{ nome"
        [[steps]]
        type = "text"
        text = ""
        sessionId = "mine"
        """
    )
    with pytest.raises(DefinitionError) as caught:
        load_campaign(path)
    issues = caught.value.issues
    keys = {issue.key for issue in issues}
    assert {
        "colour",
        "recipients.default_country",
        "pace.rate",
        "pace.jitter",
        "schedule.window",
        "schedule.days",
        "schedule.timezone",
        "recipients.file",
        "steps[0].type",
        "steps[1].options",
        "steps[2].cards[0].buttons",
        "steps[3].text",
        "steps[4].caption",
        "steps[4].image",
        "steps[5].text",
        "steps[5].sessionId",
    } <= keys
    assert all(issue.file for issue in issues)
    syntax = next(i for i in issues if i.key == "steps[3].text")
    assert syntax.file.endswith("bad.j2") and syntax.line == 2
    inline = next(i for i in issues if i.key == "steps[4].caption")
    assert inline.file == str(path)
    message = str(caught.value)
    assert str(path) in message and "pace.rate" in message and "missing.csv" in message


def test_toml_syntax_error_names_the_line(project: Project) -> None:
    path = project.campaign('name = "x"\nsenders = [\n[recipients]\n')
    with pytest.raises(DefinitionError) as caught:
        load_campaign(path)
    issue = caught.value.issues[0]
    assert issue.file == str(path) and "TOML" in issue.message and issue.line


def test_missing_campaign_file(project: Project) -> None:
    with pytest.raises(DefinitionError, match="not found"):
        load_campaign(project.root / "campaigns" / "nope.toml")


def test_only_template_syntax_errors_raise_the_specific_class(project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext = "{% if %}"\n')
    with pytest.raises(TemplateSyntaxError):
        load_campaign(path)


def test_missing_template_file(project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "nope.j2"\n')
    with pytest.raises(TemplateNotFoundError, match=r"nope\.j2"):
        load_campaign(path)


def test_paths_are_relative_to_the_project_root_from_any_cwd(
    project: Project, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("templates/t.j2", "Oi {{ nome|first_name }}\n")
    path = project.basic('[[steps]]\ntype = "text"\ntext_file = "t.j2"\n')
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    relative = os.path.relpath(path)
    campaign = load_campaign(relative)
    assert campaign.root == project.root.resolve()
    assert campaign.recipients_file == project.root.resolve() / "data" / "r.csv"
    rows = next(iter(build_plan(campaign).chunks()))
    assert rows[0]["payload"] == {"text": "Oi Maria"}


def test_whatsapp_needs_senders_and_one_trigger(project: Project) -> None:
    project.write("data/r.csv", "telefone\n11987654321\n")
    path = project.campaign(
        'name = "x"\n[recipients]\nfile = "data/r.csv"\n[schedule]\n'
        'at = 2025-01-01T10:00:00\ncron = "0 9 * * *"\n[[steps]]\ntype = "text"\ntext = "a"\n'
    )
    with pytest.raises(DefinitionError) as caught:
        load_campaign(path)
    text = str(caught.value)
    assert "senders" in text and "not both" in text


def test_bad_cron_and_delay(project: Project) -> None:
    path = project.basic(
        '[[steps]]\ntype = "text"\ntext = "a"\ndelay = "soon"\n',
        extra='[schedule]\ncron = "61 * * * *"\n',
    )
    with pytest.raises(DefinitionError) as caught:
        load_campaign(path)
    keys = {i.key for i in caught.value.issues}
    assert {"schedule.cron", "steps[0].delay"} <= keys


def test_an_unknown_step_field_names_what_the_step_takes_and_the_closest(
        project: Project) -> None:
    path = project.basic('[[steps]]\ntype = "image"\nimage = "https://x/a.png"\n'
                         'captoin = "Oi"\n')
    with pytest.raises(DefinitionError) as caught:
        load_campaign(path)
    (issue,) = caught.value.issues
    assert issue.key == "steps[0].captoin"
    assert "image has no field 'captoin'; did you mean 'caption'?" in issue.message
    assert "(an image step takes caption, contextInfo, image, mentionAll, and delay" \
        in issue.message
    assert "sessionId" not in issue.message  # the dispatcher's fields are not offered


def test_sms_and_voice_steps_are_checked(project: Project) -> None:
    project.write("data/r.csv", "telefone;nome\n11987654321;Ana\n")
    sms = project.campaign(
        'name = "s"\nchannel = "sms"\n[recipients]\nfile = "data/r.csv"\n'
        '[[steps]]\ntext = "Oi {{ nome }}"\nroute = "promo"\n',
        "sms.toml",
    )
    voice = project.campaign(
        'name = "v"\nchannel = "voice"\n[recipients]\nfile = "data/r.csv"\n'
        '[[steps]]\naudioUrl = "https://x/a.mp3"\nflowId = "f"\n',
        "voice.toml",
    )
    with pytest.raises(DefinitionError, match=r"steps\[0\]\.route"):
        load_campaign(sms)
    with pytest.raises(DefinitionError, match="exactly one of audioUrl and flowId"):
        load_campaign(voice)


def test_start_and_latest_times(project: Project) -> None:
    from datetime import UTC, datetime

    path = project.basic(
        extra='[schedule]\ncron = "0 9 * * mon"\ntimezone = "America/Sao_Paulo"\nlatest = "18:00"\n'
    )
    campaign = load_campaign(path)
    start = campaign.start_time(datetime(2025, 3, 5, 12, 0, tzinfo=UTC))  # a Wednesday
    assert start.isoformat() == "2025-03-10T09:00:00-03:00"
    assert run_options(campaign).latest_for(start).isoformat() == "2025-03-10T18:00:00-03:00"
