"""``campaign schema``: the JSON Schema an editor checks campaign files with.

Every example campaign (``campaigns/*.toml``) and every whole campaign shown in the README
and the docs validates against the schema the command prints; files the models refuse
key by key (an unknown key, text where a number goes, a channel that does not exist) are
refused by the schema too, at the same key. TOML is read with ``tomllib`` and its dates
turned into text, as an editor's TOML support hands them to the schema.
"""

from __future__ import annotations

import json
import re
import textwrap
import tomllib
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from scheduler.campaign.definition import CampaignSpec
from scheduler.campaign.steps import RESERVED_KEYS, full_body, model_problems, step_kind
from scheduler.campaign.tomllines import key_lines
from scheduler.cli import app
from tests.factories import REPO

runner = CliRunner()
EXAMPLES = sorted((REPO / "campaigns").glob("*.toml"))
#: Fenced TOML blocks of the README and the docs that are whole campaign files.
_FENCE = re.compile(r"^( *)```toml\n(.*?)^\1```", re.S | re.M)


def _printed_schema() -> dict[str, Any]:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


SCHEMA = _printed_schema()
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)


def as_json(value: Any) -> Any:
    """A TOML value as JSON Schema sees it: dates and times as ISO text."""
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value


def problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, message) of each way ``raw`` fails the schema, paths as ``pace.daily_cap``."""
    return sorted((".".join(str(p) for p in err.absolute_path), err.message)
                  for err in VALIDATOR.iter_errors(as_json(raw)))


def doc_campaigns() -> list[tuple[str, str]]:
    """(where, text) of every whole campaign file written in the README or a docs page."""
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for i, (_indent, fenced) in enumerate(_FENCE.findall(path.read_text(encoding="utf-8"))):
            block = textwrap.dedent(fenced)
            if re.search(r"^name\s*=", block, re.M) and "[[steps]]" in block \
                    and "[recipients]" in block:
                found.append((f"{path.relative_to(REPO)}#{i}", block))
    return found


def test_the_schema_is_valid_json_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["required"] == ["name", "recipients", "steps"]
    assert SCHEMA["additionalProperties"] is False


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_campaign_validates(path: Path) -> None:
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    assert problems(raw) == []
    CampaignSpec.model_validate(raw)  # and the models agree


def test_there_are_example_campaigns_of_every_channel() -> None:
    channels = {tomllib.loads(p.read_text(encoding="utf-8")).get("channel", "whatsapp")
                for p in EXAMPLES}
    assert channels == {"whatsapp", "sms", "voice", "calls"}


def test_every_campaign_in_the_docs_validates() -> None:
    blocks = doc_campaigns()
    assert len(blocks) >= 2, "the README's campaign and the first-campaign guide's"
    for where, text in blocks:
        raw = tomllib.loads(text)
        assert problems(raw) == [], where
        CampaignSpec.model_validate(raw)


def _demo() -> dict[str, Any]:
    return tomllib.loads((REPO / "campaigns" / "demo.toml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("change", "path", "words"), [
    (lambda c: c.update(sendrs=["loja-01"]), "", "'sendrs' was unexpected"),
    (lambda c: c["pace"].update(daily_cap="mil"), "pace.daily_cap", "'mil' is not valid"),
    (lambda c: c["pace"].update(daily_cap=0), "pace.daily_cap", "0 is not valid"),
    (lambda c: c.update(channel="fax"), "channel", "'fax' is not one of"),
    (lambda c: c["schedule"].update(window=9), "schedule.window", "9 is not valid"),
    (lambda c: c["recipients"].update(colunm="x"), "recipients", "'colunm' was unexpected"),
    (lambda c: c["steps"][0].update(type="txt"), "steps.0.type", "'txt' is not one of"),
    (lambda c: c.pop("steps"), "", "'steps' is a required property"),
    (lambda c: c["steps"][1].update(captoin="Oi"), "steps.1", "'captoin' was unexpected"),
])
def test_a_wrong_file_is_refused_at_its_key(change: Any, path: str, words: str) -> None:
    campaign = _demo()
    campaign.setdefault("pace", {})
    campaign.setdefault("schedule", {})
    change(campaign)
    found = problems(campaign)
    assert [p for p, _ in found] == [path], found
    assert words in found[0][1]
    with pytest.raises((ValidationError, ValueError)):  # the models refuse it too
        CampaignSpec.model_validate(campaign)
        for step in campaign["steps"]:  # a step is checked when it is compiled
            kind = step_kind(campaign.get("channel", "whatsapp"), step.get("type"))
            fields = {k: v for k, v in step.items() if k not in RESERVED_KEYS}
            for _path, message in model_problems(kind, full_body(kind, fields, "5511999999999",
                                                                  "s")):
                raise ValueError(message)


def test_defaults_are_written_as_a_campaign_file_writes_them() -> None:
    pace = SCHEMA["$defs"]["PaceSpec"]["properties"]
    schedule = SCHEMA["$defs"]["ScheduleSpec"]["properties"]
    assert (pace["rate"]["default"], pace["jitter"]["default"]) == ("20/min", "0")
    assert schedule["days"]["default"] == "*"
    assert schedule["timezone"]["default"] == "America/Sao_Paulo"


def test_every_field_has_a_description() -> None:
    missing = [f"{where}.{name}"
               for where, model in [("", SCHEMA), *SCHEMA["$defs"].items()]
               for name, field in model.get("properties", {}).items()
               if not field.get("description")]
    assert missing == []


def test_output_writes_the_same_schema_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "campaign.schema.json"
    result = runner.invoke(app, ["schema", "--output", str(target)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text(encoding="utf-8")) == SCHEMA
    assert result.stdout.splitlines()[1:] == [
        "to use it, a campaign file beside it starts with:",
        "#:schema ./campaign.schema.json"]


def test_an_unwritable_output_is_one_line_naming_the_file(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "campaign.schema.json"
    result = runner.invoke(app, ["schema", "-o", str(target)])
    assert result.exit_code == 1
    assert str(target) in str(result.exception)


# ------------------------------------------------------------------ a step's own fields


def _swapped(name: str) -> str:
    """``name`` with its last two letters swapped (``caption`` → ``captoin``)."""
    typo = name[:-2] + name[-1] + name[-2]
    return typo if typo != name else name + "x"


def _step_tables(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(key path, table) of each step of a campaign, the fallback's included."""
    found = [(f"steps[{i}]", step) for i, step in enumerate(raw["steps"])]
    if isinstance(raw.get("fallback"), dict):
        found.append(("fallback.step", raw["fallback"]["step"]))
    return found


