"""A conversation run for real: ``campaign run`` against the sandbox in another process, whose
recipients answer as scripted per number (``whatsapp_replies_by_number``), killed with
SIGKILL while replies are being decided, then ``campaign resume``.

The campaign asks a question; "1" confirms, "2" (or the keyword "remarcar") reschedules, a
reminder goes to whoever did not answer within 3 s, and a reply waits 8 s at most. The
sandbox's record (what the service took) must show each recipient exactly the branch their
reply chose, each message once: no recipient gets two branches, or one twice, across the
kill. The ledger keeps one decision per recipient and conditional step, why, and a reply
that came after its decision, noted and not undoing it; a reply that no condition took is
flagged to answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries, replies, step_decisions
from tests.app.support import CAMPAIGN, cli, wait_for
from tests.channels.support import run_env, sandbox_process
from tests.conversation.support import (
    KINDS,
    PEOPLE,
    PER_KIND,
    kind_of,
    messages_by_number,
    write_project,
)
from tests.factories import open_test_ledger
from tests.incli import in_process
from tests.recycling.support import number

#: The step of each message (its first word).
STEP = {"PERGUNTA": 0, "CONFIRMAR": 1, "REAGENDAR": 2, "LEMBRETE": 3}


@pytest.mark.slow
def test_each_recipient_gets_the_branch_their_reply_chose_once_across_a_kill(
        tmp_path: Path, ledger_url: str) -> None:
    script = {number(i): KINDS[kind_of(i)][0] for i in range(PEOPLE)}
    with sandbox_process() as box:
        box.set_faults(delivered_rate=0.0, read_rate=0.0, reply_rate=0.0, poll_vote_rate=0.0,
                       recipient_delay_ms=[20, 40], whatsapp_replies_by_number=script,
                       webhook_retry_base_s=0.5, webhook_max_attempts=9)
        box.create_session("s1")
        shop = tmp_path / "shop"
        campaign = write_project(shop)
        env = run_env(box.base_url, box.api_key, ledger_url, CAMPAIGN_VERIFY_GRACE_S="5",
                      CAMPAIGN_WEBHOOK_RETRY_HORIZON_S="20")
        proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=shop,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:  # killed once the first branches went out: others are still to decide
            wait_for(lambda: sum(n["CONFIRMAR"] + n["REAGENDAR"] for n in
                                 messages_by_number(box.sends()).values()) >= 2, timeout=60)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == -signal.SIGKILL
        at_kill = messages_by_number(box.sends())
        assert sum(n["LEMBRETE"] for n in at_kill.values()) < PER_KIND * 3  # more to come

        resumed = cli(env, "resume", "1", cwd=shop, timeout=240)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "run 1: completed" in resumed.stdout, resumed.stdout
        got = messages_by_number(box.sends())
        status = in_process(env, "status", "1", cwd=shop)
        assert status.returncode == 0, status.stderr

    d, r, dl = step_decisions.c, replies.c, deliveries.c
    with open_test_ledger(ledger_url) as ledger, access.read(ledger.engine) as conn:
        states = {(to, step): state for to, step, state in conn.execute(
            select(dl.to, dl.step, dl.state))}
    for i in range(PEOPLE):  # exactly its branch; a send the kill caught before the
        expected = KINDS[kind_of(i)][1]  # service took it stays unknown (at most once)
        sent = Counter(m for m in expected if states[(number(i), STEP[m])] != "unknown")
        assert got[number(i)] - Counter(expected) == Counter(), (i, kind_of(i), got[number(i)])
        assert got[number(i)] >= sent, (i, kind_of(i), got[number(i)], states)

    with open_test_ledger(ledger_url) as ledger, access.read(ledger.engine) as conn:
        decisions = conn.execute(select(d.to, d.step, d.outcome, d.reason, d.late_note)).all()
        answers = {row.number: row.to_answer for row in conn.execute(
            select(r.number, r.to_answer, r.opt_out))}
    per = Counter((to, step) for to, step, *_rest in decisions)
    assert set(per.values()) == {1}  # one decision per recipient and conditional step
    assert len(per) == PEOPLE * 3
    by = {(to, step): (outcome, reason, late) for to, step, outcome, reason, late in decisions}
    quiet = number(next(i for i in range(PEOPLE) if kind_of(i) == 2))
    assert by[(quiet, 3)][:2] == ("go", "no reply within 3 s")
    assert by[(quiet, 1)][:2] == ("skip", "no reply within 8 s")
    late = number(next(i for i in range(PEOPLE) if kind_of(i) == 5))
    outcome, reason, note = by[(late, 2)]  # said, whether it came before the decision or not
    assert outcome == "skip" and ("not counted" in reason or "not undone" in (note or ""))
    confirmed = number(next(i for i in range(PEOPLE) if kind_of(i) == 0))
    assert by[(confirmed, 1)][:2] == ("go", "replied '1': reply_matches = \"^\\s*(1|sim)\"")
    # campaign status shows the branches taken
    n = PER_KIND
    for line in (f"step 1 'confirmar' when reply_matches = \"^\\s*(1|sim)\": went to {2 * n}, "
                 f"not to {5 * n}",
                 f"step 2 'reagendar' when reply_matches = \"^\\s*(2|reagend)\" on "
                 f"'pergunta' or the keyword 'remarcar': went to {2 * n}, not to {5 * n}",
                 f"step 3 'lembrete' when not_replied_within = \"3s\" on 'pergunta': went "
                 f"to {3 * n}, not to {4 * n}"):
        assert line in status.stdout, status.stdout
    # who a person should answer: the reply no condition took (and the late one)
    assert answers[number(3)] is True and answers[confirmed] is False
