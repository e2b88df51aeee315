"""``link()`` in templates at plan time: the public address it needs, tracking off, the
length SMS segments and body bounds see, and addresses it cannot number."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from typer.testing import CliRunner

from scheduler.cli import app
from scheduler.ledger.db import open_ledger
from scheduler.ledger.runs import Ledger
from tests.factories import Project
from tests.links.support import (
    PUBLIC,
    link_campaign,
    short_links,
    stored,
    with_public_address,
)

runner = CliRunner()
START = datetime(2030, 1, 7, 12, tzinfo=UTC)
#: 120 characters, a space and a 15-character address: 136 GSM-7 characters, one SMS
#: segment as it is; the short link (44 characters on PUBLIC) makes it 165, two segments.
PADDED = "x" * 120 + ' {{ link("https://ex.co/a") }}'


def _plan_json(path: object) -> dict:
    result = runner.invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_without_a_public_address_the_plan_names_the_setting(project: Project) -> None:
    path = link_campaign(project, 'Oi {{ nome }}: {{ link("https://loja.example/promo") }}')
    result = runner.invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 1
    errors = json.loads(result.stdout)["errors"]
    assert len(errors) == 1  # said once, not once per row
    message = errors[0]["message"]
    assert errors[0]["key"] == "steps[0]"
    assert "webhook_url" in message and "track_links = false" in message


def test_tracking_off_sends_the_address_as_it_is(project: Project) -> None:
    path = link_campaign(project, 'Oi {{ nome }}: {{ link("https://loja.example/promo") }}',
                         extra="track_links = false\n")
    result = runner.invoke(app, ["preview", str(path), "--json"])
    assert result.exit_code == 0, result.output
    texts = [m["body"]["text"] for m in json.loads(result.stdout)]
    assert texts == ["Oi Ana: https://loja.example/promo", "Oi João: https://loja.example/promo"]


def test_preview_shows_a_short_link_on_the_public_address(project: Project) -> None:
    with_public_address(project)
    path = link_campaign(project, 'Oi {{ nome }}: {{ link("https://loja.example/promo") }}')
    result = runner.invoke(app, ["preview", str(path), "--json"])
    assert result.exit_code == 0, result.output
    texts = [m["body"]["text"] for m in json.loads(result.stdout)]
    links = [short_links(t) for t in texts]
    assert all(len(found) == 1 and found[0].startswith(f"{PUBLIC}/r/") for found in links)
    assert links[0] != links[1]  # one per recipient
    assert "loja.example" not in "".join(texts)


def test_sms_segments_count_the_short_link(project: Project, ledger_url: str) -> None:
    off = link_campaign(project, PADDED, channel="sms", extra="track_links = false\n")
    assert [s["sms_segments"] for s in _plan_json(off)["steps"]] == [2]  # 1 + 1
    with_public_address(project)
    on = link_campaign(project, PADDED, channel="sms")
    assert [s["sms_segments"] for s in _plan_json(on)["steps"]] == [4]  # 2 + 2
    # the run's own links (its run id, the project's key) have the length the plan counted
    from scheduler.campaign.segments import sms_segments
    from scheduler.usecases.planning import plan_run

    engine = open_ledger(ledger_url)
    try:
        ledger = Ledger(engine)
        run_id = plan_run(ledger, on, start_at=START)
        texts = [json.loads(d["payload"])["text"] for d in stored(ledger, "deliveries")]
        assert {d["run_id"] for d in stored(ledger, "deliveries")} == {run_id}
    finally:
        engine.dispose()
    assert [sms_segments(t).parts for t in texts] == [2, 2]
    # run 1 is one varint byte where the plan reckoned two (its bound up to run 16,383)
    assert [len(short_links(t)[0]) for t in texts] == [43, 43]


def test_the_body_bound_sees_the_short_link(project: Project) -> None:
    bounds = "[bounds]\ntext = 150\n"
    off = link_campaign(project, PADDED, extra="track_links = false\n" + bounds)
    assert runner.invoke(app, ["validate", str(off)]).exit_code == 0
    with_public_address(project)
    on = link_campaign(project, PADDED, extra=bounds)
    result = runner.invoke(app, ["validate", str(on), "--json"])
    assert result.exit_code == 1
    errors = json.loads(result.stdout)["errors"]
    assert errors and all("165 characters, over the limit of 150" in e["message"]
                          for e in errors)


def test_an_address_in_a_variable_cannot_be_numbered(project: Project) -> None:
    with_public_address(project)
    project.write("data/r.csv", "telefone;site\n11987654321;https://a.example/x\n")
    path = project.campaign(
        'name = "links"\nsenders = ["s1"]\n[recipients]\nfile = "data/r.csv"\n'
        'phone_column = "telefone"\n[[steps]]\ntype = "text"\ntext = "{{ link(site) }}"\n')
    result = runner.invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 1
    message = json.loads(result.stdout)["errors"][0]["message"]
    assert "write the address in the template as a quoted string" in message


def test_worker_processes_render_the_same_links(project: Project) -> None:
    from scheduler.campaign.plan import build_plan, load_campaign
    from scheduler.usecases.link_setup import bind_preview

    with_public_address(project)
    path = link_campaign(project, 'Oi {{ nome }}: {{ link("https://loja.example/promo") }}')
    texts = []
    for workers in (1, 2):
        campaign = load_campaign(path)
        assert bind_preview(campaign) == []
        plan = build_plan(campaign, workers=workers, chunk_rows=1)
        texts.append([r["payload"]["text"] for rows in plan.chunks() for r in rows])
    assert texts[0] == texts[1]
    assert len({link for text in texts[0] for link in short_links(text)}) == 2


def test_an_address_without_its_scheme_is_an_error_of_the_template(project: Project) -> None:
    with_public_address(project)
    path = link_campaign(project, '{{ link("loja.example/promo") }}')
    result = runner.invoke(app, ["validate", str(path), "--json"])
    assert result.exit_code == 1
    message = json.loads(result.stdout)["errors"][0]["message"]
    assert "link() takes an http(s):// address with a host, not 'loja.example/promo'" in message