def _a_field(key: str, table: dict[str, Any]) -> tuple[str, str]:
    """(the key path of the table that holds it, a body field) to misspell in a step: one
    of its own, else (every body field in its variants) one of its first variant's."""
    own = [k for k in table if k not in RESERVED_KEYS | {"variants"}]
    if own:
        return key, own[0]
    variant = table["variants"][0]
    return f"{key}.variants[0]", next(k for k in variant if k not in ("name", "weight"))


def _schema_path(key: str) -> str:
    """``steps[0].variants[1]`` → ``steps.0.variants.1`` (jsonschema's path, joined)."""
    return re.sub(r"\[(\d+)\]", r".\1", key)


def _misspell(text: str, where: str, field: str, typo: str) -> str:
    """The campaign file's text with ``field`` of the table at ``where`` renamed ``typo``,
    on its own line, as a person would mistype it."""
    lines = text.splitlines(keepends=True)
    at = key_lines(text)[f"{where}.{field}"] - 1
    lines[at], count = re.subn(rf"(?<![\w-]){re.escape(field)}(?=\s*=)", typo, lines[at],
                               count=1)
    assert count == 1, (where, field, lines[at])
    return "".join(lines)


def _project(tmp_path: Path) -> Path:
    """A project folder using the repository's data and templates: its campaigns/."""
    for folder in ("data", "templates"):
        (tmp_path / folder).symlink_to(REPO / folder, target_is_directory=True)
    (tmp_path / "campaigns").mkdir()
    return tmp_path / "campaigns"


def _validate_errors(path: Path) -> list[dict[str, Any]]:
    """``campaign validate --json``'s errors for ``path`` (it must exit 1)."""
    result = runner.invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 1, result.output
    errors: list[dict[str, Any]] = json.loads(result.stdout)["errors"]
    return errors


MISSPELLINGS = [(path, key) for path in EXAMPLES
                for key, _t in _step_tables(tomllib.loads(path.read_text(encoding="utf-8")))]


