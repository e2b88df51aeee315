"""``person forget`` while a run is sending to the sandbox: the person gets nothing more (the
sandbox's record), every other recipient gets their message, and the run ends normally."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

from tests.app.support import CAMPAIGN, clean_env, text_sends, wait_for
from tests.incli import in_process
from tests.privacy.support import DIGITS, NAME, PHONE, scan, write_campaign


def test_forget_during_a_live_run_stops_only_that_person(make_sandbox, tmp_path: Path,
                                                         ledger_url: str) -> None:
    service = make_sandbox()
    service.create_session("s1")
    root = tmp_path / "shop"
    others = [(f"Pessoa {i}", f"(21) 99876-{5400 + i}") for i in range(11)]
    campaign = write_campaign(root, "live", rows=[*others, (NAME, PHONE)], rate="3/s")
    env = clean_env(CAMPAIGN_BASE_URL=service.base_url, CAMPAIGN_API_KEY=service.api_key,
                    CAMPAIGN_VERIFY_GRACE_S="1", CAMPAIGN_DATABASE_URL=ledger_url)
    proc = subprocess.Popen([*CAMPAIGN, "run", str(campaign)], env=env, cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(text_sends(service.sends())) >= 2, what="the run's first sends")
        assert proc.poll() is None, "the run ended before the person could be erased"
        forgot = in_process(env, "person", "forget", PHONE, "--reason", "pedido", "--yes",
                            cwd=root)
        assert forgot.returncode == 0, forgot.stderr
        assert "deliveries skipped: 1" in forgot.stdout
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    sends = text_sends(service.sends())
    assert all(DIGITS not in json.dumps(s) for s in sends)
    taken = Counter(s["to"] for s in sends)
    assert len(taken) == 11 and set(taken.values()) == {1}
    assert scan(ledger_url) == []
