"""The inbox (``campaign replies``) and one recipient's story (``campaign recipient``), read
from a ledger built as tracking leaves it (``tests/views/inbox_support.py``): states, filters
by run, campaign, state and time, marking as handled, the story in time order with its
sender, attempts, variant, verdict, click, event and opt-out; the commands' text and JSON,
and their clear errors. SQLite and PostgreSQL (the ``ledger`` fixture's pass)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger.runs import Ledger
from scheduler.ledger.story_reads import DECISIONS
from scheduler.usecases.reply_handling import NoSuchReply, mark_handled
from scheduler.views.inbox import InboxError, check_state, parse_since, read_inbox
from scheduler.views.recipient_story import (
    NumberError,
    find_by_name,
    looks_like_number,
    normalise_number,
    read_story,
)
from tests.app.support import clean_env
from tests.dashboard.web_support import HOSTILE
from tests.factories import T0, command_project, number
from tests.incli import in_process
from tests.views.inbox_support import STRANGER, World, build_world

NOW = T0 + timedelta(hours=1)


@pytest.fixture
def world(ledger: Ledger) -> World:
    """The runs and replies of ``inbox_support``."""
    return build_world(ledger)


def _ids(view: object) -> list[int]:
    return [r.id for r in view.replies]  # type: ignore[attr-defined]


def test_the_inbox_lists_replies_newest_first_with_what_they_answer(
        ledger: Ledger, world: World) -> None:
    view = read_inbox(ledger, now=NOW)
    r = world.replies
    assert _ids(view) == [r["stranger"], r["sim"], r["hostile"], r["opt_out"]]
    assert view.counts == {"new": 1, "to answer": 2, "handled": 1}
    by_id = {x.id: x for x in view.replies}
    hostile = by_id[r["hostile"]]
    assert (hostile.text, hostile.state, hostile.run_id, hostile.campaign, hostile.step,
            hostile.name, hostile.number, hostile.sender) == (
        HOSTILE, "to answer", world.lote, "lote", 0, "Ana 0", number(0), "s1")
    sim = by_id[r["sim"]]
    assert (sim.state, sim.handled_by, sim.attempt, sim.campaign, sim.sender) == (
        "handled", "ana", 2, "aviso", "s2")
    assert by_id[r["opt_out"]].state == "new" and by_id[r["opt_out"]].opt_out
    stranger = by_id[r["stranger"]]
    assert (stranger.run_id, stranger.step, stranger.state) == (None, None, "to answer")


def test_the_inbox_filters_by_run_campaign_state_and_time(ledger: Ledger,
                                                          world: World) -> None:
    r = world.replies
    assert _ids(read_inbox(ledger, now=NOW, run_id=world.aviso)) == [r["sim"]]
    assert _ids(read_inbox(ledger, now=NOW, campaign="lote")) == [r["hostile"], r["opt_out"]]
    assert _ids(read_inbox(ledger, now=NOW, state="to-answer")) == [r["stranger"],
                                                                    r["hostile"]]
    assert _ids(read_inbox(ledger, now=NOW, state="handled")) == [r["sim"]]
    assert _ids(read_inbox(ledger, now=NOW, state="new")) == [r["opt_out"]]
    since = T0 + timedelta(minutes=20)
    assert _ids(read_inbox(ledger, now=NOW, since=since)) == [r["stranger"], r["sim"]]
    lote = read_inbox(ledger, now=NOW, campaign="lote", state="handled")
    assert lote.replies == [] and lote.counts == {"new": 1, "to answer": 1, "handled": 0}
    limited = read_inbox(ledger, now=NOW, limit=2)
    assert _ids(limited) == [r["stranger"], r["sim"]] and limited.more


def test_marking_handled_keeps_the_first_person_and_changes_the_version(
        ledger: Ledger, world: World) -> None:
    before = read_inbox(ledger, now=NOW)
    reply = world.replies["hostile"]
    done = mark_handled(ledger, reply, "otto", NOW)
    assert (done.done, done.by, done.at) == (True, "otto", NOW)
    again = mark_handled(ledger, reply, "vera", NOW + timedelta(minutes=1))
    assert (again.done, again.by, again.at) == (False, "otto", NOW)
    after = read_inbox(ledger, now=NOW)
    assert after.version != before.version
    assert after.counts == {"new": 1, "to answer": 1, "handled": 2}
    with pytest.raises(NoSuchReply, match="no reply 999999"):
        mark_handled(ledger, 999_999, "otto", NOW)


def test_since_and_state_are_read_or_refused_clearly() -> None:
    assert parse_since("2h", NOW) == NOW - timedelta(hours=2)
    assert parse_since("2026-11-28", NOW) == datetime(2026, 11, 28, tzinfo=UTC)
    assert parse_since("2026-11-28T09:00-03:00", NOW) == datetime(2026, 11, 28, 12,
                                                                   tzinfo=UTC)
    assert parse_since(None, NOW) is None
    with pytest.raises(InboxError, match="--since 'yesterday'"):
        parse_since("yesterday", NOW)
    assert check_state("to_answer") == "to answer"
    with pytest.raises(InboxError, match="state 'done': expected one of new, to answer"):
        check_state("done")


def test_a_number_in_any_common_format_is_the_campaigns() -> None:
    for written in ("+55 (11) 98765-4321", "(11) 98765-4321", "11987654321",
                    "5511987654321", "0055 11 98765 4321"):
        assert normalise_number(written) == "5511987654321", written
    assert normalise_number("(212) 555-0100", "US") == "12125550100"
    with pytest.raises(NumberError, match="'maria' is not a phone number"):
        normalise_number("maria")
    assert looks_like_number("+55 11 98765-4321") and not looks_like_number("Ana 0")


def test_the_story_tells_everything_in_time_order(ledger: Ledger, world: World) -> None:
    story = read_story(ledger, number(0), now=NOW)
    assert story.names == ["Ana 0"] and story.runs == [world.lote, world.aviso]
    assert story.replies == 2 and not story.opted_out
    lines = [(d.run_id, d.step, d.attempt, d.state, d.sender, d.variant, d.rule)
             for d in story.deliveries]
    decided = DECISIONS is not None  # the conditional steps' table is in this ledger
    assert lines == [(world.lote, 0, 1, "read", "s1", None, None),
                     (world.lote, 1, 1, "skipped" if decided else "planned", None, None,
                      None),
                     (world.aviso, 0, 1, "failed", "s2", None, None),
                     (world.aviso, 0, 2, "delivered", "s2", "B", "no_answer")]
    assert [i.at for i in story.items] == sorted(i.at for i in story.items)
    what = [(i.what, i.run_id) for i in story.items]
    for expected in [("handed to the service", world.lote), ("delivered", world.lote),
                     ("event", None), ("read", world.lote), ("click", world.lote),
                     ("reply", world.lote), ("failed", world.aviso),
                     ("verdict", world.aviso), ("reply", world.aviso)]:
        assert expected in what, expected
    replies = [i for i in story.items if i.what == "reply"]
    assert [(i.text, i.state) for i in replies] == [(HOSTILE, "to answer"), ("sim", "handled")]
    assert replies[1].attempt == 2 and replies[1].variant == "B"
    click = next(i for i in story.items if i.what == "click")
    assert click.text == "https://example.com/oferta"
    verdict = next(i for i in story.items if i.what == "verdict")
    assert verdict.text == "tried again: no answer (attempt 2 of 3)"
    sent = next(i for i in story.items if i.what == "handed to the service"
                and i.attempt == 2)
    assert sent.sender == "s2"
    if decided:
        decision, late = story.items[-2:]
        assert (decision.what, decision.step, decision.text) == (
            "decision", 1, "skip: no reply matched ^(1|sim)")
        assert (late.what, late.text) == ("late reply",
                                          "a reply came after the decision (sim); it stands")
        assert story.deliveries[1].decision == "skip"


def test_the_story_of_an_opted_out_number_and_of_a_stranger(ledger: Ledger,
                                                            world: World) -> None:
    opted = read_story(ledger, number(1), now=NOW)
    assert opted.opted_out
    assert [i.what for i in opted.items if i.what in ("reply", "opt-out")] == ["reply",
                                                                             "opt-out"]
    stranger = read_story(ledger, STRANGER, now=NOW)
    assert stranger.deliveries == [] and [i.what for i in stranger.items] == ["reply"]
    nobody = read_story(ledger, "5511900000098", now=NOW)
    assert nobody.items == [] and nobody.deliveries == []


def test_a_recipient_is_found_by_name(ledger: Ledger, world: World) -> None:
    found = find_by_name(ledger, "ana 2")
    assert [(f.number, f.name) for f in found] == [(number(2), "Ana 2")]
    assert {f.number for f in find_by_name(ledger, "Ana")} == {number(i) for i in range(3)}
    assert find_by_name(ledger, "100%_") == [] and find_by_name(ledger, "  ") == []


# ---------------------------------------------------------------------- the commands


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ledger_url: str) -> None:
    """The current folder is a project on the test's ledger."""
    command_project(tmp_path, monkeypatch, ledger_url)


