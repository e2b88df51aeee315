"""Steps' ``name``/``when`` and ``[replies]`` in a campaign file: parsed, and every mistake
named with its file, step and field (``campaign validate``'s checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.options import run_options
from tests.factories import Project

HEAD = """
name = "conversa"
senders = ["s1"]
{extra}
[recipients]
file = "data/people.csv"
"""

QUESTION = """
[[steps]]
name = "pergunta"
type = "text"
text = "Responda 1 para confirmar, 2 para reagendar"
"""


def campaign(tmp_path: Path, steps: str, *, extra: str = "", channel: str = "") -> Path:
    project = Project.empty(tmp_path)
    project.write("data/people.csv", "phone\n5511988887777\n")
    head = HEAD.format(extra=extra)
    if channel:
        head = f'channel = "{channel}"\n' + head.replace('senders = ["s1"]\n', "")
    return project.write("campaigns/conversa.toml", head + steps)


def problems(path: Path) -> list[tuple[str | None, str]]:
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    return [(issue.key, issue.message) for issue in caught.value.issues]


BRANCHES = QUESTION + """
[[steps]]
name = "confirmar"
type = "text"
text = "Confirmado!"
when = { reply_matches = "^(1|sim)\\\\b" }

[[steps]]
name = "reagendar"
type = "text"
text = "Vamos reagendar."
when = { reply_matches = "^2", step = "pergunta" }

[[steps]]
name = "lembrete"
type = "text"
text = "Lembrete: responda 1 ou 2"
when = { not_replied_within = "3s", step = "pergunta" }
"""


def test_a_conversation_is_parsed_into_the_runs_options(tmp_path: Path) -> None:
    path = campaign(tmp_path, BRANCHES, extra='[replies]\nexpected_rate = 0.4\n'
                                              'keywords = { "remarcar" = "reagendar" }\n')
    options = run_options(load_campaign(path)).conversation
    assert options is not None and options.expected_rate == 0.4
    assert [(c.step, c.name, c.looks_at, c.kind) for c in options.conditions] == [
        (1, "confirmar", 0, "reply_matches"), (2, "reagendar", 0, "reply_matches"),
        (3, "lembrete", 0, "not_replied")]
    assert options.conditions[2].wait_s == 3.0
    assert options.conditions[0].wait_s == 24 * 3600  # [replies] wait's default
    assert options.conditions[1].keywords == ("remarcar",)
    assert options.gated_steps == (1, 2, 3)


def test_a_campaign_without_conditions_has_none(tmp_path: Path) -> None:
    assert run_options(load_campaign(campaign(tmp_path, QUESTION))).conversation is None


def test_a_regex_that_does_not_compile_is_named(tmp_path: Path) -> None:
    found = problems(campaign(tmp_path, QUESTION + """
[[steps]]
type = "text"
text = "x"
when = { reply_matches = "^(1|sim" }
"""))
    assert len(found) == 1
    key, message = found[0]
    assert key == "steps[1].when.reply_matches"
    assert message.startswith("not a regular expression: missing ), unterminated subpattern")


def test_a_step_that_looks_at_itself_or_a_later_step(tmp_path: Path) -> None:
    found = problems(campaign(tmp_path, QUESTION + """
[[steps]]
name = "a"
type = "text"
text = "x"
when = { replied = true, step = "b" }

[[steps]]
name = "b"
type = "text"
text = "y"
when = { replied = true, step = "b" }

[[steps]]
type = "text"
text = "z"
when = { replied = true, step = "nenhum" }
"""))
    assert found == [
        ("steps[1].when.step", "step 'b' is steps[2], a later step: a condition looks at "
                               "an earlier step"),
        ("steps[2].when.step", "step 'b' is itself: a condition looks at an earlier step"),
        ("steps[3].when.step", "no step is named 'nenhum' (the named steps: 'pergunta', "
                               "'a', 'b')"),
    ]


def test_conditions_that_can_never_be_met(tmp_path: Path) -> None:
    sms = campaign(tmp_path, """
[[steps]]
text = "Oi"

[[steps]]
text = "Obrigado"
when = { reply_matches = "^1" }
""", channel="sms")
    assert problems(sms) == [("steps[1].when.reply_matches",
                              "a sms campaign's recipients send no replies back: this "
                              "condition can never be met")]


def test_a_voice_step_gets_no_replies(tmp_path: Path) -> None:
    voice = campaign(tmp_path, """
[[steps]]
audioUrl = "https://example.com/a.mp3"

[[steps]]
audioUrl = "https://example.com/b.mp3"
when = { replied = true }
""", channel="voice")
    assert problems(voice) == [("steps[1].when.replied",
                                "a voice campaign's recipients send no replies back: this "
                                "condition can never be met")]


def test_the_first_step_and_shape_mistakes(tmp_path: Path) -> None:
    found = problems(campaign(tmp_path, """
[[steps]]
type = "text"
text = "Oi"
when = { replied = true }

[[steps]]
type = "text"
text = "a"
when = { replied = true, read = false }

[[steps]]
type = "text"
text = "b"
when = { read = false }

[[steps]]
type = "text"
text = "c"
when = { not_replied_within = "soon" }

[[steps]]
type = "text"
text = "d"
when = { answered = true }
""", extra='[replies]\nkeywords = { "2" = "ninguem" }\n'))
    assert [k for k, _m in found] == [
        "steps[0].when", "steps[1].when", "steps[2].when.after",
        "steps[3].when.not_replied_within", "steps[4].when.answered",
        "replies.keywords.2"]
    assert found[1][1] == ("give exactly one of replied, reply_matches, not_replied_within, "
                           "read, clicked (got replied, read)")
    assert found[2][1] == "read = false needs after: how long to wait for the read"


def test_the_file_is_named_with_the_line(tmp_path: Path) -> None:
    path = campaign(tmp_path, QUESTION + """
[[steps]]
type = "text"
text = "x"
when = { reply_matches = "(" }
""")
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    issue = caught.value.issues[0]
    line = path.read_text().splitlines().index('when = { reply_matches = "(" }') + 1
    assert issue.file == str(path.resolve()) and issue.line == line
