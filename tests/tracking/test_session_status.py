"""Session status events through the receiver: the ledger's last status of each session, and
a sender taken out of rotation by its session's ``connection.status`` and back after a scan."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.core.timeutil import utcnow
from scheduler.dispatch.dispatcher import Dispatcher
from scheduler.dispatch.options import DispatchOptions
from scheduler.dispatch.senders import SenderPool
from scheduler.dispatch.sessions_live import follow_sessions
from scheduler.ledger import access
from scheduler.ledger.queries import sessions as sq
from scheduler.ledger.runs import Ledger
from scheduler.ledger.states import RunStatus
from scheduler.service.client import ServiceClient
from scheduler.settings.engine import EngineSettings
from scheduler.wiring import run_store
from tests.engine import dispatcher_for
from tests.factories import make_run
from tests.tracking.support import iso, table, wait_until


def _status(session_id: str, status: str, at: datetime) -> dict[str, Any]:
    return {"event": "connection.status", "sessionId": session_id, "timestamp": iso(at),
            "data": {"status": status, "reason": f"test {status}"}}


def _latest(ledger: Ledger, since: datetime | None = None) -> dict[str, str]:
    with access.read(ledger.engine) as conn:
        return {k: v.status for k, v in sq.latest_statuses(conn, since=since).items()}


def test_the_last_status_is_the_latest_event_whatever_the_order_of_arrival(
        tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    t = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
    # s1 disconnected, then connected again, but the webhook delivered them the other way
    for event in (_status("s1", "connected", t + timedelta(seconds=5)),
                  _status("s1", "disconnected", t),
                  _status("s2", "connected", t),
                  _status("s2", "logged_out", t + timedelta(seconds=1))):
        assert receiver.post(event).status_code == 200
    wait_until(lambda: len(table(tledger, "events")) == 4)
    assert _latest(tledger) == {"s1": "connected", "s2": "logged_out"}
    with access.read(tledger.engine) as conn:
        assert sq.latest_statuses(conn, ["s2"])["s2"].reason == "test logged_out"
        assert sq.latest_statuses(conn, []) == {}
    assert _latest(tledger, since=utcnow() + timedelta(hours=1)) == {}


def test_a_pool_follows_its_sessions_status(tledger: Ledger, make_receiver) -> None:
    receiver = make_receiver(tledger)
    now = utcnow()
    pool = SenderPool(["s1", "s2"], rate=1.0, rng=random.Random(1), tz=UTC, now=now,
                      cooloff_s=60)
    notes: list[str] = []

    def note(_at: datetime, what: str, **_facts: object) -> None:
        notes.append(what)

    receiver.post(_status("s2", "logged_out", now))
    wait_until(lambda: table(tledger, "events"))
    store = run_store(tledger, 0).senders  # the statuses are the senders', in any run
    follow_sessions(store, pool, now, note)
    s1, s2 = pool.senders["s1"], pool.senders["s2"]
    assert s1.down_reason is None and s2.down_reason == "session status logged_out " \
        "(test logged_out)"
    assert pool.pick(now)[0] is s1 and pool.pick(now)[0] is s1  # s2 is out of rotation
    later = now + timedelta(minutes=5)  # past the cool-off: still out while logged out
    follow_sessions(store, pool, later, note)
    assert s2.blocked_until is not None and s2.blocked_until > later
    assert notes == ["sender s2 out of rotation: its session is logged_out "
                     "(connection.status event)"]  # said once

    receiver.post(_status("s2", "connected", now + timedelta(seconds=1)))
    wait_until(lambda: len(table(tledger, "events")) == 2)
    follow_sessions(store, pool, later, note)
    assert s2.down_reason is None and s2.blocked_until is None
    assert notes[-1] == "sender s2 back in rotation: its session is connected again"
    # a sender paused for another reason is not brought back by a connected session
    pool.on_down(s1, later, "kept failing (HTTP 500)")
    receiver.post(_status("s1", "connected", now))
    wait_until(lambda: len(table(tledger, "events")) == 3)
    follow_sessions(store, pool, later, note)
    assert s1.down_reason == "kept failing (HTTP 500)"


async def test_a_sender_whose_session_disconnects_mid_run_is_out_until_scanned_again(
        tledger: Ledger, make_sandbox, make_receiver) -> None:
    box = make_sandbox(session_status_events=True)
    receiver = make_receiver(tledger, base_url=box.base_url, api_key=box.api_key)
    for name in ("s1", "s2"):
        box.create_session(name, webhook_url=receiver.url)
    run_id = make_run(tledger, 50, senders=("s1", "s2"), start=utcnow() - timedelta(seconds=1))
    marks: dict[str, int] = {}
    holder: list[Dispatcher] = []

    def progress(counts: dict[str, int]) -> None:
        done = counts.get("accepted", 0) + counts.get("sent", 0)  # messages.sent applied
        if done >= 10 and "cut" not in marks:
            marks["cut"] = len(box.sends())
            box.disconnect("s2")
        out = any("sender s2 out of rotation" in e.what for e in holder[0].timeline)
        if done >= 30 and out and "scan" not in marks:
            marks["scan"] = len(box.sends())
            box.scan("s2")

    # a long cool-off: a sender paused by a 409 would not come back during this run
    options = DispatchOptions(senders=("s1", "s2"), rate=10.0, timezone="America/Sao_Paulo",
                              engine=EngineSettings(sender_cooloff_s=3600))
    async with ServiceClient(box.base_url, box.api_key) as client:
        dispatcher = dispatcher_for(tledger, client, run_id, options, rng=random.Random(3),
                                    on_progress=progress)
        holder.append(dispatcher)
        result = await dispatcher.run()
    assert result.status == RunStatus.COMPLETED
    assert set(result.counts) <= {"accepted", "sent"} and sum(result.counts.values()) == 50
    sends = box.sends()
    assert len(sends) == len({s["to"] for s in sends}) == 50  # each recipient once
    assert {"cut", "scan"} <= set(marks)
    while_out = sends[marks["cut"]:marks["scan"]]
    assert while_out and {s["sessionId"] for s in while_out} == {"s1"}
    after_scan = Counter(s["sessionId"] for s in sends[marks["scan"]:])
    assert after_scan["s2"] >= 3  # back in rotation after the scan
    whats = [e.what for e in dispatcher.timeline]
    assert any("sender s2 out of rotation: its session is disconnected" in w for w in whats)
    assert "sender s2 back in rotation: its session is connected again" in whats
    with access.read(tledger.engine) as conn:
        assert sq.latest_statuses(conn)["s2"].status == "connected"
