"""``kill -9`` in the middle of an SMS run sends no recipient twice.

A real ``campaign run`` sends a slow-paced SMS campaign (bulks of 20, one every half second)
to a sandbox in another process. At the kill the sandbox has just taken a bulk whose answer
the process never got (the sandbox holds it: a time-out after accepting): the ledger holds
those rows ``dispatching``, exactly the state a crash between a bulk's answer and its commit
leaves. ``campaign resume`` settles them from the service's ``sms.*`` reports (retried until
the new process's receiver, on the same port, takes them) and sends the rest: the service
took each number at most once, and every recipient is sent once or ``unknown``; the rows in
doubt that the service did take are proven sent, not ``unknown``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.ledger.states import SENT_STATES
from tests.app.support import cli
from tests.channels.support import (
    check_sms_outcomes,
    kill_with_a_send_in_doubt,
    ledger_rows,
    numbers_sent,
    run_env,
    sandbox_process,
    sms_number,
    sms_project,
)

N = 200
BATCH = 20


@pytest.mark.slow
def test_kill_9_mid_run_sends_no_sms_twice(tmp_path: Path, ledger_url: str) -> None:
    with sandbox_process() as box:
        # reports come 0.3-2.5 s after a send, so some reach the killed process and some
        # the next one (the sandbox retries for ~2 min)
        box.set_faults(sms_report_delay_ms=[300, 2500], webhook_retry_base_s=0.5,
                       webhook_max_attempts=9)
        shop = tmp_path / "shop"
        campaign = sms_project(shop, N, rate="40/s", batch=BATCH, personal_every=0)
        env = run_env(box.base_url, box.api_key, ledger_url, CAMPAIGN_VERIFY_GRACE_S="15")
        kill_with_a_send_in_doubt(box, campaign, env, after=3)
        box.set_faults(timeout_rate=0.0)

        at_kill = ledger_rows(ledger_url)
        taken_at_kill = numbers_sent(box.sends(), "/sms/")
        in_doubt = {to for to, row in at_kill.items() if row.state == "dispatching"}
        taken_in_doubt = in_doubt & set(taken_at_kill)
        assert len(taken_in_doubt) >= BATCH  # the bulk the sandbox took, not recorded
        assert any(row.state == "planned" for row in at_kill.values())  # killed mid-run

        resumed = cli(env, "resume", "1", cwd=shop)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "run 1: completed" in resumed.stdout, resumed.stdout

        taken = numbers_sent(box.sends(), "/sms/")
        assert set(taken.values()) == {1}, [n for n, k in taken.items() if k > 1]  # never twice
        rows = ledger_rows(ledger_url)
        assert set(rows) == {sms_number(i) for i in range(N)}
        unknown = {to for to, row in rows.items() if row.state == "unknown"}
        # at most once: each recipient was sent once or is unknown, never both, never neither
        assert unknown == set(rows) - set(taken)
        assert all(rows[to].state in SENT_STATES for to in taken)
        # the rows in doubt that the service took are proven by their reports
        assert all(rows[to].message_id for to in taken_in_doubt)
        # with the receiver up, no row stays in doubt: the kill came right after a bulk was
        # taken, half a second before the next claim
        assert unknown == set(), sorted(unknown)
        decided = box.outcomes("sms")
        check_sms_outcomes(rows, [o for o in decided if o["to"] not in taken_in_doubt])
        # a row proven by its report has what the report says (no answer told its cost)
        check_sms_outcomes(rows, [o for o in decided if o["to"] in taken_in_doubt],
                           costs=False)
