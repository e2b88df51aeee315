"""Outgoing webhooks in one process: events written with the changes they report, delivered
signed to a receiver of the test's own, retried with back-off, failed after the horizon."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from scheduler.core.errors import ConfigError
from scheduler.ledger import access
from scheduler.ledger.outbox_store import OutboxStore
from scheduler.ledger.queries import outbox as oq
from scheduler.ledger.queries import sender_profiles as spq
from scheduler.ledger.runs import Ledger
from scheduler.settings.load import load_settings
from scheduler.settings.webhooks import WebhookDelivery, WebhookSubscription
from scheduler.webhooks_out.backoff import next_attempt, retry_delay
from scheduler.webhooks_out.worker import WebhookWorker
from tests.factories import T0, FakeClock, make_run
from tests.webhooks_out.support import SECRET, Receiver

FAST = WebhookDelivery(horizon_s=600, first_retry_s=10, max_retry_s=60, timeout_s=5)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """The test's own receiver on loopback, stopped at the end."""
    got = Receiver()
    yield got
    got.down()


def _worker(ledger: Ledger, clock: FakeClock, receiver: Receiver,
            events: tuple[str, ...] = ("run.started", "run.paused", "run.resumed",
                                       "run.completed", "run.cancelled", "sender.paused",
                                       "sender.resumed")) -> WebhookWorker:
    sub = WebhookSubscription(url=receiver.url, events=events, secret=SECRET)
    return WebhookWorker(OutboxStore(ledger.engine), [sub], FAST, clock=clock, draw=lambda: 0.0)


async def _deliver(worker: WebhookWorker) -> int:
    async with worker.client() as client:
        return await worker.deliver_due(client)


def _rows(ledger: Ledger) -> list[oq.DeliveryRow]:
    with access.read(ledger.engine) as conn:
        return oq.list_deliveries(conn)


def test_back_off_doubles_with_jitter_up_to_the_horizon() -> None:
    assert retry_delay(1, first_s=5, max_s=3600, draw=lambda: 0.0) == timedelta(seconds=2.5)
    assert retry_delay(1, first_s=5, max_s=3600, draw=lambda: 0.999) < timedelta(seconds=5)
    assert retry_delay(4, first_s=5, max_s=3600, draw=lambda: 0.5) == timedelta(seconds=30)
    assert retry_delay(30, first_s=5, max_s=3600, draw=lambda: 0.0) == timedelta(minutes=30)
    horizon = timedelta(hours=24)
    late = T0 + timedelta(hours=23, minutes=50)
    assert next_attempt(20, T0, late, first_s=5, max_s=3600, horizon=horizon,
                        draw=lambda: 0.5) == T0 + horizon  # the last try on the horizon
    assert next_attempt(21, T0, T0 + horizon, first_s=5, max_s=3600, horizon=horizon,
                        draw=lambda: 0.5) is None
    assert next_attempt(1, T0, T0, first_s=5, max_s=3600, horizon=horizon,
                        draw=lambda: 0.0) == T0 + timedelta(seconds=2.5)


