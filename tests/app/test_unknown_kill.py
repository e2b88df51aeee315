"""A run killed while sends are in doubt: ``--unproven`` never offers a send the service took.

A real ``campaign run`` sends to a sandbox in another process. The sandbox takes the next
sends but holds their answers back, and delays its webhooks; the run is killed with
SIGKILL while those answers are awaited, so the sends are in doubt, and their events find
no receiver: the sandbox retries them (on a scaled-down schedule) and gives up before the
run is resumed. The resumed run completes while those sends are still inside the service's
retry horizon (shortened to match the sandbox's). Then either it stops listening at once
(Ctrl-C) and nothing listens afterwards, or it keeps its receiver up to the end of the
horizon. Either way, after the horizon ``campaign resend --unproven`` queues no send that
the sandbox's record shows it took; with the receiver kept up, it queues exactly the sends
of the resumed run that timed out and that the sandbox never took.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.app.support import CAMPAIGN, cli, wait_for
from tests.channels.support import (
    kill_with_a_send_in_doubt,
    ledger_rows,
    numbers_sent,
    run_env,
    sandbox_process,
)
from tests.factories import write_project

N = 40
TEXT = "/messages/send/text"
#: The sandbox retries an event once, 0.5 s after a first attempt made 2.5-3 s after the
#: send: the tests' service gives up within 4 s, so its horizon is set to 8 s.
HORIZON_S = "8"
#: Events of the sends before the kill: delivered only if a receiver listens 2.5-3.5 s later.
WEBHOOKS = {"webhook_delay_ms": [2500, 3000], "webhook_max_attempts": 2,
            "webhook_retry_base_s": 0.5}
#: Only ``messages.sent`` events: one per send the sandbox takes.
QUIET = {"delivered_rate": 0.0, "read_rate": 0.0, "reply_rate": 0.0, "poll_vote_rate": 0.0,
         "session_status_events": False}


def _events_given_up(box, sends: int) -> bool:
    """Whether every event of the first ``sends`` sends was delivered or tried the last
    time (nothing of theirs can reach a receiver any more)."""
    log = [w for w in box.webhooks() if w["event"] == "messages.sent"]
    finished = [w for w in log if (w["status"] or 0) // 100 == 2 or w["attempt"] == 2]
    return len(finished) >= sends


def _status(env: dict[str, str], cwd: Path) -> dict:
    out = cli(env, "status", "1", "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("listening", ["stops at once", "to the horizon"])
def test_after_a_kill_resend_unproven_offers_no_send_the_service_took(
        tmp_path: Path, ledger_url: str, listening: str) -> None:
    with sandbox_process() as box:
        box.set_faults(**QUIET, **WEBHOOKS)
        box.create_session("s1")
        shop = tmp_path / "shop"
        campaign = write_project(shop, N, rate="10/s")
        env = run_env(box.base_url, box.api_key, ledger_url, CAMPAIGN_VERIFY_GRACE_S="1",
                      CAMPAIGN_WEBHOOK_RETRY_HORIZON_S=HORIZON_S)
        kill_with_a_send_in_doubt(box, campaign, env, after=5)
        taken_at_kill = set(numbers_sent(box.sends(), TEXT))
        in_doubt = {to for to, row in ledger_rows(ledger_url).items()
                    if row.state == "dispatching"}
        taken_in_doubt = in_doubt & taken_at_kill
        assert taken_in_doubt  # sends the service took whose answer never came
        wait_for(lambda: _events_given_up(box, len(taken_at_kill)), timeout=30)

        # the resumed run: some sends time out and the sandbox never takes them
        box.set_faults(timeout_rate=0.25, timeout_after_accept=0.0, timeout_hang_s=5)
        resumed = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], cwd=shop, text=True,
                                   env={**env, "CAMPAIGN_HTTP_TIMEOUT_S": "1"},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            seen = []
            assert resumed.stdout is not None
            for line in resumed.stdout:
                seen.append(line)
                if "waiting until" in line:
                    break
            assert "for the service's proof of" in seen[-1], "".join(seen)
            assert "the receiver listens until then (Ctrl-C stops it)" in seen[-1]
            if listening == "stops at once":
                resumed.send_signal(signal.SIGINT)
            out, err = resumed.communicate(timeout=60)
        finally:
            if resumed.poll() is None:
                resumed.kill()
        out = "".join(seen) + out
        assert resumed.returncode == 0, out + err
        assert "run 1: completed" in out, out
        if listening == "stops at once":
            # said plainly, with how to let the proof arrive
            assert "stopped listening with" in out and "`campaign receiver`" in out, out
        else:
            assert "stopped listening" not in out, out

        wait_for(lambda: _status(env, shop)["unknown_detail"]["waiting"] == 0, timeout=60)
        rows = ledger_rows(ledger_url)
        taken = numbers_sent(box.sends(), TEXT)
        assert set(taken.values()) == {1}  # nobody twice
        unknown = {to for to, row in rows.items() if row.state == "unknown"}
        assert taken_in_doubt <= unknown  # taken, and no proof could ever come
        status = cli(env, "status", "1", cwd=shop)
        assert "unknown that nothing can settle" in status.stdout, status.stdout
        assert "no receiver listened from" in status.stdout, status.stdout

        resend = cli(env, "resend", "1", "--unproven", cwd=shop)
        assert resend.returncode == 0, resend.stderr
        queued = {to for to, row in ledger_rows(ledger_url).items() if row.state == "planned"}
        assert not queued & set(taken), sorted(queued & set(taken))
        assert queued <= unknown - in_doubt
        if listening == "to the horizon":
            # heard through: the resumed run's time-outs that the service never took
            assert queued == unknown - set(taken) - in_doubt and queued, (queued, unknown)
    assert "Traceback" not in box.log and "sandbox bug" not in box.log, box.log
