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
from scheduler.campaign.steps import step_kind
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
        for step in campaign["steps"]:  # a step's type is checked when it is compiled
            step_kind(campaign.get("channel", "whatsapp"), step.get("type"))


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