@pytest.mark.parametrize(("entry", "field", "says"), [
    ('secret = "abc"', "webhooks.0.secret", "must start with whsec_"),
    ('secret = "whsec_!!!not base64"', "webhooks.0.secret", "not base64"),
    ('secret = "whsec_c2hvcnQ="', "webhooks.0.secret", "too short"),
    (f'secret = "{SECRET}"\nevents = ["run.done"]', "webhooks.0.events", "unknown event"),
])
def test_a_bad_subscription_is_a_clear_error_naming_file_and_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str, field: str,
        says: str) -> None:
    monkeypatch.delenv("CAMPAIGN_CONFIG", raising=False)
    lines = ['[[webhooks]]', 'url = "http://127.0.0.1:9/hook"', entry]
    if "events" not in entry:
        lines.append('events = ["run.completed"]')
    (tmp_path / "config.toml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(near=tmp_path / "config.toml")
    message = str(caught.value)
    assert str(tmp_path / "config.toml") in message and field in message and says in message
    assert "!!!not base64" not in message and "c2hvcnQ" not in message  # no secret shown


def test_each_run_and_sender_change_writes_its_event_in_its_transaction(
        ledger: Ledger) -> None:
    run_id = make_run(ledger, 3)
    ledger.set_status(run_id, "running")
    ledger.set_status(run_id, "running", keep_control=True)  # a second worker: no event
    ledger.request(run_id, "pause")
    ledger.set_status(run_id, "running")
    ledger.end(run_id, "completed", reason="every delivery is settled")
    ledger.end(run_id, "completed", reason="again")  # ended already: no event
    with access.transaction(ledger.engine) as conn:
        spq.change_state(conn, "s1", "paused", "by hand", "operator", ledger.clock())
        spq.change_state(conn, "s1", "healthy", None, "operator", ledger.clock())
    with access.read(ledger.engine) as conn:
        events = conn.execute(oq.outbox_events.select().order_by(oq.E.id)).all()
    assert [e.type for e in events] == ["run.started", "run.paused", "run.resumed",
                                        "run.completed", "sender.paused", "sender.resumed"]
    assert len({e.msg_id for e in events}) == 6 and all(e.msg_id.startswith("msg_")
                                                         for e in events)
    done = json.loads(events[3].payload)
    assert done["run_id"] == run_id and done["previous_status"] == "running"
    assert done["reason"] == "every delivery is settled"


def test_a_cancelled_run_writes_run_cancelled(ledger: Ledger) -> None:
    run_id = make_run(ledger, 2)
    ledger.release(run_id)
    ledger.request(run_id, "cancel")
    with access.read(ledger.engine) as conn:
        types = list(conn.execute(oq.outbox_events.select()).mappings())
    assert [t["type"] for t in types] == ["run.cancelled"]


def test_events_arrive_signed_and_a_receiver_down_gets_its_backlog(
        ledger: Ledger, clock: FakeClock, receiver: Receiver) -> None:
    worker = _worker(ledger, clock, receiver)
    run_id = make_run(ledger, 2)
    receiver.down()
    ledger.set_status(run_id, "running")
    ledger.request(run_id, "pause")
    assert asyncio.run(_deliver(worker)) == 2
    failing = _rows(ledger)
    assert {r.state for r in failing} == {"failing"} and all(r.attempts == 1 for r in failing)
    assert all("cannot connect" in (r.last_error or "") for r in failing)
    assert asyncio.run(_deliver(worker)) == 0  # not due before its back-off (5 s)
    clock.now += timedelta(seconds=6)
    receiver.up()
    assert asyncio.run(_deliver(worker)) == 2
    bodies = receiver.bodies()  # each signature checked by standardwebhooks
    assert [b["type"] for b in sorted(bodies, key=lambda b: b["data"]["status"])] == [
        "run.paused", "run.started"]
    assert {b["data"]["run_id"] for b in bodies} == {run_id}
    assert {r.state for r in _rows(ledger)} == {"delivered"}
    assert asyncio.run(_deliver(worker)) == 0  # once


def test_a_refusing_receiver_is_retried_until_the_horizon_then_failed(
        ledger: Ledger, clock: FakeClock, receiver: Receiver) -> None:
    worker = _worker(ledger, clock, receiver)
    receiver.status = 500
    ledger.set_status(make_run(ledger, 1), "running")
    tries = 0
    for _ in range(40):
        tries += asyncio.run(_deliver(worker))
        clock.now += timedelta(seconds=61)
    rows = _rows(ledger)
    assert [r.state for r in rows] == ["failed"] and rows[0].last_status == 500
    assert rows[0].attempts == tries and 10 <= tries <= 40
    assert len(set(receiver.ids())) == 1  # every try the same webhook-id


def test_a_claimed_delivery_whose_worker_died_is_sent_again_with_its_id(
        ledger: Ledger, clock: FakeClock, receiver: Receiver) -> None:
    worker = _worker(ledger, clock, receiver)
    ledger.set_status(make_run(ledger, 1), "running")
    worker.give_out()
    taken = worker.claim()  # then the process dies before it posts or records
    assert len(taken) == 1 and worker.claim() == []
    clock.now += timedelta(seconds=2 * FAST.timeout_s + 1)
    assert asyncio.run(_deliver(worker)) == 1
    assert receiver.ids() == [taken[0].msg_id]


def test_events_nobody_subscribed_to_get_no_delivery(ledger: Ledger, clock: FakeClock,
                                                      receiver: Receiver) -> None:
    worker = _worker(ledger, clock, receiver, events=("run.completed",))
    ledger.set_status(make_run(ledger, 1), "running")
    assert asyncio.run(_deliver(worker)) == 0 and _rows(ledger) == []


def test_the_backlog_metric_equals_the_ledgers_waiting_deliveries(
        ledger: Ledger, clock: FakeClock, receiver: Receiver) -> None:
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families
    from prometheus_client.registry import CollectorRegistry

    from scheduler.metrics.outbox import outbox_metrics, read_outbox

    worker = _worker(ledger, clock, receiver)
    receiver.down()
    run_id = make_run(ledger, 1)
    ledger.set_status(run_id, "running")
    ledger.request(run_id, "pause")
    asyncio.run(_deliver(worker))
    clock.now += timedelta(minutes=1)

    class Outbox:
        def collect(self):  # type: ignore[no-untyped-def]
            with access.snapshot(ledger.engine) as conn:
                yield from outbox_metrics(read_outbox(conn, clock()), clock())

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Outbox())  # type: ignore[arg-type]
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(generate_latest(registry).decode())
               for s in f.samples}
    name = ("subscription", f"127.0.0.1:{receiver.port}/hook")
    assert samples[("campaign_webhook_outbox_backlog", (name,))] == 2
    assert samples[("campaign_webhook_outbox_oldest_seconds", (name,))] == 60
    assert samples[("campaign_webhook_outbox_deliveries", (("state", "failing"), name))] == 2
    assert samples[("campaign_webhook_outbox_not_given_out", ())] == 0


