"""An SMS run whose wallet runs out: it pauses saying so, nothing is lost, and after a top-up
``campaign resume`` sends the rest, every number exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.channels.support import (
    SANDBOX_PRICES,
    check_sms_outcomes,
    ledger_rows,
    numbers_sent,
    run_env,
    sms_number,
    sms_project,
)
from tests.factories import open_test_ledger
from tests.incli import in_process

N = 300
PRICE = SANDBOX_PRICES["marketing"]  # every text here is one GSM-7 segment
PAID = 130  # the wallet pays for this many messages


def test_a_wallet_that_runs_out_pauses_the_run_and_resume_sends_the_rest(
        make_sandbox, tmp_path: Path, ledger_url: str) -> None:
    # reports retried for ~2 min, so those a paused process did not wait for reach the next
    box = make_sandbox(wallet_micro_reais=PAID * PRICE, sms_undelivered_rate=0.1,
                       sms_report_delay_ms=(0.0, 40.0), webhook_retry_base_s=0.5,
                       webhook_max_attempts=9)
    shop = tmp_path / "shop"
    campaign = sms_project(shop, N, batch=50, personal_every=0)
    env = run_env(box.base_url, box.api_key, ledger_url)

    first = in_process(env, "run", str(campaign), cwd=shop)
    assert first.returncode == 0, first.stdout + first.stderr
    said = " ".join(first.stdout.split())
    assert "paused" in said and "the account's wallet ran out" in said, said
    assert "campaign resume 1" in said
    rows = ledger_rows(ledger_url)
    states = Counter(row.state for row in rows.values())
    assert states["planned"] == N - PAID, states  # the skipped wait in the plan
    assert sum(n for s, n in states.items() if s != "planned") == PAID
    assert numbers_sent(box.sends(), "/sms/") == Counter(
        {to: 1 for to, row in rows.items() if row.state != "planned"})
    skipped = [o["to"] for o in box.outcomes("sms") if o["outcome"] == "skipped"]
    assert skipped and set(skipped) <= {to for to, r in rows.items() if r.state == "planned"}
    with open_test_ledger(ledger_url) as ledger:
        run = ledger.get_run(1)
    assert run.status == "paused" and "wallet ran out" in (run.stop_reason or "")

    box.http.post("/sandbox/wallet", json={"topUpMicroReais": N * PRICE}).raise_for_status()
    resumed = in_process(env, "resume", "1", cwd=shop)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "run 1: completed" in resumed.stdout, resumed.stdout

    taken = numbers_sent(box.sends(), "/sms/")
    assert taken == Counter({sms_number(i): 1 for i in range(N)})  # everyone, once
    decided = {o["to"]: o for o in box.outcomes("sms") if o["outcome"] != "skipped"}
    rows = ledger_rows(ledger_url)
    assert len(decided) == N
    check_sms_outcomes(rows, list(decided.values()))
    wallet = box.wallet()
    assert wallet["spentMicroReais"] == N * PRICE
    assert wallet["balanceMicroReais"] == PAID * PRICE  # what was topped up and not used
