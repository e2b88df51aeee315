"""Automatic rejection of incoming calls, seen from the sandbox's side (``/sandbox/sends``)."""

from __future__ import annotations

from scheduler.ledger.runs import Ledger
from tests.tracking.support import table, wait_until

REJECT = "/api/v1/calls/reject"
TEXT = "/api/v1/messages/send/text"


def _setup(tledger: Ledger, make_sandbox, make_receiver, **settings):
    sandbox = make_sandbox()
    receiver = make_receiver(tledger, base_url=sandbox.base_url, api_key=sandbox.api_key,
                             **settings)
    sandbox.create_session("s1", webhook_url=receiver.url)
    return sandbox, receiver


def test_an_incoming_call_is_rejected_with_its_id_and_caller_exactly(
        tledger: Ledger, make_sandbox, make_receiver) -> None:
    reply = "Este número não recebe chamadas. Responda por mensagem."
    sandbox, _ = _setup(tledger, make_sandbox, make_receiver, reject_calls=True,
                        reject_calls_reply=reply)
    call = sandbox.incoming_call("s1", "5521987654321")
    sends = wait_until(lambda: (s := sandbox.sends()) and len(s) >= 2 and s)
    rejected, texted = sends
    assert rejected["path"] == REJECT
    assert rejected["body"] == {"sessionId": "s1", "callId": call["callId"],
                                "from": "5521987654321@s.whatsapp.net"}
    assert texted["path"] == TEXT
    assert texted["body"] == {"sessionId": "s1", "to": "5521987654321", "text": reply}
    offer = wait_until(lambda: [e for e in table(tledger, "events")
                                if e["event"] == "call.offer"
                                and e["result"] == "rejected; reply sent"])
    assert offer[0]["session_id"] == "s1"
    # The sandbox then reports the rejection; it is stored too.
    wait_until(lambda: any(e["event"] == "call.rejected" for e in table(tledger, "events")))


def test_a_caller_known_only_by_lid_is_rejected_with_that_jid_and_no_text(
        tledger: Ledger, make_sandbox, make_receiver) -> None:
    sandbox, _ = _setup(tledger, make_sandbox, make_receiver, reject_calls=True,
                        reject_calls_reply="Não atendemos chamadas.")
    call = sandbox.incoming_call("s1", "88776655443322@lid")
    [rejected] = wait_until(lambda: sandbox.sends())
    assert rejected["body"]["from"] == "88776655443322@lid"
    assert rejected["body"]["callId"] == call["callId"]
    wait_until(lambda: any(e["result"] == "rejected" for e in table(tledger, "events")))
    assert [s["path"] for s in sandbox.sends()] == [REJECT]


def test_calls_are_left_alone_when_rejection_is_off(
        tledger: Ledger, make_sandbox, make_receiver) -> None:
    sandbox, _ = _setup(tledger, make_sandbox, make_receiver, reject_calls=False)
    sandbox.incoming_call("s1", "5521987654321")
    [offer] = wait_until(lambda: table(tledger, "events"))
    assert offer["event"] == "call.offer" and offer["result"] == "stored (reject_calls is off)"
    assert sandbox.sends() == []


def test_a_failed_rejection_is_noted_on_the_event(
        tledger: Ledger, make_sandbox, make_receiver) -> None:
    sandbox, _ = _setup(tledger, make_sandbox, make_receiver, reject_calls=True)
    sandbox.disconnect("s1")  # the service cannot reject on a session that is not connected
    sandbox.incoming_call("s1", "5521987654321")
    offer = wait_until(lambda: [e for e in table(tledger, "events")
                                if e["result"] and e["result"].startswith("reject failed")])
    assert "Failed to reject call" in offer[0]["result"]
    assert sandbox.sends() == []


async def test_a_client_of_another_loop_is_not_borrowed(
        tledger: Ledger, make_sandbox, make_receiver) -> None:
    """The dispatcher's client stays on the dispatcher's loop; the receiver uses a twin."""
    from scheduler.service.client import ServiceClient

    sandbox = make_sandbox()
    async with ServiceClient(sandbox.base_url, sandbox.api_key) as client:
        await client.create_session("s1")  # the client's pool now lives on this loop
        sandbox.scan("s1")
        receiver = make_receiver(tledger, client=client, reject_calls=True)
        await client.set_webhook("s1", receiver.url)
        call = sandbox.incoming_call("s1", "5521987654321")
        [rejected] = wait_until(lambda: sandbox.sends())
        assert rejected["body"]["callId"] == call["callId"]
        assert (await client.get_session("s1")).sessionId == "s1"  # still usable here