def test_a_stuck_run_writes_run_stuck_once_per_spell(ledger: Ledger, clock: FakeClock
                                                      ) -> None:
    from scheduler.settings.load import Settings
    from scheduler.webhooks_out.stuck import StuckWatch

    run_id = make_run(ledger, 5)
    ledger.set_status(run_id, "running")
    ledger.acquire(run_id)  # a live owner that sends nothing
    watch = StuckWatch(OutboxStore(ledger.engine), Settings())
    assert watch.check(clock()) == 0  # just started: its pace explains the silence
    clock.now += timedelta(minutes=10)
    ledger.heartbeat(run_id)
    assert watch.check(clock()) == 1
    clock.now += timedelta(minutes=1)
    ledger.heartbeat(run_id)
    assert watch.check(clock()) == 0  # the same spell: no second event
    with access.read(ledger.engine) as conn:
        stuck = [e for e in conn.execute(oq.outbox_events.select()) if e.type == "run.stuck"]
    data = json.loads(stuck[0].payload)
    assert data["run_id"] == run_id and data["idle_s"] >= 600 and data["last_send_at"] is None


def test_without_subscriptions_events_are_given_to_nobody_then_pruned(
        ledger: Ledger, clock: FakeClock) -> None:
    idle = WebhookWorker(OutboxStore(ledger.engine), [], FAST, clock=clock)
    ledger.set_status(make_run(ledger, 1), "running")
    assert idle.give_out() == 1 and idle.give_out() == 0 and _rows(ledger) == []
    idle.prune()
    with access.read(ledger.engine) as conn:
        assert len(conn.execute(oq.outbox_events.select()).all()) == 1  # young: kept
    clock.now += 8 * FAST.horizon
    idle.prune()
    with access.read(ledger.engine) as conn:
        assert conn.execute(oq.outbox_events.select()).all() == []


def test_an_ab_tests_decision_writes_experiment_decided(ledger: Ledger) -> None:
    from scheduler.ledger.queries import experiments as xq

    run_id = make_run(ledger, 2, name="promo")
    with access.transaction(ledger.engine) as conn:
        xq.store_decision(conn, run_id, winner="b", goes="b", decision="{}",
                          decide_at=ledger.clock(), test_sent_at=None)
    with access.read(ledger.engine) as conn:
        events = conn.execute(oq.outbox_events.select()).all()
    assert [e.type for e in events] == ["experiment.decided"]
    assert json.loads(events[0].payload) == {
        "run_id": run_id, "campaign": "promo", "winner": "b", "goes": "b",
        "decided_at": ledger.clock().isoformat().replace("+00:00", "Z")}


