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

Issue 31's kill test, made quick: a run killed five times (while it starts, mid-send, and
while the sandbox holds its requests, which it then takes with the client gone), against a
stand-in that gives up on an event sooner than the service (so the proof of a send taken
while no receiver listens is lost, as in the issue): the sends taken after their client
died stay ``unknown`` that nothing can settle, and ``--unproven`` queues none of them
(``benchmarks/unproven_kill.py``: the full run, 3,000 recipients, 15 kills, 3 seeds).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.app.support import CAMPAIGN, wait_for
from tests.channels.support import (
    kill_with_a_send_in_doubt,
    ledger_rows,
    numbers_sent,
    run_env,
    sandbox_process,
)
from tests.factories import write_project
from tests.incli import in_process

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
    out = in_process(env, "status", "1", "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
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
        status = in_process(env, "status", "1", cwd=shop)
        assert "unknown that nothing can settle" in status.stdout, status.stdout
        assert "no receiver listened from" in status.stdout, status.stdout

        resend = in_process(env, "resend", "1", "--unproven", cwd=shop)
        assert resend.returncode == 0, resend.stderr
        queued = {to for to, row in ledger_rows(ledger_url).items() if row.state == "planned"}
        assert not queued & set(taken), sorted(queued & set(taken))
        assert queued <= unknown - in_doubt
        if listening == "to the horizon":
            # heard through: the resumed run's time-outs that the service never took
            assert queued == unknown - set(taken) - in_doubt and queued, (queued, unknown)
    assert "Traceback" not in box.log and "sandbox bug" not in box.log, box.log


#: Issue 31's kill test, made quick: the moments at which each launch is killed. "start":
#: 0.4 s after it starts (start-up, planning); "sends": after that many new sends, so that
#: requests are in flight; "held": the sandbox holds every request 1.5 s before taking it,
#: so the run dies with requests the sandbox takes after the client is gone.
KILLS = (("start", 0.4), ("sends", 15), ("held", 8), ("sends", 20), ("held", 8))
SENDERS = ("s1", "s2")
#: A stand-in that gives up on an event 0.25 s after its first attempt (the service
#: retries for 5 min): the proof of a send taken while no receiver listens is lost.
GIVES_UP_SOON = {"webhook_retry_base_s": 0.25, "webhook_max_attempts": 2}
#: Its horizon: each launch waits until the stand-in gave up on every event before the next
#: starts, so the horizon only bounds how long the last run listens after its sends in doubt
#: (it was 10 s: 5 s is still 20 times the stand-in's retry).
GIVES_UP_HORIZON_S = "5"


def _launch_and_kill(box, campaign: Path, env: dict[str, str], moment: tuple[str, float]
                     ) -> set[str]:
    """One ``campaign run`` killed (SIGKILL) at ``moment``. Returns, once the sandbox has
    taken what it will and given up on the events nobody received, the numbers it took
    after the kill (requests whose client was gone)."""
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=campaign.parents[1],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        kind, amount = moment
        if kind == "start":
            time.sleep(amount)
        else:
            before = len(box.sends())
            wait_for(lambda: len(box.sends()) >= before + amount)
            if kind == "held":
                box.set_faults(latency_ms=[1500, 1500])
                time.sleep(0.6)  # each sender's next request now waits in the sandbox
        proc.send_signal(signal.SIGKILL)
        killed_at = time.time()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    if moment[0] == "held":  # the held requests are taken, with no client and no receiver
        wait_for(lambda: any(_epoch(s["at"]) > killed_at for s in box.sends()), timeout=10)
    box.set_faults(latency_ms=[20, 200])
    wait_for(lambda: _events_given_up(box, len(box.sends())), timeout=30)
    return {s["to"] for s in box.sends() if _epoch(s["at"]) > killed_at}


@pytest.mark.slow
def test_killed_mid_request_again_and_again_resend_unproven_offers_no_send_the_sandbox_took(
        tmp_path: Path, ledger_url: str) -> None:
    with sandbox_process() as box:
        box.set_faults(**QUIET, **GIVES_UP_SOON, latency_ms=[20, 200])
        for sender in SENDERS:
            box.create_session(sender)
        shop = tmp_path / "shop"
        campaign = write_project(shop, 120, rate="15/s", senders=SENDERS)
        env = run_env(box.base_url, box.api_key, ledger_url, CAMPAIGN_VERIFY_GRACE_S="1",
                      CAMPAIGN_WEBHOOK_RETRY_HORIZON_S=GIVES_UP_HORIZON_S)
        # requests the sandbox took after the process that sent them was killed
        taken_late = set().union(*(_launch_and_kill(box, campaign, env, moment)
                                   for moment in KILLS))
        assert taken_late

        final = in_process(env, "run", str(campaign), cwd=shop)  # listens through the horizon
        assert final.returncode == 0, final.stdout + final.stderr
        assert "run 1: completed" in final.stdout, final.stdout
        wait_for(lambda: _status(env, shop)["unknown_detail"]["waiting"] == 0, timeout=30)
        detail = _status(env, shop)["unknown_detail"]
        rows = ledger_rows(ledger_url)
        taken = numbers_sent(box.sends(), TEXT)
        assert set(taken.values()) == {1} and len(rows) == 120  # nobody twice, nobody lost
        unknown = {to for to, row in rows.items() if row.state == "unknown"}
        # their proof was lost: they stay unknown, and nothing can settle them
        assert taken_late <= unknown and detail["unknowable"] >= len(taken_late)
        status = in_process(env, "status", "1", cwd=shop).stdout
        assert "unknown that nothing can settle" in status, status
        assert "no receiver listened from" in status, status

        resend = in_process(env, "resend", "1", "--unproven", cwd=shop)
        assert resend.returncode == 0, resend.stderr
        queued = {to for to, row in ledger_rows(ledger_url).items() if row.state == "planned"}
        assert not queued & set(taken), sorted(queued & set(taken))
        assert len(queued) == detail["unproven"] and queued <= unknown
    assert "Traceback" not in box.log and "sandbox bug" not in box.log, box.log


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