@pytest.mark.usefixtures("project")
def test_campaign_replies_prints_the_inbox(world: World) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["replies"])
    assert shown.exit_code == 0, shown.output
    assert "replies: 1 new · 2 to answer · 1 handled" in shown.stdout
    assert HOSTILE in shown.stdout  # as text: a terminal runs no script
    assert f"run {world.lote} (lote) step 1  {number(0)} Ana 0 via s1" in shown.stdout
    assert "[handled by ana" in shown.stdout and "[opt-out]" in shown.stdout
    to_answer = runner.invoke(app, ["replies", "--to-answer", "--json"])
    data = json.loads(to_answer.stdout)
    assert [r["id"] for r in data["replies"]] == [world.replies["stranger"],
                                                   world.replies["hostile"]]
    assert data["state"] == "to answer" and data["counts"]["handled"] == 1
    by_run = json.loads(runner.invoke(app, ["replies", "--run", str(world.aviso), "--json"])
                        .stdout)
    assert [r["text"] for r in by_run["replies"]] == ["sim"]
    assert by_run["replies"][0]["step"] == 0 and by_run["replies"][0]["attempt"] == 2
    by_campaign = runner.invoke(app, ["replies", "--campaign", "aviso", "--since",
                                      "2026-11-23T12:20Z"])
    assert "sim" in by_campaign.stdout and "PARAR" not in by_campaign.stdout
    none = runner.invoke(app, ["replies", "--campaign", "nenhuma"])
    assert "no replies under this filter" in none.stdout


