"""The ``call_event`` step: a scheduled call message checked at plan time (every bad field named
with its file, step and row), and a run whose bodies reach the sandbox exactly as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scheduler.campaign.exceptions import CampaignError
from scheduler.campaign.loader import load_campaign
from scheduler.campaign.plan import build_plan
from scheduler.sandbox.testing import SandboxHandle
from tests.app.support import clean_env
from tests.factories import Project
from tests.incli import in_process

CSV = ("nome;telefone;data;hora;sala\n"
       "Maria da Silva;(11) 98765-4321;2026-12-07;10:00;https://meet.example.com/maria\n"
       "João Souza;+55 21 99876-5432;07/12/2026;11:30;https://meet.example.com/joao\n")
HEAD = ('name = "consulta"\nsenders = ["s1"]\n\n[recipients]\nfile = "data/r.csv"\n'
        'phone_column = "telefone"\n\n[schedule]\ntimezone = "America/Sao_Paulo"\n\n')
STEP = ('[[steps]]\ntype = "call_event"\ntitle = "Consulta de {{ nome|first_name }}"\n'
        'scheduledTime = "{{ data }} {{ hora }}"\ncallType = "video"\n'
        'customCallLinkUrl = "{{ sala }}"\n')


def _project(project: Project, step: str = STEP, csv: str = CSV) -> Path:
    project.write("data/r.csv", csv)
    return project.campaign(HEAD + step)


def _payloads(path: Path) -> list[dict]:
    return [row["payload"] for rows in build_plan(path).chunks() for row in rows]


def _problems(path: Path) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(CampaignError) as caught:
        _payloads(path)
    return [(issue.row, issue.key, issue.message) for issue in caught.value.issues]


def test_each_recipient_gets_its_own_event_at_its_time_in_the_campaign_zone(
        project: Project) -> None:
    payloads = _payloads(_project(project))
    assert payloads == [
        {"title": "Consulta de Maria", "scheduledTime": "2026-12-07T10:00:00-03:00",
         "callType": "video", "customCallLinkUrl": "https://meet.example.com/maria"},
        {"title": "Consulta de João", "scheduledTime": "2026-12-07T11:30:00-03:00",
         "callType": "video", "customCallLinkUrl": "https://meet.example.com/joao"},
    ]


def test_a_constant_time_with_an_offset_or_a_toml_date_time_is_kept_as_written(
        project: Project) -> None:
    step = ('[[steps]]\ntype = "call_event"\ntitle = "Live de lançamento"\n'
            'scheduledTime = 2026-12-10T19:00:00Z\ncreateCallLink = true\n')
    assert _payloads(_project(project, step))[0] == {
        "title": "Live de lançamento", "scheduledTime": "2026-12-10T19:00:00+00:00",
        "createCallLink": True}
    step = step.replace("2026-12-10T19:00:00Z", '"2026-12-10 19:00"')
    assert _payloads(_project(project, step))[0]["scheduledTime"] == \
        "2026-12-10T19:00:00-03:00"


@pytest.mark.parametrize(("change", "key", "words"), [
    (('callType = "video"', 'callType = "phone"'), "steps[0].callType", "'audio' or 'video'"),
    (('title = "Consulta de {{ nome|first_name }}"\n', ""), "steps[0].title",
     "required field 'title' is missing"),
    (('scheduledTime = "{{ data }} {{ hora }}"', 'scheduledTime = "amanhã cedo"'),
     "steps[0].scheduledTime", "not a date and time: write 2026-12-01 15:00"),
    (('scheduledTime = "{{ data }} {{ hora }}"', 'scheduledTime = "2026-12-07"'),
     "steps[0].scheduledTime", "has no time of day"),
    (('customCallLinkUrl = "{{ sala }}"', 'customCallLinkUrl = "meet.example.com"'),
     "steps[0].customCallLinkUrl", "http:// or https://"),
    (('callType = "video"', 'callType = "video"\ncreateCallLink = true'), "steps[0]",
     "createCallLink or customCallLinkUrl, not both"),
    (('callType = "video"', 'callType = "video"\ndescription = "x"'),
     "steps[0].description", "call_event has no field 'description'"),
])
def test_a_bad_field_is_refused_at_load_naming_the_file_step_and_field(
        project: Project, change: tuple[str, str], key: str, words: str) -> None:
    path = _project(project, STEP.replace(*change))
    with pytest.raises(CampaignError) as caught:
        load_campaign(path)
    issues = caught.value.issues
    assert [(i.key, i.file) for i in issues] == [(key, str(path))], issues
    assert words in issues[0].message and issues[0].line is not None


def test_a_row_whose_time_is_not_a_time_is_refused_naming_the_row(project: Project) -> None:
    csv = CSV.replace("07/12/2026;11:30", "31/02/2026;11:30")
    problems = _problems(_project(project, csv=csv))
    assert problems == [(2, "steps[0].scheduledTime",
                         "rendered call_event is not valid: not a date and time: write "
                         "2026-12-01 15:00, 2026-12-01T15:00:00-03:00 or 01/12/2026 15:00 "
                         "(got '31/02/2026 11:30')")]


def test_a_call_event_run_sends_exactly_the_documented_body(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    box: SandboxHandle = make_sandbox()
    box.create_session("s1")
    project = Project(tmp_path / "clinic")
    for folder in ("campaigns", "data", "templates"):
        (project.root / folder).mkdir(parents=True)
    path = _project(project)
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key,
                    CAMPAIGN_DATABASE_URL=ledger_url, CAMPAIGN_RECEIVER_PORT="0",
                    CAMPAIGN_STATE_DIR=str(tmp_path / "state"))
    run = in_process(env, "run", str(path), cwd=project.root)
    assert run.returncode == 0, run.stdout + run.stderr
    sends = [s for s in box.sends() if s["path"] == "/api/v1/calls/send-event"]
    assert [s["body"] for s in sends] == [
        {"sessionId": "s1", "to": "5511987654321", "title": "Consulta de Maria",
         "scheduledTime": "2026-12-07T10:00:00-03:00", "callType": "video",
         "customCallLinkUrl": "https://meet.example.com/maria"},
        {"sessionId": "s1", "to": "5521998765432", "title": "Consulta de João",
         "scheduledTime": "2026-12-07T11:30:00-03:00", "callType": "video",
         "customCallLinkUrl": "https://meet.example.com/joao"},
    ]
    status = json.loads(in_process(env, "status", "1", "--json", cwd=project.root).stdout)
    # no messages.sent follows an event message (the interface emits it for
    # /messages/send/* and /interactive/send/* only): the service's answer is the proof
    assert status["counts"] == {"accepted": 2}
