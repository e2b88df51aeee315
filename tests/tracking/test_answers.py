"""Poll votes and list choices per delivery: kept on the delivery they answer (the latest
vote wins in any order of arrival), tallied per step by ``campaign status``, and a column of
the report."""

from __future__ import annotations

import json
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger.queries import tables
from scheduler.ledger.runs import Ledger
from scheduler.ledger.tracking_store import TrackingStore
from scheduler.reports import write_report
from scheduler.tracking.apply import ApplyContext
from scheduler.tracking.event_store import store_and_apply
from scheduler.tracking.intake import incoming_from
from scheduler.tracking.replies import OptOutWords
from tests.factories import T0, number
from tests.tracking.support import accepted_run, mid, received, rows

runner = CliRunner()


def vote(i: int, options: list[str], minutes: int) -> dict:
    return received(number(i), ", ".join(options), T0 + timedelta(minutes=minutes),
                    kind="poll_update",
                    data={"poll_message_id": mid(i).upper(), "selected_options": options})


def pick(i: int, row_id: str, title: str) -> dict:
    return received(number(i), title, T0 + timedelta(minutes=9), kind="list_response",
                    data={"list_message_id": mid(i, 1), "row_id": row_id, "title": title})


@pytest.fixture
def answered(tledger: Ledger, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
             ledger_url: str) -> int:
    """A run of a poll (step 0) and a list (step 1) to three numbers, answered."""
    monkeypatch.setenv("CAMPAIGN_DATABASE_URL", ledger_url)
    monkeypatch.chdir(tmp_path)
    run_id = accepted_run(tledger, 3, steps=2)
    d = tables.deliveries
    with tledger.engine.begin() as conn:
        conn.execute(update(d).where(d.c.run_id == run_id, d.c.step == 0).values(kind="poll"))
        for i in range(3):
            conn.execute(update(d).where(d.c.run_id == run_id, d.c.to == number(i),
                                         d.c.step == 1).values(
                kind="list", state="accepted", message_id=mid(i, 1).lower(),
                message_id_norm=mid(i, 1).lower()))
    # number 0 changed its vote: the newer one arrives first
    events = [vote(0, ["Não"], 7), vote(1, ["Sim", "Talvez"], 5), vote(0, ["Sim"], 6),
              pick(2, "r2", "Plano anual")]
    items = [incoming_from(e, json.dumps(e), T0) for e in events]
    for item in items:  # one transaction each, as they would come
        store_and_apply(TrackingStore(tledger), [item], ApplyContext(OptOutWords(["SAIR"])), T0)
    return run_id


def test_the_latest_vote_and_the_list_row_are_kept_on_their_deliveries(
        tledger: Ledger, answered: int) -> None:
    details = {(r["to"], r["step"]): json.loads(r["details"]) if r["details"] else {}
               for r in rows(tledger, answered)}
    assert details[(number(0), 0)]["pollVote"] == ["Não"]
    assert details[(number(1), 0)]["pollVote"] == ["Sim", "Talvez"]
    assert details[(number(2), 1)] | {"answeredAt": None} == {
        "listRowId": "r2", "listRowTitle": "Plano anual", "answeredAt": None}
    assert details[(number(2), 0)] == {} and details[(number(0), 1)] == {}


def test_status_tallies_each_poll_and_list_step(answered: int) -> None:
    result = runner.invoke(app, ["status", str(answered), "--json"])
    assert result.exit_code == 0, result.output
    answers = {a["step"]: a for a in json.loads(result.stdout)["answers"]}
    assert answers[0]["options"] == {"Não": 1, "Sim": 1, "Talvez": 1}
    assert (answers[0]["answered"], answers[0]["deliveries"]) == (2, 3)
    assert answers[1]["options"] == {"Plano anual": 1} and answers[1]["answered"] == 1
    text = runner.invoke(app, ["status", str(answered)]).stdout
    assert "poll step 0: Não 1 · Sim 1 · Talvez 1 (2 of 3 answered)" in text
    assert "list step 1: Plano anual 1 (1 of 3 answered)" in text


def test_the_report_shows_each_deliverys_vote_and_choice(
        tledger: Ledger, answered: int, tmp_path: Path) -> None:
    result = write_report(tledger, [answered], fmt="csv", output=tmp_path / "r.csv")
    frame = pd.read_csv(result.path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
    assert {"Poll vote", "List choice"} <= set(frame.columns)
    votes = [v for v in frame["Poll vote"] if v]
    assert sorted(votes) == ["Não", "Sim, Talvez"]
    assert [c for c in frame["List choice"] if c] == ["Plano anual (r2)"]
    book = write_report(tledger, [answered], fmt="xlsx", output=tmp_path / "r.xlsx")
    with closing(openpyxl.load_workbook(book.path, read_only=True)) as opened:  # holds the file
        cells = [str(c) for row in opened["Recipients"].iter_rows(values_only=True)
                 for c in row if c]
    assert "Poll vote" in " ".join(cells) and "Sim, Talvez" in cells
    assert "Plano anual (r2)" in cells
