"""``POST /api/v1/runs`` (a run of a campaign file, planned as ``campaign run`` plans it,
behind an ``Idempotency-Key``), ``/api/v1/campaigns`` (the files with validate's and plan's
results) and ``/api/v1/runs/{id}/replies``, over a real uvicorn server and the pass's
ledger."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from scheduler.cli import app as cli_app
from scheduler.ledger.runs import Ledger
from tests.api.support import Api, project_settings, served
from tests.factories import command_project, number, write_project


@pytest.fixture
def api(ledger: Ledger, ledger_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Api:
    command_project(tmp_path, monkeypatch, ledger_url)
    write_project(tmp_path, 3)  # campaigns/lote.toml
    write_project(tmp_path, 2, name="other")
    with served(ledger, project_settings(tmp_path, ledger_url)) as api:
        yield api


def start(api: Api, key: str | None, body: dict, role: str = "operator") -> httpx.Response:
    headers = {**api.as_(role), **({"Idempotency-Key": key} if key is not None else {})}
    return api.client.post("/api/v1/runs", headers=headers, json=body)


def test_the_same_key_twice_starts_one_run_and_answers_it_again(
        api: Api, ledger: Ledger) -> None:
    first = start(api, "key-1", {"campaign": "lote.toml"})
    assert first.status_code == 201, first.text
    run = first.json()["run"]
    assert first.json()["status"] == "planned" and first.json()["counts"] == {"planned": 3}
    assert first.json()["said"] == [f"run {run}: 3 deliveries planned"]
    assert "no live `campaign serve` worker" in first.json()["note"]
    again = start(api, "key-1", {"campaign": "lote.toml"})
    assert again.status_code == 200, again.text
    assert again.json()["run"] == run and again.json()["said"] == []
    assert [r.id for r in ledger.list_runs()] == [run]
    assert ledger.get_run(run).target == "sandbox"  # as `campaign run` records it


def test_a_key_sent_again_with_another_body_is_refused_with_a_clear_message(
        api: Api, ledger: Ledger) -> None:
    assert start(api, "key-1", {"campaign": "lote.toml"}).status_code == 201
    for body in ({"campaign": "other.toml"}, {"campaign": "lote.toml", "new_run": True}):
        other = start(api, "key-1", body)
        assert other.status_code == 422, other.text
        assert "sent before with another request" in other.json()["detail"]
    assert len(ledger.list_runs()) == 1


def test_a_start_the_campaigns_runs_refuse_is_409_and_frees_its_key(
        api: Api, ledger: Ledger) -> None:
    run = start(api, "key-1", {"campaign": "lote.toml"}).json()["run"]
    second = start(api, "key-2", {"campaign": "lote.toml"})
    assert second.status_code == 409
    assert second.json()["detail"] == (
        f"run {run} of 'lote' is not finished (planned): resume it (POST /api/v1/runs/{run}"
        f"/resume) or cancel it (POST /api/v1/runs/{run}/cancel) before a new run")
    assert api.client.post(f"/api/v1/runs/{run}/cancel",
                           headers=api.as_("operator")).status_code == 200
    # key-2 started nothing: it may be sent again, and now starts the run
    retried = start(api, "key-2", {"campaign": "lote.toml"})
    assert retried.status_code == 201, retried.text
    assert retried.json()["run"] != run


def test_a_one_off_campaign_that_finished_needs_new_run(api: Api, ledger: Ledger) -> None:
    from scheduler.ledger.states import RunStatus

    run = start(api, "a", {"campaign": "other.toml"}).json()["run"]
    ledger.set_status(run, RunStatus.COMPLETED)
    refused = start(api, "b", {"campaign": "other.toml"})
    assert refused.status_code == 409 and "already ran" in refused.json()["detail"]
    again = start(api, "c", {"campaign": "other.toml", "new_run": True})
    assert again.status_code == 201, again.text


def test_bad_starts_are_4xx_and_start_nothing(api: Api, ledger: Ledger,
                                              tmp_path: Path) -> None:
    missing_key = start(api, None, {"campaign": "lote.toml"})
    assert missing_key.status_code == 422
    assert missing_key.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    for key in (b"x" * 201, b"two words", "\u00e9t\u00e9".encode(), b"a\x01b"):
        answer = api.client.post("/api/v1/runs", json={"campaign": "lote.toml"},
                                 headers={**api.as_("operator"), "Idempotency-Key": key})
        assert 400 <= answer.status_code < 500, (key, answer.text)
    for name in ("nope.toml", "../config.toml", "/etc/passwd", "data/lote.csv", "lote"):
        unknown = start(api, f"k-{name}", {"campaign": name})
        assert unknown.status_code == 404, (name, unknown.text)
        assert "see GET /api/v1/campaigns" in unknown.json()["detail"]
    assert start(api, "v", {"campaign": "lote.toml"}, role="viewer").status_code == 403
    (tmp_path / "campaigns" / "broken.toml").write_text('name = "broken"\n[pace]\n')
    broken = start(api, "k-broken", {"campaign": "broken.toml"})
    assert broken.status_code == 422, broken.text
    assert "broken.toml" in broken.json()["detail"]
    assert ledger.list_runs() == []
    # the key was given back: the fixed file starts under it
    write_project(tmp_path, 1, name="broken")
    assert start(api, "k-broken", {"campaign": "broken.toml"}).status_code == 201


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(cli_app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_campaign_files_with_validate_and_plan(api: Api, tmp_path: Path) -> None:
    (tmp_path / "campaigns" / "broken.toml").write_text('name = "broken"\n')
    viewer = api.as_("viewer")
    listed = api.client.get("/api/v1/campaigns", headers=viewer)
    assert listed.status_code == 200, listed.text
    files = {c["name"]: c for c in listed.json()["campaigns"]}
    assert sorted(files) == ["broken.toml", "lote.toml", "other.toml"]
    assert files["lote.toml"]["valid"] and files["lote.toml"]["deliveries"] == 3
    assert not files["broken.toml"]["valid"] and files["broken.toml"]["errors"]
    one = api.client.get("/api/v1/campaigns/lote.toml", headers=viewer).json()
    planned = cli_json("plan", "campaigns/lote.toml")
    assert one["plan"]["recipients"] == planned["recipients"]
    assert one["plan"]["steps"] == planned["steps"]
    assert one["campaign"] == "lote" and one["channel"] == planned["channel"]
    assert api.client.get("/api/v1/campaigns/nope.toml", headers=viewer).status_code == 404
    assert api.client.get("/api/v1/campaigns/../config.toml",
                          headers=viewer).status_code == 404


def test_a_runs_replies_newest_first(api: Api, ledger: Ledger) -> None:
    from datetime import timedelta

    from scheduler.ledger import access
    from scheduler.ledger.queries.tables import replies
    from tests.factories import T0, make_run

    run_id = make_run(ledger, 3)
    with access.transaction(ledger.engine, "test") as conn:
        for i, text in enumerate(("quero", "SAIR", "obrigado")):
            conn.execute(replies.insert().values(
                run_id=run_id, number=number(i), kind="text", text=text,
                opt_out=text == "SAIR", received_at=T0 + timedelta(minutes=i)))
    viewer = api.as_("viewer")
    found = api.client.get(f"/api/v1/runs/{run_id}/replies", headers=viewer).json()
    assert [(r["event"], r["text"], r["number"]) for r in found["replies"]] == [
        ("reply.text", "obrigado", number(2)), ("opt_out", "SAIR", number(1)),
        ("reply.text", "quero", number(0))]
    two = api.client.get(f"/api/v1/runs/{run_id}/replies?limit=2", headers=viewer).json()
    assert len(two["replies"]) == 2
    assert api.client.get(f"/api/v1/runs/{run_id}/replies?limit=0",
                          headers=viewer).status_code == 422
    assert api.client.get("/api/v1/runs/999/replies", headers=viewer).status_code == 404


def test_the_migrated_key_table_is_the_modules(ledger: Ledger) -> None:
    from sqlalchemy import inspect

    from scheduler.ledger.idempotency import api_idempotency_keys

    found = {c["name"]: c["nullable"]
             for c in inspect(ledger.engine).get_columns("api_idempotency_keys")}
    assert found == {c.name: c.nullable for c in api_idempotency_keys.columns}
    assert inspect(ledger.engine).get_pk_constraint(
        "api_idempotency_keys")["constrained_columns"] == ["key"]


def test_the_same_key_at_once_from_two_clients_plans_one_run(api: Api, ledger: Ledger) -> None:
    from concurrent.futures import ThreadPoolExecutor

    headers = {**api.as_("operator"), "Idempotency-Key": "twice-at-once"}

    def post(_: int) -> httpx.Response:
        with httpx.Client(base_url=api.client.base_url, timeout=60) as client:
            return client.post("/api/v1/runs", headers=headers, json={"campaign": "lote.toml"})

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(post, range(4)))
    codes = sorted(a.status_code for a in answers)
    assert codes.count(201) == 1 and set(codes) <= {200, 201, 409}, [a.text for a in answers]
    (run,) = ledger.list_runs()
    assert {a.json()["run"] for a in answers if a.status_code < 300} == {run.id}
    busy = [a.json()["detail"] for a in answers if a.status_code == 409]
    assert all("being handled now" in detail for detail in busy)
