"""``campaign sandbox``: clear errors for bad options, serves the sandbox, hides the key."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from scheduler.cli import main

CAMPAIGN = [sys.executable, "-c", "from scheduler.cli import main; main()"]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--latency-ms", "5-x"], "--latency-ms"),
        (["--latency-ms", "9-3"], "--latency-ms"),
        (["--fail-rate", "1.5"], "--fail-rate"),
        (["--reply-rate", "-0.1"], "--reply-rate"),
        (["--port", "http"], "--port"),
    ],
)
def test_bad_options_are_clear_errors(monkeypatch, capsys, args, option):
    monkeypatch.setattr(sys, "argv", ["campaign", "sandbox", *args])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code != 0
    captured = capsys.readouterr()
    assert option in captured.err
    assert "Traceback" not in captured.err + captured.out


def test_serves_the_sandbox_without_printing_the_key():
    secret = "s3cret-from-env"
    env = {**os.environ, "CAMPAIGN_SANDBOX_API_KEY": secret, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [*CAMPAIGN, "sandbox", "--port", "0", "--seed", "3"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            first = proc.stdout.readline()
            assert "http://127.0.0.1:" in first, first + proc.stderr.read()
            base_url = first.split()[-1]
            with httpx.Client(base_url=base_url, timeout=5) as client:
                assert client.get("/sandbox/health").json() == {"ok": True}
                ok = client.get("/api/v1/sessions", headers={"Authorization": secret})
                assert ok.status_code == 200
                refused = client.get("/api/v1/sessions", headers={"Authorization": "sandbox-key"})
                assert refused.status_code == 401
        finally:
            proc.terminate()
            out, err = proc.communicate(timeout=20)
    assert secret not in first + out + err
    assert "Traceback" not in err
