"""``campaign plan`` counts what a stored run skips: the rows without consent and the
numbers erased at the person's request, in the run's own words (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.runs import Ledger
from scheduler.privacy.person import forget_person
from scheduler.usecases.planning import plan_run
from tests.app.support import clean_env
from tests.factories import T0
from tests.incli import in_process
from tests.privacy.support import DIGITS, NAME, OTHERS, PHONE

KEY = ("ab" * 32).encode()  # what the state folder's erasure.key holds, as read
START = "2026-12-01T09:00:00-03:00"


def _project(root: Path) -> Path:
    """A campaign requiring consent from a column: the person (erased, with an opt-in), two
    others with one, and one without."""
    people = [(NAME, PHONE, "2026-01-02"), *((n, p, "2026-01-02") for n, p in OTHERS),
              ("Dora Semoptin", "(41) 99555-1234", "")]
    for folder in ("campaigns", "data", "state"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "state" / "erasure.key").write_text(KEY.decode() + "\n", encoding="ascii")
    (root / "data" / "r.csv").write_text(
        "nome;telefone;optin\n" + "".join(f"{n};{p};{o}\n" for n, p, o in people),
        encoding="utf-8")
    path = root / "campaigns" / "later.toml"
    path.write_text(
        'name = "later"\nsenders = ["s1"]\n[recipients]\nfile = "data/r.csv"\n'
        'phone_column = "telefone"\nconsent = "required"\nconsent_column = "optin"\n'
        '[schedule]\ntimezone = "UTC"\n[[steps]]\ntype = "text"\ntext = "Oi {{ nome }}"\n',
        encoding="utf-8")
    return path


def test_plan_counts_the_erased_and_the_unconsenting_as_the_run_skips_them(
        ledger: Ledger, ledger_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "shop"
    path = _project(root)
    forget_person(ledger.engine, PHONE, key=KEY, who="t", via="test", reason="LGPD",
                  now=T0)
    env = clean_env(CAMPAIGN_DATABASE_URL=ledger_url)
    out = in_process(env, "plan", str(path), "--start", START, "--json", cwd=root)
    assert out.returncode == 0, out.stderr
    recipients = json.loads(out.stdout)["recipients"]
    assert (recipients["erased"], recipients["no_consent"], recipients["valid"]) == (1, 1, 2)
    text = in_process(env, "plan", str(path), "--start", START, cwd=root).stdout
    assert "erased at the person's request: 1 recipients skipped" in text
    assert "consent required: 1 recipients without it skipped (no_consent)" in text
    checked = in_process(env, "validate", str(path), cwd=root).stdout
    assert "erased at the person's request" in checked

    monkeypatch.chdir(root)  # the run finds the project's erasure key from here
    run_id = plan_run(ledger, path, start_at=T0, rehearsal=True)
    with access.read(ledger.engine) as conn:
        stored = conn.execute(select(deliveries.c.to, deliveries.c.reason).where(
            deliveries.c.run_id == run_id, deliveries.c.state == "skipped")).all()
    reasons = Counter(r.split(":", 1)[0] for _to, r in stored)
    assert reasons == {"no_consent": 1, f"erased at the person's request on {T0.date()}": 1}
    assert DIGITS not in {to for to, _r in stored}  # the erased row holds the pseudonym