@pytest.fixture
def _no_service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configured service, whatever the environment says."""
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))


def test_every_step_type_of_every_channel_is_in_the_examples() -> None:
    seen = set()
    for path, key in MISSPELLINGS:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        table = dict(_step_tables(raw))[key]
        channel = (raw["fallback"]["channel"] if key == "fallback.step"
                   else raw.get("channel", "whatsapp"))
        seen.add((channel, table.get("type")) if channel == "whatsapp" else channel)
    assert {"sms", "voice", "calls"} <= seen
    assert len([s for s in seen if isinstance(s, tuple)]) >= 8, seen


@pytest.mark.usefixtures("_no_service")
@pytest.mark.parametrize(("path", "key"), MISSPELLINGS,
                         ids=[f"{p.stem}-{k}" for p, k in MISSPELLINGS])
def test_a_misspelled_field_of_each_step_is_refused_at_that_step(
        path: Path, key: str, tmp_path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    where, field = _a_field(key, dict(_step_tables(tomllib.loads(text)))[key])
    typo = _swapped(field)
    changed = _misspell(text, where, field, typo)
    raw = tomllib.loads(changed)
    found = problems(raw)
    # the schema: refused at the table that holds the field, the typo named
    assert found, (where, typo)
    assert {p for p, _m in found} == {_schema_path(where)}, found
    assert any(f"'{typo}' was unexpected" in message for _p, message in found), found
    # campaign validate: the same key named, with the step type's own words
    target = _project(tmp_path) / path.name
    target.write_text(changed, encoding="utf-8")
    errors = _validate_errors(target)
    named = [e for e in errors if e["key"] == f"{where}.{typo}"]
    assert named, errors
    assert f"no field '{typo}'" in named[0]["message"]


def _ura() -> dict[str, Any]:
    return tomllib.loads((REPO / "campaigns" / "ura_retries.toml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("change", "path", "words"), [
    (lambda c: c["steps"][0]["retry"][0].update(max_attemtps=3), "steps.0.retry.0",
     "'max_attemtps' was unexpected"),
    (lambda c: c["steps"][0]["retry"][1].update(on="no_anwser"), "steps.0.retry.1.on",
     "'no_anwser' is not one of"),
    (lambda c: c["steps"][0]["retry"][1].update(max_attempts=11),
     "steps.0.retry.1.max_attempts", "11 is greater than the maximum of 10"),
    (lambda c: c["steps"][0]["retry"][1].update(codes=["NETWORK_ERROR"]), "steps.0.retry.1",
     "'codes' was unexpected"),  # SMS error codes: only an SMS step's rules have them
    (lambda c: c["fallback"]["step"].update(delay="1h"), "fallback.step",
     "'delay' was unexpected"),  # sent once, at the fallback's time
    (lambda c: c["fallback"]["step"].update(text_file="aviso.txt.j2"), "fallback.step",
     "should not be valid"),  # text or text_file, not both
    (lambda c: c["fallback"].update(channel="voice"), "fallback.step",
     "'text' was unexpected"),  # a voice step has no text
])
def test_retry_rules_and_the_fallback_step_are_checked_by_channel(
        change: Any, path: str, words: str) -> None:
    campaign = _ura()
    change(campaign)
    found = problems(campaign)
    assert {p for p, _m in found} == {path}, found
    assert any(words in message for _p, message in found), found


@pytest.mark.parametrize(("step", "path", "words"), [
    ({"type": "text", "text": "oi", "retry": [{"on": "busy", "delay": "1h", "max_attempts": 2}]},
     "steps.0", "'retry' was unexpected"),  # WhatsApp messages have no outcome to retry on
    ({"type": "voice", "flowId": "f"}, "steps.0.type", "'voice' is not one of"),
    ({"type": "image", "caption": "sem imagem"}, "steps.0", "'image' is a required property"),
    ({"type": "text", "text": "oi", "text_file": "oi.txt.j2"}, "steps.0", "should not be valid"),
    ({"type": "call_event", "title": "x", "scheduledTime": "2027-01-01 10:00",
      "callType": "{{ tipo }}"},  # a fixed choice: validate refuses a template there too
     "steps.0.callType", "is not one of"),
    ({"type": "list", "description": "d", "buttonText": "b",
      "sections": [{"rows": [{"rowId": "1", "titel": "t"}]}]},
     "steps.0.sections.0.rows.0", "'titel' was unexpected"),
])
def test_a_whatsapp_step_takes_only_its_own_type_s_fields(step: dict[str, Any], path: str,
                                                          words: str) -> None:
    found = problems({**_demo(), "steps": [step]})
    assert {p for p, _m in found} == {path}, found
    assert any(words in message for _p, message in found), found


@pytest.mark.parametrize("step", [
    {"type": "location", "latitude": "{{ lat }}", "longitude": -46.6},  # a template number
    {"type": "poll", "question_file": "q.txt.j2", "options": ["a", "b"]},  # required, as file
    {"type": "text", "variants": [{"name": "A", "text": "a"}, {"name": "B", "text": "b"}]},
    {"type": "reaction", "messageId": "m1", "emoji": "{{ emoji_da_linha }}"},  # over 10 chars
    {"type": "template", "template": {"name": "t", "language": "pt_BR",
                                      "variables": ["{{ nome }}"]}},
])
def test_what_validate_takes_the_schema_takes(step: dict[str, Any]) -> None:
    campaign = {**_demo(), "steps": [step]}
    assert problems(campaign) == []


def test_an_sms_rule_s_codes_are_retryable_ones_in_any_case() -> None:
    campaign = tomllib.loads((REPO / "campaigns" / "sms_aviso.toml").read_text("utf-8"))
    rule = {"on": "undelivered", "delay": "30m", "max_attempts": 3}
    campaign["steps"][0]["retry"] = [{**rule, "codes": ["network_error", "NO_COVERAGE"]}]
    assert problems(campaign) == []
    campaign["steps"][0]["retry"] = [{**rule, "codes": ["INVALID_NUMBER"]}]
    assert [p for p, _m in problems(campaign)] == ["steps.0.retry.0.codes.0"]