def test_two_workers_claiming_at_once_never_take_the_same_delivery(
        ledger: Ledger, ledger_url: str, clock: FakeClock, receiver: Receiver) -> None:
    import threading

    from scheduler.ledger.db import open_ledger

    for _ in range(30):  # 60 events: started, then paused
        run_id = make_run(ledger, 1)
        ledger.set_status(run_id, "running")
        ledger.request(run_id, "pause")
    first = _worker(ledger, clock, receiver)
    first.give_out()
    other_engine = open_ledger(ledger_url)
    try:
        second = WebhookWorker(OutboxStore(other_engine), list(first.subscriptions.values()), FAST,
                               clock=clock)
        taken: list[list[int]] = [[], []]
        start = threading.Barrier(2)

        def take(worker: WebhookWorker, into: list[int]) -> None:
            start.wait()
            for _ in range(5):
                into.extend(c.id for c in worker.claim())

        threads = [threading.Thread(target=take, args=(w, t))
                   for w, t in zip((first, second), taken, strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other_engine.dispose()
    both = taken[0] + taken[1]
    assert len(both) == len(set(both)) == 60  # every delivery taken once, by one of them


def test_the_secret_is_nowhere_in_the_ledger(ledger: Ledger, clock: FakeClock,
                                             receiver: Receiver) -> None:
    worker = _worker(ledger, clock, receiver)
    ledger.set_status(make_run(ledger, 1), "running")
    asyncio.run(_deliver(worker))
    key = SECRET.removeprefix("whsec_")
    with access.read(ledger.engine) as conn:
        stored = [str(v) for table in (oq.outbox_events, oq.outbox_deliveries)
                  for row in conn.execute(table.select()) for v in row]
    assert stored and not any(key in value for value in stored)


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/hook", "http://127.0.0.1:port/hook",
                                 "ftp://127.0.0.1/hook"])
def test_a_url_that_cannot_be_posted_to_is_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """A port past 65535 passed the check and then stopped the delivery loop (httpx raised
    outside its own errors)."""
    monkeypatch.delenv("CAMPAIGN_CONFIG", raising=False)
    (tmp_path / "config.toml").write_text(
        f'[[webhooks]]\nurl = "{url}"\nsecret = "{SECRET}"\nevents = ["run.completed"]\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(near=tmp_path / "config.toml")
    assert "webhooks.0.url" in str(caught.value)


def test_a_ledger_error_at_a_runs_last_try_is_said_not_raised(
        ledger: Ledger, clock: FakeClock, receiver: Receiver) -> None:
    """``campaign run``'s last try of what is due (after the run ended) meets a ledger that
    cannot be read: a warning, and the run ends as it did (the events wait, durable)."""
    import io

    from rich.console import Console
    from sqlalchemy import text

    from scheduler.webhooks_out.alongside import Alongside

    worker = _worker(ledger, clock, receiver)
    with ledger.engine.begin() as conn:
        conn.execute(text("DROP TABLE outbox_deliveries"))
    said = io.StringIO()

    async def run_then_finish() -> None:
        loop = Alongside(worker, Console(file=said, width=200))
        await loop.finish()
    asyncio.run(run_then_finish())
    assert "outgoing webhooks:" in said.getvalue()


def test_two_workers_writing_one_run_stuck_at_once_write_it_once(ledger: Ledger) -> None:
    """Two workers notice the same stuck spell at once (PostgreSQL): the second's event,
    written while the first's is not yet committed, is taken as written, not a ledger
    error (a warning on the second worker's console and its round of deliveries lost)."""
    import threading
    import time

    from sqlalchemy import text

    if ledger.engine.dialect.name != "postgresql":
        pytest.skip("SQLite takes its write lock first: one writer at a time")
    first = ledger.engine.connect()
    first.begin()
    assert oq.add_event(first, "msg_first", "run.stuck", "{}", T0, dedupe_key="spell")
    outcome: list[object] = []

    def second() -> None:
        try:
            with access.transaction(ledger.engine, "second worker") as conn:
                outcome.append(oq.add_event(conn, "msg_second", "run.stuck", "{}", T0,
                                            dedupe_key="spell"))
        except Exception as exc:  # the outcome is asserted below
            outcome.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    with access.read(ledger.engine) as watch:  # the second waits on the first's key
        for _ in range(2000):
            if watch.execute(text("SELECT count(*) FROM pg_stat_activity WHERE "
                                  "wait_event_type = 'Lock'")).scalar():
                break
            time.sleep(0.005)
    first.commit()
    first.close()
    thread.join(timeout=30)
    assert outcome == [False]
    with access.read(ledger.engine) as conn:
        assert conn.execute(text("SELECT count(*) FROM outbox_events")).scalar() == 1
