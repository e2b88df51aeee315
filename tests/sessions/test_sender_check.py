"""Before planning: every sender exists and is connected, or one error names each problem.

``check_senders`` runs against the sandbox in its own process, with the real client.
"""

from __future__ import annotations

import asyncio

import pytest

from scheduler.core.errors import SchedulerError
from scheduler.service.client import ServiceClient
from scheduler.service.responses import SessionRecord
from scheduler.service.sender_check import (
    SenderProblem,
    SendersNotReady,
    check_senders,
    problem_for,
    raise_for_problems,
    verify_senders,
)
from tests.sessions.support import SandboxProcess


def prepare(sandbox: SandboxProcess, ready: str, waiting: str, dropped: str) -> None:
    """One connected sender, one never scanned, one whose phone dropped it."""

    async def create() -> None:
        async with ServiceClient(sandbox.base_url, sandbox.api_key) as client:
            for name in (ready, waiting, dropped):
                await client.create_session(name)

    asyncio.run(create())
    sandbox.scan(ready)
    sandbox.scan(dropped)
    sandbox.disconnect(dropped)


def check(sandbox: SandboxProcess, senders: list[str]) -> list[SenderProblem]:
    """``check_senders`` with a real client."""

    async def run() -> list[SenderProblem]:
        async with ServiceClient(sandbox.base_url, sandbox.api_key) as client:
            return await check_senders(client, senders)

    return asyncio.run(run())


def test_missing_and_unconnected_senders_are_named_with_their_fix(sandbox_process):
    prepare(sandbox_process, "chk-ok", "chk-waiting", "chk-dropped")
    senders = ["chk-ok", "chk-waiting", "chk-dropped", "chk-ghost", "chk-ok"]
    problems = check(sandbox_process, senders)
    by_sender = {p.sender: p for p in problems}
    assert [p.sender for p in problems] == ["chk-waiting", "chk-dropped", "chk-ghost"]
    assert by_sender["chk-ghost"].problem == "missing"
    assert "campaign sessions create chk-ghost" in by_sender["chk-ghost"].fix
    assert "campaign sessions qr chk-ghost" in by_sender["chk-ghost"].fix
    assert by_sender["chk-waiting"].problem == "connecting"
    assert "campaign sessions qr chk-waiting" in by_sender["chk-waiting"].fix
    assert by_sender["chk-dropped"].problem == "disconnected"
    assert "reconnect" in by_sender["chk-dropped"].fix
    assert "campaign sessions qr chk-dropped" in by_sender["chk-dropped"].fix
    assert check(sandbox_process, ["chk-ok"]) == []

    with pytest.raises(SendersNotReady) as raised:
        raise_for_problems(problems, service="the test service", total=4)
    message = str(raised.value)
    assert message.startswith("3 of 4 senders are not ready on the test service")
    for name in ("chk-waiting", "chk-dropped", "chk-ghost"):
        assert name in message
    assert "\n" not in message
    assert raised.value.problems == problems
    raise_for_problems([])  # nothing to say


def test_verify_senders_is_one_call_from_synchronous_code(sandbox_process):
    prepare(sandbox_process, "vfy-ok", "vfy-waiting", "vfy-dropped")
    base, key = sandbox_process.base_url, sandbox_process.api_key
    verify_senders(base, key, ["vfy-ok", "vfy-ok"])  # ready: no error
    with pytest.raises(SendersNotReady) as raised:
        verify_senders(base, key, ["vfy-ok", "vfy-waiting", "vfy-ghost"])
    assert str(raised.value).startswith(f"2 of 3 senders are not ready on {base}: vfy-waiting")
    assert "campaign sessions create vfy-ghost" in str(raised.value)


def test_a_wrong_key_while_checking_is_one_clear_error_without_the_key(sandbox_process):
    secret = "sk-wrong-for-the-check-42"
    with pytest.raises(SchedulerError) as raised:
        verify_senders(sandbox_process.base_url, secret, ["vfy-ok"])
    message = str(raised.value)
    assert "HTTP 401" in message and "checking the campaign's senders" in message
    assert secret not in message and not isinstance(raised.value, SendersNotReady)


@pytest.mark.parametrize(
    ("status", "problem", "fix_part"),
    [
        ("qr_ready", "qr_ready", "campaign sessions qr s1"),
        ("pair_code_ready", "pair_code_ready", "pairing code"),
        ("logged_out", "logged_out", "reconnect it"),
        ("banned", "banned", "campaign sessions status s1"),
        (None, "unknown", "campaign sessions status s1"),
    ],
)
def test_every_status_but_connected_is_a_problem(status, problem, fix_part):
    found = problem_for("s1", SessionRecord(sessionId="s1", status=status))
    assert found is not None
    assert found.problem == problem
    assert fix_part in found.fix
    assert problem_for("s1", SessionRecord(sessionId="s1", status="connected")) is None
