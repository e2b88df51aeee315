"""Template campaigns on official provider (``cloud_api``) senders, and catalog-product steps,
as a user runs them: ``campaign plan`` / ``run`` in a subprocess against a sandbox serving
as the configured service.

A template step is checked at plan time against the templates the connection lists: a wrong
number of body variables, a missing language, a QR sender, or a text step on a ``cloud_api``
sender stop the plan with the campaign file, the step and the template named, before
anything is stored or sent; a right one is planned, rendered per recipient, sent and
delivered. A product is fetched once for the whole plan and its fields rendered.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from scheduler.service.template_models import SEND_TEMPLATE_PATH
from tests.app.support import clean_env
from tests.factories import REPO, Project
from tests.incli import in_process

CSV = "nome;telefone;pedido\nMaria Silva;11987654321;A-1\nJoão Souza;21998765432;B-2\n" \
      "Ana Lima;31997654321;C-3\n"
TEMPLATE_BODY = "Olá {{1}}, seu pedido {{2}} saiu para entrega."


def official_sandbox(make_sandbox: Any, **knobs: Any) -> Any:
    """A sandbox with a cloud_api connection ``oficial`` holding ``pedido_enviado`` (pt_BR,
    two body variables) and a QR session ``loja``."""
    box = make_sandbox(**knobs)
    made = box.api("POST", "/api/v1/connections/cloud-api", json={
        "sessionId": "oficial", "phoneNumberId": "1234567", "businessAccountId": "7654321",
        "accessToken": "EAAG-test-token"})
    assert made.status_code == 200, made.text
    created = box.api("POST", "/api/v1/connections/cloud-api/oficial/templates", json={
        "name": "pedido_enviado", "language": "pt_BR", "body": TEMPLATE_BODY})
    assert created.status_code == 200, created.text
    box.create_session("loja")
    return box


def project(root: Path, steps: str, senders: str = '["oficial"]') -> Path:
    """A project whose campaign sends ``steps`` from ``senders`` to three recipients."""
    files = Project(root)
    files.write("data/clientes.csv", CSV)
    return files.campaign(f'name = "entregas"\nsenders = {senders}\n\n[pace]\nrate = "50/s"\n'
                          'jitter = "0s-0s"\n\n[recipients]\nfile = "data/clientes.csv"\n\n'
                          + textwrap.dedent(steps), name="entregas.toml")


TEMPLATE_STEP = """\
[[steps]]
type = "template"
template = {{ name = "pedido_enviado", language = "{language}", variables = [{variables}] }}
"""
RIGHT = TEMPLATE_STEP.format(language="pt_BR",
                             variables='"{{ nome|first_name }}", "{{ pedido }}"')


def template_sends(box: Any) -> list[dict[str, Any]]:
    """The template sends the sandbox accepted."""
    return [s for s in box.sends() if s["path"] == SEND_TEMPLATE_PATH]


def test_a_wrong_variable_count_is_refused_at_plan_time_naming_file_step_and_template(
        make_sandbox: Any, tmp_path: Path) -> None:
    box = official_sandbox(make_sandbox)
    campaign = project(tmp_path / "shop", TEMPLATE_STEP.format(
        language="pt_BR", variables='"{{ nome }}"'))
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key)
    for command in ("plan", "run"):
        out = in_process(env, command, str(campaign), cwd=tmp_path)
        said = out.stdout + out.stderr
        assert out.returncode == 1, said
        assert "Traceback" not in said
        assert str(campaign) in said and "steps[0].template.variables" in said
        assert ("template 'pedido_enviado' (pt_BR) of connection oficial takes 2 body "
                "variable(s); the step gives 1") in said
    assert template_sends(box) == []
    runs = json.loads(in_process(env, "runs", "--json", cwd=tmp_path / "shop").stdout)["runs"]
    assert runs == []  # nothing was stored


def test_other_mismatches_are_refused_at_plan_time(make_sandbox: Any, tmp_path: Path) -> None:
    box = official_sandbox(make_sandbox)
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key)
    cases = {
        "language": (TEMPLATE_STEP.format(language="en_US", variables='"a", "b"'), '["oficial"]',
                     "template 'pedido_enviado' of connection oficial has no language en_US "
                     "(it has: pt_BR)"),
        "qr": (RIGHT, '["loja"]', "a template step needs cloud_api senders; sender loja is an "
               "unofficial (QR) session"),
        "text": ('[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n', '["oficial"]',
                 "sender oficial is a cloud_api connection, which sends only templates"),
        "call": ('[[steps]]\ntype = "call_event"\ntitle = "Consulta"\n'
                 'scheduledTime = "2026-12-07 10:00"\ncallType = "video"\n'
                 'createCallLink = true\n', '["oficial"]',
                 "sender oficial is a cloud_api connection: calls (a call_event step) are "
                 "not available on cloud_api connections"),
    }
    for name, (steps, senders, message) in cases.items():
        campaign = project(tmp_path / name, steps, senders)
        out = in_process(env, "plan", str(campaign), cwd=tmp_path)
        said = out.stdout + out.stderr
        assert out.returncode == 1 and "Traceback" not in said, said
        assert message in said, said
        assert "steps[0]" in said
    assert template_sends(box) == []


@pytest.mark.slow
def test_the_right_template_is_planned_sent_per_recipient_and_delivered(
        make_sandbox: Any, tmp_path: Path) -> None:
    box = official_sandbox(make_sandbox, delivered_rate=1.0, read_rate=0.0)
    campaign = project(tmp_path / "shop", RIGHT)
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="5")
    planned = in_process(env, "plan", str(campaign), "--json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    report = json.loads(planned.stdout)
    assert [(s["kind"], s["path"], s["planned"]) for s in report["steps"]] == [
        ("template", SEND_TEMPLATE_PATH, 3)]
    out = in_process(env, "run", str(campaign), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    bodies = sorted((s["to"], s["body"]["template"]["bodyVariables"]) for s in template_sends(box))
    assert bodies == [("5511987654321", ["Maria", "A-1"]), ("5521998765432", ["João", "B-2"]),
                      ("5531997654321", ["Ana", "C-3"])]
    assert {s["body"]["template"]["name"] for s in template_sends(box)} == {"pedido_enviado"}
    status = json.loads(in_process(env, "status", "--json", cwd=tmp_path / "shop").stdout)
    assert status["counts"] == {"delivered": 3}, status


@pytest.mark.slow
def test_a_product_step_is_fetched_once_and_rendered(make_sandbox: Any, tmp_path: Path) -> None:
    box = make_sandbox()
    box.create_session("loja")
    campaign = project(tmp_path / "shop", """\
        [[steps]]
        type = "text"
        product = { id = "8812345", business = "5511977776666" }
        text = "{{ nome|first_name }}, {{ product.name }} por {{ product.price|brl }}"

        [[steps]]
        type = "image"
        product = { id = "8812345", business = "5511977776666" }
        image = "{{ product.imageUrl }}"
        caption = "{{ product.name }}: {{ product.url }}"
        """, senders='["loja"]')
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="1")
    desk = box.app.state.catalog
    product = desk.product("5511977776666@s.whatsapp.net", "8812345")
    before = len(desk.fetches)
    out = in_process(env, "run", str(campaign), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert desk.fetches[before:] == [("5511977776666@s.whatsapp.net", "8812345")]
    texts = [s["body"]["text"] for s in box.sends() if s["path"].endswith("/send/text")]
    price = f"R$ {product['price']:.2f}".replace(".", ",")
    assert sorted(texts) == sorted(f"{first}, {product['name']} por {price}"
                                   for first in ("Maria", "João", "Ana"))
    images = [s["body"] for s in box.sends() if s["path"].endswith("/send/image")]
    assert [(b["image"], b["caption"]) for b in images] == [
        (product["imageUrl"], f"{product['name']}: {product['url']}")] * 3


def test_a_product_that_cannot_be_fetched_stops_the_plan(make_sandbox: Any,
                                                          tmp_path: Path) -> None:
    box = make_sandbox()
    box.create_session("loja")
    campaign = project(tmp_path / "shop", """\
        [[steps]]
        type = "text"
        product = { id = "missing-42", business = "5511977776666" }
        text = "{{ product.name }}"
        """, senders='["loja"]')
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key)
    out = in_process(env, "run", str(campaign), cwd=tmp_path)
    said = out.stdout + out.stderr
    assert out.returncode == 1 and "Traceback" not in said, said
    assert "steps[0].product" in said and "product 'missing-42'" in said
    assert "Product not found" in said
    assert box.sends() == []


def test_the_example_template_campaign_plans_as_its_comments_say(make_sandbox: Any,
                                                                 tmp_path: Path) -> None:
    box = make_sandbox()
    root = tmp_path / "copy"
    for relative in ("campaigns/entrega_template.toml", "data/entregas.csv"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / relative, root / relative)
    env = clean_env(CAMPAIGN_BASE_URL=box.base_url, CAMPAIGN_API_KEY=box.api_key,
                    CAMPAIGN_CLOUD_API_TOKEN="test-token")
    for args in (["templates", "connect", "oficial-01", "--phone-number-id", "1234567",
                  "--business-account-id", "7654321"],
                 ["templates", "create", "oficial-01", "pedido_enviado", "-l", "pt_BR",
                  "--category", "UTILITY", "--body",
                  "Olá {{1}}, seu pedido {{2}} saiu para entrega e chega em {{3}}."]):
        done = in_process(env, *args, cwd=root)
        assert done.returncode == 0, done.stdout + done.stderr
    planned = in_process(env, "plan", "campaigns/entrega_template.toml", "--json", cwd=root)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    [step] = json.loads(planned.stdout)["steps"]
    assert (step["kind"], step["planned"]) == ("template", 6)
    shown = in_process(env, "preview", "campaigns/entrega_template.toml", "--rows", "1", "--json",
                cwd=root)
    [first] = json.loads(shown.stdout)
    assert first["body"]["template"] == {"name": "pedido_enviado", "language": "pt_BR",
                                         "bodyVariables": ["Marcela", "PED-10231",
                                                           "09/12/2026"]}


def test_a_rehearsal_sends_the_templates_without_asking_the_configured_service(
        tmp_path: Path, monkeypatch: Any) -> None:
    from scheduler.usecases.rehearsal import rehearse_campaign

    root = tmp_path / "copy"
    for relative in ("campaigns/entrega_template.toml", "data/entregas.csv"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / relative, root / relative)
    # a service nobody answers at: the rehearsal must not need it
    monkeypatch.setenv("CAMPAIGN_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CAMPAIGN_API_KEY", "not-used")
    rehearsal = rehearse_campaign(root / "campaigns" / "entrega_template.toml",
                                  start=datetime(2026, 12, 7, 12, 0, tzinfo=UTC))
    assert rehearsal.per_sender == {"oficial-01": 6}
    assert rehearsal.result.counts.get("failed", 0) == 0, rehearsal.result.counts
