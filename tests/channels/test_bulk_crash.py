"""A bulk batch is one unit: a process killed after a bulk's answer and before its commit
leaves every recipient of that bulk in doubt, and what a restart does with them depends on
the delivery mode (no events arrive here: the receiver is not running).

- at-most-once (the default): the whole bulk becomes ``unknown``; nobody is sent twice;
- at-least-once: the whole bulk is sent again; its recipients get the text twice (the risk
  that mode accepts), everybody else once.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime

import pytest

from scheduler.service.account_models import SMS_BULK_PATH
from scheduler.service.client import ServiceClient
from tests.channels.crash_child import BATCH, options
from tests.channels.support import ledger_rows, numbers_sent
from tests.engine import dispatcher_for
from tests.factories import REPO, number, open_test_ledger

N = 50
DIE_AFTER = 3  # bulks answered before the kill; the third one's answer is never committed


def _sms_run(ledger_url: str, mode: str) -> int:
    with open_test_ledger(ledger_url) as ledger:
        run_id = ledger.create_run(
            campaign_name="crash", channel="sms", definition_path="c.toml",
            definition={"name": "crash", "channel": "sms", "senders": ["account"],
                        "pace": {"rate": "1000/s"}, "delivery": mode,
                        "schedule": {"timezone": "UTC"}, "steps": [{}]},
            delivery_mode=mode, timezone="UTC")
        rows = [{"row": i + 1, "to": number(i), "step": 0, "kind": "sms",
                 "path": SMS_BULK_PATH,
                 "payload": {"text": "Loja Exemplo: ofertas ate domingo.", "route": "marketing"},
                 "variables": {}, "region": "BR", "state": "planned", "reason": None}
                for i in range(N)]
        ledger.store_plan(run_id, [rows], start_at=datetime.now(UTC))
    return run_id


@pytest.mark.parametrize("mode", ["at-most-once", "at-least-once"])
async def test_a_kill_between_a_bulk_answer_and_its_commit(mode: str, make_sandbox,
                                                          ledger_url: str) -> None:
    box = make_sandbox()
    run_id = _sms_run(ledger_url, mode)
    child = subprocess.run(
        [sys.executable, "-m", "tests.channels.crash_child", ledger_url, box.base_url,
         box.api_key, str(run_id), str(DIE_AFTER), mode],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr
    bulks = [s["to"] for s in box.sends() if s["path"] == SMS_BULK_PATH]
    assert [len(b) for b in bulks] == [BATCH] * DIE_AFTER
    lost = set(bulks[-1])  # the service took it; the ledger never heard the answer
    at_kill = ledger_rows(ledger_url)
    assert {to for to, row in at_kill.items() if row.state == "dispatching"} == lost

    opts = options(mode)
    with open_test_ledger(ledger_url) as ledger:
        async with ServiceClient(box.base_url, box.api_key) as client:
            result = await dispatcher_for(ledger, client, run_id, opts, channel="sms",
                                          rng=random.Random(1)).run()
    assert result.status == "completed"
    taken = numbers_sent(box.sends(), "/sms/")
    assert set(taken) == {number(i) for i in range(N)}  # everybody was sent the text
    rows = ledger_rows(ledger_url)
    states = Counter(row.state for row in rows.values())
    if mode == "at-most-once":
        assert set(taken.values()) == {1}  # nobody twice
        assert {to for to, row in rows.items() if row.state == "unknown"} == lost
        assert states == {"accepted": N - BATCH, "unknown": BATCH}
    else:
        assert {to for to, n in taken.items() if n == 2} == lost  # the whole bulk, again
        assert set(taken.values()) == {1, 2}
        assert states == {"accepted": N}
