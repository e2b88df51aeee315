"""``campaign plan`` counts the numbers on the ledger's own suppression list (an opt-out reply,
one added through the API) as the stored run skips them: ``suppressed``, the plan writer's
word, after the plan's own reasons (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from sqlalchemy import select

from scheduler.api.reads import add_suppression
from scheduler.ledger import access
from scheduler.ledger.privacy_key import number_hash
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.runs import Ledger
from scheduler.ledger.suppression_list import listed_numbers
from scheduler.usecases.planning import plan_run
from tests.app.support import clean_env
from tests.factories import T0
from tests.incli import in_process

START = "2026-12-01T09:00:00-03:00"
#: An opt-out reply, one the API listed, one with no opt-in that opted out too, one kept.
REPLIED, LISTED, UNCONSENTED, KEPT = "5511987650001", "5521987650002", "5531987650003", \
    "5541987650004"


def _project(root: Path) -> Path:
    """A campaign requiring consent from a column; the opted-out number appears twice."""
    rows = [("Ana", REPLIED, "2026-01-02"), ("Bia", LISTED, "2026-01-02"),
            ("Caio", UNCONSENTED, ""), ("Duda", KEPT, "2026-01-02"),
            ("Ana de novo", REPLIED, "2026-01-02")]
    for folder in ("campaigns", "data", "state"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "data" / "r.csv").write_text(
        "nome;telefone;optin\n" + "".join(f"{n};+{p};{o}\n" for n, p, o in rows),
        encoding="utf-8")
    path = root / "campaigns" / "optouts.toml"
    path.write_text(
        'name = "optouts"\nsenders = ["s1"]\n[recipients]\nfile = "data/r.csv"\n'
        'phone_column = "telefone"\nconsent = "required"\nconsent_column = "optin"\n'
        '[schedule]\ntimezone = "UTC"\n[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n'
        '[[steps]]\ntype = "text"\ndelay = "1h"\ntext = "De novo, {{ nome }}"\n',
        encoding="utf-8")
    return path


def test_the_ledger_list_is_read_only_when_it_holds_numbers_in_clear(ledger: Ledger) -> None:
    assert listed_numbers(ledger.engine) is None
    ledger.suppress(number_hash(b"k" * 32, "5511900000009"), source="erasure",
                    reason="erased at the person's request on 2026-11-01")  # a keyed hash
    assert listed_numbers(ledger.engine) is None
    ledger.suppress(REPLIED, source="reply", reason="replied with an opt-out word")
    assert listed_numbers(ledger.engine) == frozenset({REPLIED})


def test_plan_counts_the_ledger_opt_outs_as_the_stored_run_skips_them(
        ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    path = _project(root)
    # what tracking stores for an opt-out reply, and a number listed through the API
    ledger.suppress(REPLIED, source="reply", reason="replied with an opt-out word")
    assert add_suppression(ledger, LISTED, "asked by phone")
    ledger.suppress(UNCONSENTED, source="reply", reason="replied with an opt-out word")
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url)
    out = in_process(env, "plan", str(path), "--start", START, "--json", cwd=root)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    recipients = report["recipients"]
    assert (recipients["suppressed"], recipients["suppressed_ledger"],
            recipients["duplicates"], recipients["no_consent"], recipients["valid"]) == (
        2, 2, 1, 1, 1)
    assert [(s["planned"], s["skipped"]) for s in report["steps"]] == [(1, 4), (1, 4)]
    text = in_process(env, "plan", str(path), "--start", START, cwd=root).stdout
    assert "on the ledger's suppression list: 2 recipients skipped (suppressed)" in text
    checked = in_process(env, "validate", str(path), cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "of which on the ledger's suppression list" in checked.stdout
    as_json = json.loads(in_process(env, "validate", str(path), "--json", cwd=root).stdout)
    assert as_json["recipients"]["suppressed_ledger"] == 2

    run_id = plan_run(ledger, path, start_at=T0, rehearsal=True)  # the writer checks too
    with access.read(ledger.engine) as conn:
        stored = conn.execute(select(deliveries.c.to, deliveries.c.step, deliveries.c.reason)
                              .where(deliveries.c.run_id == run_id,
                                     deliveries.c.state == "skipped")).all()
    by_recipient = Counter(r.split(":", 1)[0] for _to, step, r in stored if step == 0)
    assert by_recipient == {"suppressed": recipients["suppressed"],
                            "duplicate": recipients["duplicates"],
                            "no_consent": recipients["no_consent"]}
    assert {to for to, _s, r in stored if r == "suppressed"} == {REPLIED, LISTED}