@pytest.mark.usefixtures("project")
def test_campaign_recipient_prints_the_story(world: World) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["recipient", "+55 (11) 90000-0000"])
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert f"{number(0)} · Ana 0" in out
    assert f"runs {world.lote}, {world.aviso} · 4 deliveries · 2 replies" in out
    assert (f"run {world.aviso} (aviso) step 1 · attempt 2 · text · delivered · via s2 · "
            "variant B · rule no_answer") in out
    assert "verdict: tried again: no answer (attempt 2 of 3)" in out
    assert f"reply via s1 [to answer]: {HOSTILE}" in out
    assert "click: https://example.com/oferta" in out
    data = json.loads(runner.invoke(app, ["recipient", number(1), "--json"]).stdout)
    assert data["number"] == number(1) and data["opted_out"] is True
    assert [i["what"] for i in data["items"]][-1] == "opt-out"


def test_the_commands_refuse_bad_input_in_one_line(tmp_path: Path, ledger_url: str) -> None:
    (tmp_path / "config.toml").write_text("")
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url)
    for args, said in ((["recipient", "maria"], "'maria' is not a phone number\n"),
                       (["replies", "--run", "99"], "run 99 not found"),
                       (["replies", "--since", "ontem"], "--since 'ontem'"),
                       (["replies", "--state", "lido"], "state 'lido': expected one of"),
                       (["replies", "--to-answer", "--state", "new"], "say different")):
        done = in_process(env, *args, cwd=tmp_path)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr, done.stderr
