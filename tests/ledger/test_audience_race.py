"""Two workers claim rows to one number at the same instant, each for its own campaign with
``max_per_day = 1``: the number is sent one message a day, never two (both databases).

Each worker is a thread with an engine (and connections) of its own, calling the claim
path the dispatcher calls (:meth:`QueueStore.write` with the campaign's audience rules): on
PostgreSQL as a ``serve`` worker holding its sender's lease, on SQLite as a ``campaign
run`` (SQLite refuses a second worker). Every round is a new day and two new campaigns.
Half the rounds force the race: the first worker is held right after it has counted the
number's messages, inside its claim transaction, until the second has begun its own claim;
the other half start both at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, event, select

from scheduler.ledger import access
from scheduler.ledger.changes import AudienceCheck
from scheduler.ledger.db import make_engine
from scheduler.ledger.queries import leases as lq
from scheduler.ledger.queries.tables import deliveries
from scheduler.ledger.queue_store import QueueStore
from scheduler.ledger.runs import Ledger
from tests.factories import T0, make_run, number

ROUNDS = 40
#: The one number both campaigns send to.
TO = number(0)
#: How long a worker may wait for the other before the test gives up (never reached).
STUCK_S = 30.0


@dataclass
class _Worker:
    """One claiming process: its own engine; ``worker``: its id on PostgreSQL."""

    name: str
    sender: str
    engine: Engine
    worker: str | None
    #: armed: hold the thread after its count statement until ``go`` is set
    hold_after_count: bool = False
    counted: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)
    #: armed: set when the thread sends its first statement of the claim
    began: threading.Event = field(default_factory=threading.Event)
    watching: bool = False
    moved: set[int] = field(default_factory=set)
    error: BaseException | None = None

    def listen(self) -> None:
        event.listen(self.engine, "before_cursor_execute", self._before)
        event.listen(self.engine, "after_cursor_execute", self._after)

    def _before(self, *_args: Any) -> None:
        if self.watching:
            self.watching = False
            self.began.set()

    def _after(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        # the audience count: one GROUP BY over the batch's numbers
        if self.hold_after_count and "GROUP BY" in statement and "deliveries" in statement:
            self.hold_after_count = False
            self.counted.set()
            if not self.go.wait(STUCK_S):
                raise AssertionError(f"{self.name} was never let go")

    def claim(self, run_id: int, row_id: int, now: datetime) -> None:
        try:
            day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
            rules = AudienceCheck(1, None, None, day_start, {row_id: TO})
            store = QueueStore(Ledger(self.engine), run_id)
            self.moved = store.write([], [(row_id, self.sender)], now, worker=self.worker,
                                     audience=rules)
        except BaseException as exc:  # reported by the test
            self.error = exc


@contextmanager
def _workers(url: str, postgres: bool) -> Iterator[tuple[_Worker, _Worker]]:
    pair = tuple(_Worker(f"worker {k}", f"s{k}", make_engine(url),
                         f"w{k}" if postgres else None) for k in (1, 2))
    try:
        for w in pair:
            w.listen()
        yield pair[0], pair[1]
    finally:
        for w in pair:
            w.engine.dispose()


def _run(*targets: tuple[_Worker, int, int, datetime]) -> list[threading.Thread]:
    threads = [threading.Thread(target=w.claim, args=(run, row, now), name=w.name)
               for w, run, row, now in targets]
    for t in threads:
        t.start()
    return threads


def _join(threads: list[threading.Thread], *workers: _Worker) -> None:
    for t in threads:
        t.join(STUCK_S)
        assert not t.is_alive(), f"{t.name} is stuck"
    for w in workers:
        if w.error is not None:
            raise w.error


def _row_of(ledger: Ledger, run_id: int) -> int:
    with access.read(ledger.engine, "test: the run's row") as conn:
        return int(conn.execute(select(deliveries.c.id).where(
            deliveries.c.run_id == run_id)).scalar_one())


def _states(ledger: Ledger, ids: list[int]) -> dict[int, tuple[str, str | None]]:
    with access.read(ledger.engine, "test: the rows' states") as conn:
        return {int(i): (str(s), r) for i, s, r in conn.execute(
            select(deliveries.c.id, deliveries.c.state, deliveries.c.reason)
            .where(deliveries.c.id.in_(ids)))}


@pytest.mark.parametrize("forced", [True, False], ids=["held-after-count", "at-once"])
def test_two_workers_never_send_one_number_two_messages_a_day_at_max_per_day_1(
        ledger: Ledger, ledger_url: str, db_backend: str, forced: bool) -> None:
    postgres = db_backend == "postgresql"
    pairs = [(make_run(ledger, 1, senders=("s1",), name=f"a{r}"),
              make_run(ledger, 1, senders=("s2",), name=f"b{r}")) for r in range(ROUNDS)]
    rows = [(_row_of(ledger, a), _row_of(ledger, b)) for a, b in pairs]
    if postgres:  # each worker holds its sender for the whole test
        with access.transaction(ledger.engine, "test: leases") as conn:
            for k in (1, 2):
                lq.acquire(conn, f"s{k}", f"w{k}", T0, T0 + timedelta(days=ROUNDS + 1))
    sent_per_day: list[int] = []
    with _workers(ledger_url, postgres) as (one, two):
        for r, ((run_a, run_b), (row_a, row_b)) in enumerate(zip(pairs, rows, strict=True)):
            now = T0 + timedelta(days=r, seconds=r)
            first, second = (one, two) if r % 2 == 0 else (two, one)
            run_1, row_1, run_2, row_2 = (run_a, row_a, run_b, row_b) if first is one \
                else (run_b, row_b, run_a, row_a)
            if forced:
                first.hold_after_count = True
                threads = _run((first, run_1, row_1, now))
                assert first.counted.wait(STUCK_S), f"{first.name} never counted"
                second.watching = True
                threads += _run((second, run_2, row_2, now))
                # the second has begun its claim (or is done) while the first is held
                while not (second.began.wait(0.01) or not threads[1].is_alive()):
                    pass
                first.go.set()
            else:
                threads = _run((one, run_a, row_a, now), (two, run_b, row_b, now))
            _join(threads, one, two)
            for w in (one, two):
                w.counted.clear()
                w.go.clear()
                w.began.clear()
                w.watching = False
            states = _states(ledger, [row_a, row_b])
            sent = [i for i in (row_a, row_b) if states[i][0] == "dispatching"]
            sent_per_day.append(len(sent))
            assert len(sent) == 1, (r, states)
            (held,) = {row_a, row_b} - set(sent)
            assert states[held] == ("skipped", "frequency_cap: 1 message to this number "
                                               "today (max_per_day = 1)"), (r, states)
            assert one.moved | two.moved == set(sent)
    assert sent_per_day == [1] * ROUNDS
