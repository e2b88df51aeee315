"""``POST /api/v1/people/export`` and ``/people/forget``: an operator's token exports and
erases, as the commands do, and the audit names the token; a viewer's is refused."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from scheduler.ledger.runs import Ledger
from tests.api.support import project_settings, served
from tests.factories import make_run, number
from tests.privacy.support import scan


def test_an_operator_exports_and_forgets_a_viewer_cannot(ledger: Ledger, ledger_url: str,
                                                          tmp_path: Path) -> None:
    make_run(ledger, 3)
    person = number(1)  # 5511900000001
    settings = project_settings(tmp_path, ledger_url)
    with served(ledger, settings) as api:
        body = {"number": f"+{person}", "reason": "titular pediu"}
        for path in ("/api/v1/people/export", "/api/v1/people/forget"):
            refused = api.client.post(path, json=body, headers=api.as_("viewer"))
            assert refused.status_code == 403, refused.text
        exported = api.client.post("/api/v1/people/export", json=body,
                                   headers=api.as_("operator"))
        assert exported.status_code == 200, exported.text
        doc = exported.json()
        assert doc["number"] == person and len(doc["tables"]["deliveries"]) == 1
        assert "Olá 1, passo 0" in doc["tables"]["deliveries"][0]["payload"]
        forgot = api.client.post("/api/v1/people/forget", json=body,
                                 headers=api.as_("operator"))
        assert forgot.status_code == 200, forgot.text
        assert forgot.json()["counts"]["deliveries skipped"] == 1
        bad = api.client.post("/api/v1/people/forget", json={"number": "12ab", "reason": "x"},
                              headers=api.as_("operator"))
        assert bad.status_code == 400 and "not a phone number" in bad.json()["detail"]
    assert scan(ledger_url, [person, "Olá 1,"]) == []
    assert scan(ledger_url, [number(0), number(2)])  # the others are untouched
    with ledger.engine.connect() as conn:
        audit = conn.execute(text("SELECT action, who, via FROM privacy_audit ORDER BY id")
                             ).all()
    assert [tuple(a) for a in audit] == [("export", "test-operator", "api"),
                                         ("forget", "test-operator", "api")]
    assert (tmp_path / "state" / "erasure.key").is_file()
