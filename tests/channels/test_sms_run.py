"""An SMS campaign run end to end: every recipient's final state is what the sandbox decided.

``campaign run`` (the console script, run in this process) sends 1,000 personalised texts
through a sandbox; its own receiver takes the signed ``sms.*`` reports. At the end the
ledger is compared, number by number, with ``/sandbox/outcomes`` (what the service decided)
and ``/sandbox/sends`` (what it was asked).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.channels.support import (
    SANDBOX_PRICES,
    check_sms_outcomes,
    ledger_rows,
    numbers_sent,
    reports_by_message,
    run_env,
    sms_number,
    sms_project,
)
from tests.incli import in_process

N = 1000


def test_a_thousand_personalised_sms_end_as_the_sandbox_decided(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    box = make_sandbox(sms_undelivered_rate=0.15, sms_failed_rate=0.05, sms_expired_rate=0.05,
                       sms_report_delay_ms=(0.0, 40.0), sms_price_micro=SANDBOX_PRICES)
    campaign = sms_project(tmp_path / "shop", N, batch=100)
    env = run_env(box.base_url, box.api_key, ledger_url)
    run = in_process(env, "run", str(campaign), cwd=tmp_path / "shop")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "completed" in run.stdout

    sends = [s for s in box.sends() if "/sms/" in s["path"]]
    taken = numbers_sent(sends, "/sms/")
    assert taken == Counter({sms_number(i): 1 for i in range(N)})  # everyone, exactly once
    bulks = [s for s in sends if s["path"].endswith("/sms/bulk")]
    singles = [s for s in sends if s["path"].endswith("/sms/send")]
    assert len(singles) == N // 10  # the personal texts, one request each
    assert sum(len(s["to"]) for s in bulks) == N - N // 10  # shared texts in bulks
    assert all(len(s["to"]) <= 100 for s in bulks) and max(len(s["to"]) for s in bulks) == 100
    assert len({s["body"]["text"] for s in bulks}) == 3

    decided = {o["to"]: o for o in box.outcomes("sms")}
    assert len(decided) == N
    rows = ledger_rows(ledger_url)
    assert set(rows) == set(decided)
    check_sms_outcomes(rows, list(decided.values()))
    reports = reports_by_message(ledger_url)  # which report it was, kept with the message
    assert {norm: dict(names) for norm, names in reports.items()} == {
        o["messageId"].lower(): {f"sms.{o['outcome']}": 1} for o in decided.values()}
    kinds = Counter(o["outcome"] for o in decided.values())
    assert set(kinds) == {"delivered", "undelivered", "failed", "expired"}
    assert {o["segments"] for o in decided.values()} >= {1, 2}  # one- and two-part texts
    spent = box.wallet()["spentMicroReais"]
    assert sum(r.details["costMicroReais"] for r in rows.values()) == spent
    assert sum(r.details["segments"] for r in rows.values()) == sum(
        o["segments"] for o in decided.values())
