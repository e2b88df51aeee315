"""``kill -9`` of a real ``campaign run`` while retries are due, then ``campaign resume``:
the service's record shows every number called exactly as often as the rules allow, never
twice for one attempt, none lost.

The sandbox runs in another process (it outlives the killed run, as a real service would)
with scripted outcomes per number: some never answer (retried after 4 s, up to 3 calls),
some are always busy (after 2 s, up to 4 calls), some answer the second call, some at
once, some reject the call (no rule). The run is killed as soon as the first retry call
went out: more retries are planned and due, others not yet judged.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from scheduler.ledger import access
from scheduler.ledger.queries.tables import deliveries
from tests.app.support import CAMPAIGN, cli, wait_for
from tests.channels.support import SandboxProcess, run_env, sandbox_process
from tests.factories import open_test_ledger
from tests.recycling.support import number, phone, sent_to, voice_calls, write_voice_project

RULES = ('[{ on = "no_answer", delay = "4s", max_attempts = 3 },\n'
         ' { on = "busy", delay = "2s", max_attempts = 4 }]')
#: Per recipient: its calls' scripted outcomes (the last repeats), and the calls it gets.
SCRIPT: dict[int, tuple[list[str], int]] = {
    **{i: (["no_answer"], 3) for i in range(0, 4)},
    **{i: (["busy"], 4) for i in range(4, 6)},
    **{i: (["no_answer", "answered:20"], 2) for i in range(6, 8)},
    **{i: (["answered:20"], 1) for i in range(8, 10)},
    **{i: (["failed"], 1) for i in range(10, 12)},
}


def attempts_in_ledger(ledger_url: str) -> Counter[tuple[str, int, str]]:
    """How many rows the ledger holds per (number, attempt, state)."""
    d = deliveries.c
    with open_test_ledger(ledger_url) as ledger, access.read(ledger.engine) as conn:
        return Counter(tuple(row) for row in conn.execute(select(d.to, d.attempt, d.state)))


def held_back(box: SandboxProcess, ledger_url: str, since: int) -> Callable[[], bool]:
    """A check: rows claimed (``dispatching``) whose numbers the service took after send
    ``since``, the same ones at two looks in a row (a request answered normally leaves
    ``dispatching`` within milliseconds; one held back by the sandbox stays)."""
    seen: list[set[str]] = []

    def check() -> bool:
        taken = set(sent_to(box.sends()[since:], "/voice/"))
        doubt = {to for to, _attempt, state in attempts_in_ledger(ledger_url)
                 if state == "dispatching"}
        seen.append(doubt if doubt and doubt <= taken else set())
        return len(seen) >= 2 and bool(seen[-1]) and seen[-1] == seen[-2]

    return check


@pytest.mark.slow
@pytest.mark.parametrize("in_doubt", [False, True], ids=["clean", "a-retry-in-doubt"])
def test_kill_9_while_retries_are_due_then_resume_calls_each_attempt_once(
        tmp_path: Path, ledger_url: str, in_doubt: bool) -> None:
    """``in_doubt``: the run dies right after the service took a request whose answer it
    never got (the sandbox holds it back): a retry row left ``dispatching``."""
    script = {number(i): outcomes for i, (outcomes, _calls) in SCRIPT.items()}
    expected = {number(i): calls for i, (_outcomes, calls) in SCRIPT.items()}
    with sandbox_process() as box:
        # the events of calls that end after the kill reach the next process
        box.set_faults(voice_outcomes_by_number=script, webhook_retry_base_s=0.5,
                       webhook_max_attempts=9)
        shop = tmp_path / "shop"
        campaign = write_voice_project(shop, [phone(i) for i in SCRIPT], retry=RULES,
                                       window=None, timezone="UTC", rate="20/s",
                                       pace="batch = 4\nmax_calls = 6\n")
        env = run_env(box.base_url, box.api_key, ledger_url, CAMPAIGN_VERIFY_GRACE_S="15")
        proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=shop,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:  # the first retry call went out: others are due, or not judged yet
            wait_for(lambda: max(sent_to(box.sends(), "/voice/").values(), default=0) >= 2)
            if in_doubt:  # the next request is taken, its answer never comes (and its
                # calls' events come late: they would prove its rows at once)
                box.set_faults(timeout_rate=1.0, timeout_after_accept=1.0, timeout_hang_s=60,
                               webhook_delay_ms=[3000, 4000])
                wait_for(held_back(box, ledger_url, len(box.sends())), timeout=30)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == -signal.SIGKILL
        box.set_faults(timeout_rate=0.0, webhook_delay_ms=[0, 0])
        at_kill = sent_to(box.sends(), "/voice/")
        assert sum(at_kill.values()) < sum(expected.values())  # killed with retries to come
        rows_at_kill = attempts_in_ledger(ledger_url)
        # a retry planned (due after the kill) or sent, its outcome not in
        assert any(attempt > 1 and state in ("planned", "dispatching")
                   for _to, attempt, state in rows_at_kill), rows_at_kill
        if in_doubt:  # a request the service took, never answered: its rows in doubt
            doubt = {to for to, _attempt, state in rows_at_kill if state == "dispatching"}
            assert doubt and doubt <= set(at_kill), rows_at_kill

        # the resume may wait for the held request's events: the sandbox holds it 60 s and
        # retries its webhooks 0.5 s doubling (up to 64 s apart), which a loaded machine's
        # slow start can push past two minutes (seen once in a fresh clone's PostgreSQL pass)
        resumed = cli(env, "resume", "1", cwd=shop, timeout=300)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "run 1: completed" in resumed.stdout, resumed.stdout

        sends = box.sends()
        assert sent_to(sends, "/voice/") == expected  # none lost, none over the rules
        calls = voice_calls(sends)
        for i, delay in [*[(i, 4) for i in (0, 1, 2, 3, 6, 7)], (4, 2), (5, 2)]:
            gaps = [b - a for a, b in itertools.pairwise(calls[number(i)])]
            assert min(gaps) >= timedelta(seconds=delay), (i, gaps)  # never before the delay
        ended = box.outcomes("voice")
        assert len(ended) == sum(expected.values())  # each request one call, each ended

    # the ledger: one row per attempt, attempts 1..n of each number, every call recorded
    rows = attempts_in_ledger(ledger_url)
    attempts = Counter((to, attempt) for to, attempt, _state in rows.elements())
    assert set(attempts.values()) == {1}, [k for k, n in attempts.items() if n > 1]
    assert set(attempts) == {(to, attempt) for to, calls in expected.items()
                             for attempt in range(1, calls + 1)}
    assert {state for _to, _attempt, state in rows} <= {"answered", "not_answered"}, rows

