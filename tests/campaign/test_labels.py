"""Label-filtered campaigns: ``labels`` / ``exclude_labels`` resolved at plan time from the
ledger's label state, whatever order its events came in; the plan's counts and errors."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scheduler.campaign.exceptions import DefinitionError
from scheduler.campaign.plan import build_plan, load_campaign
from scheduler.cli import app
from scheduler.ledger.runs import Ledger
from scheduler.usecases.label_lookup import label_audience
from tests.campaign.support import label_event, store_events
from tests.factories import T0, Project, open_test_ledger

runner = CliRunner()
NOW = T0 + timedelta(hours=1)
#: Recipients: five numbers (one Brazilian mobile whose chat JID lacks the ninth digit).
CSV = ("nome;telefone\n"
       "Ana;11 98765-0001\nBia;11 98765-0002\nCaio;11 98765-0003\n"
       "Duda;11 98765-0004\nEva;11 98876-5005\n")
JID = {n: f"55119876500{n:02d}@s.whatsapp.net" for n in range(1, 5)}
JID[5] = "551188765005@s.whatsapp.net"  # an old account: no ninth digit in its JID
LID = "222333444@lid"


def at(seconds: int) -> Any:
    return T0 + timedelta(seconds=seconds)


def edit(label: int, when: int, full: bool = False, **fields: Any) -> dict[str, Any]:
    return label_event("edit", {"label_id": label, **fields}, at(when), full=full)


def chat(label: int, jid: str, on: bool, when: int, full: bool = False) -> dict[str, Any]:
    return label_event("association.chat", {"label_id": label, "chat": jid, "labeled": on},
                       at(when), full=full)


def story() -> list[dict[str, Any]]:
    """VIP on 1, 2, 3 (removed later), 5 and an @lid chat; churned on 2; 'old' deleted."""
    return [
        edit(1, 0, name="VIP", color=1), edit(1, 0, full=True, name="VIP", color=1),
        edit(2, 0, name="churned"), edit(3, 0, name="old"), edit(3, 5, deleted=True),
        chat(1, JID[1], True, 10), chat(1, JID[1], True, 10, full=True),
        chat(1, JID[2], True, 10), chat(1, JID[3], True, 10),
        chat(1, JID[3], False, 20),                     # removed association
        chat(1, JID[4], True, 10), chat(1, JID[4], False, 10, full=True),  # snapshot wins
        chat(1, JID[5], True, 12, full=True), chat(1, LID, True, 10),
        chat(2, JID[2], True, 10),
        chat(3, JID[1], True, 10),                      # on a deleted label: never matches
    ]


@pytest.fixture(autouse=True)
def _project_ledger(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ledger_url: str) -> None:
    """No configured service; the project's ledger is this test's."""
    monkeypatch.delenv("CAMPAIGN_BASE_URL", raising=False)
    empty = tmp_path / "empty-config.toml"
    empty.write_text("")
    monkeypatch.setenv("CAMPAIGN_CONFIG", str(empty))
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", ledger_url)


def campaign_file(project: Project, extra: str, channel: str = "whatsapp") -> Path:
    project.write("data/r.csv", CSV)
    senders = 'senders = ["s1"]\n' if channel == "whatsapp" else ""
    steps = '[[steps]]\ntype = "text"\ntext = "Olá {{ nome }}"\n' if channel != "voice" \
        else '[[steps]]\ntype = "voice"\naudioUrl = "https://x.example/a.mp3"\n'
    return project.campaign(
        f'name = "t"\nchannel = "{channel}"\n{senders}{extra}\n'
        '[recipients]\nfile = "data/r.csv"\nphone_column = "telefone"\n\n' + steps)


def planned(ledger: Ledger, path: Path) -> list[tuple[str, str, str | None]]:
    campaign = load_campaign(path)
    plan = build_plan(campaign, labels=label_audience(ledger.engine, campaign))
    return [(r["to"], r["state"], r["reason"]) for rows in plan.chunks() for r in rows]


EXPECTED = [
    ("5511987650001", "planned", None),
    ("5511987650002", "skipped", "label: labelled churned (exclude_labels)"),
    ("5511987650003", "skipped", "label: not labelled VIP"),
    ("5511987650004", "skipped", "label: not labelled VIP"),
    ("5511988765005", "planned", None),
]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_the_same_plan_whatever_the_order_of_the_label_events(
        project: Project, make_ledger_url: Any, seed: int) -> None:
    path = campaign_file(project, 'labels = ["VIP"]\nexclude_labels = ["churned"]\n')
    rng = random.Random(seed)
    events = story()
    events += [rng.choice(events) for _ in range(5)]  # the service's repeats
    rng.shuffle(events)
    with open_test_ledger(make_ledger_url(f"plan{seed}")) as ledger:
        store_events(ledger, events, NOW, batch=rng.randint(1, 5))
        assert planned(ledger, path) == EXPECTED


def test_plan_shows_the_filter_and_its_counts(project: Project, ledger: Ledger) -> None:
    store_events(ledger, story(), NOW)
    path = campaign_file(project, 'labels = ["VIP"]\nexclude_labels = ["churned"]\n')
    result = runner.invoke(app, ["plan", str(path), "--json", "--start", "2030-01-01T10:00"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["label_filter"] == {
        "labels": ["VIP"], "exclude_labels": ["churned"], "sessions": ["s1"],
        "chats": {"VIP": 4, "churned": 1}, "unresolved_chats": {"VIP": 1, "churned": 0},
        "kept": 2, "not_labelled": 2, "excluded": 1}
    assert report["steps"][0]["planned"] == 2 and report["steps"][0]["skipped"] == 3
    text = runner.invoke(app, ["plan", str(path), "--start", "2030-01-01T10:00"]).stdout
    assert "only chats labelled VIP (4 chats)" in text
    assert "never chats labelled churned (1 chats)" in text
    assert "recipients kept 2 · not labelled 2 · excluded by label 1" in text
    assert "1 labelled chats are @lid" in text


def test_exclude_labels_alone_keeps_everyone_else(project: Project, ledger: Ledger) -> None:
    store_events(ledger, story(), NOW)
    path = campaign_file(project, 'exclude_labels = ["CHURNED "]\n')
    assert [s for _, s, _ in planned(ledger, path)] == \
        ["planned", "skipped", "planned", "planned", "planned"]


@pytest.mark.parametrize(("extra", "key", "words"), [
    ('labels = ["gold"]\n', "labels", "no sender session (s1) has a label named 'gold'; "
                                      "their labels: 'churned', 'VIP'"),
    ('exclude_labels = ["old"]\n', "exclude_labels",
     "label 'old' was deleted in every sender session (s1)"),
])
def test_a_label_no_session_has_is_a_plan_error(project: Project, ledger: Ledger,
                                                extra: str, key: str, words: str) -> None:
    store_events(ledger, story(), NOW)
    path = campaign_file(project, extra)
    result = runner.invoke(app, ["plan", str(path), "--json", "--start", "2030-01-01T10:00"])
    assert result.exit_code == 1
    [error] = json.loads(result.stdout)["errors"]
    assert error == {"file": str(path.resolve()), "key": key, "line": 4, "row": None,
                     "message": words}
    with pytest.raises(DefinitionError, match=r"gold|old"):
        planned(ledger, path)


@pytest.mark.parametrize("channel", ["sms", "voice"])
def test_labels_on_sms_or_voice_are_an_error(project: Project, channel: str) -> None:
    path = campaign_file(project, 'labels = ["vip"]\n', channel=channel)
    result = runner.invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 1
    [error] = json.loads(result.stdout)["errors"]
    assert error["key"] == "labels" and error["line"] == 3
    assert f"a {channel} campaign sends from the account" in error["message"]


def test_a_rehearsal_sends_only_to_the_labelled_audience(project: Project,
                                                          ledger: Ledger) -> None:
    from scheduler.usecases.rehearsal import rehearse_campaign

    store_events(ledger, story(), NOW)
    path = campaign_file(project, 'labels = ["VIP"]\nexclude_labels = ["churned"]\n')
    rehearsal = rehearse_campaign(path, start=T0 + timedelta(days=400))
    assert rehearsal.sends == 2 and rehearsal.per_sender == {"s1": 2}


def test_without_a_ledger_a_label_filter_is_an_error(project: Project,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAMPAIGN_DATABASE_URL")
    path = campaign_file(project, 'labels = ["VIP"]\n')
    result = runner.invoke(app, ["plan", str(path), "--json", "--start", "2030-01-01T10:00"])
    assert result.exit_code == 1
    [error] = json.loads(result.stdout)["errors"]
    assert error["key"] == "labels" and error["line"] == 4
    assert error["message"].startswith("no label state yet: this project has no ledger")
    assert not (project.root / "state").exists()  # none was created for this


def test_campaign_labels_shows_what_the_events_left(ledger: Ledger) -> None:
    store_events(ledger, story(), NOW)
    result = runner.invoke(app, ["labels", "--json"])
    assert result.exit_code == 0, result.output
    [vip, churned, old] = json.loads(result.stdout)["s1"]
    assert vip == {"id": "1", "name": "VIP", "color": 1, "deleted": False,
                   "numbers": ["551188765005", "5511987650001", "5511987650002"],
                   "unresolved_chats": [LID], "messages": 0}
    assert churned["numbers"] == ["5511987650002"] and old["deleted"] is True
    text = runner.invoke(app, ["labels", "s1"]).stdout
    assert "session s1: 3 labels" in text
    assert "1  VIP: 3 numbers, 1 @lid/group chats, 0 messages" in text
    assert "3  old (deleted): 1 numbers" in text
